//! Which dirs CacheWatch looks at: the roots.
//!
//! A [`Root`] is a directory of one [`RootKind`]. It keeps the spelling the user gave and its
//! canonical form, because FSEvents reports canonical paths (`/private/var/...` for a root given as
//! `/var/...`) and event paths must match either.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

mod containers;
mod nested;

pub use containers::{
    default_container_temps, default_containers_dir, discover_container_temps, resolve, Resolved,
};
pub use nested::{counted_in_totals, mark_nested};

/// The kind of a root; the same words as the catalogue's `root` field and the CLI's `--root KIND=PATH`.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RootKind {
    /// The per-user temp dir: `confstr(_CS_DARWIN_USER_TEMP_DIR)` on macOS, `$TMPDIR` or `/tmp` elsewhere.
    Temp,
    /// The per-user Darwin cache dir: `confstr(_CS_DARWIN_USER_CACHE_DIR)` on macOS,
    /// `$XDG_CACHE_HOME` or `~/.cache` elsewhere.
    Cache,
    /// `~/Library/Caches` (macOS only by default).
    LibraryCaches,
    /// `~/Library/Logs/DiagnosticReports` (macOS only by default).
    DiagnosticReports,
    /// A sandboxed app's temp dir, `~/Library/Containers/<bundle-id>/Data/tmp` (its
    /// `NSTemporaryDirectory()`, which the system's 3-day sweep skips). One root per container,
    /// found by [`discover_container_temps`]; matched by the `temp` rules and the rules written for
    /// `container-temp` (sandboxed apps' own), and every item's
    /// `captures.bundle` is the container's bundle id ([`Root::container_bundle`]). Off by default
    /// (reading other apps' containers needs the user's consent on macOS).
    ContainerTemp,
    /// The per-user code-sign clone dir `X`, the sibling of `T` and `C`
    /// (`/private/var/folders/<xx>/<hash>/X/`), where Chromium-based apps clone their whole bundle at
    /// each launch. A default root on macOS (found beside `confstr(_CS_DARWIN_USER_TEMP_DIR)`); elsewhere
    /// only when configured.
    CodeSignClones,
    /// A dir the user chose (e.g. `--root other=/private/tmp`), watched with the same catalogue;
    /// never a default root.
    Other,
}

impl RootKind {
    /// All kinds, in display order.
    /// Its position is the kind's [`RootKind::index`].
    pub const ALL: [RootKind; 7] = [
        RootKind::Temp,
        RootKind::Cache,
        RootKind::LibraryCaches,
        RootKind::DiagnosticReports,
        RootKind::ContainerTemp,
        RootKind::CodeSignClones,
        RootKind::Other,
    ];

    /// The kebab-case word of this kind (`temp`, `cache`, `library-caches`, `diagnostic-reports`,
    /// `container-temp`, `code-sign-clones`, `other`).
    pub fn as_str(self) -> &'static str {
        match self {
            RootKind::Temp => "temp",
            RootKind::Cache => "cache",
            RootKind::LibraryCaches => "library-caches",
            RootKind::DiagnosticReports => "diagnostic-reports",
            RootKind::ContainerTemp => "container-temp",
            RootKind::CodeSignClones => "code-sign-clones",
            RootKind::Other => "other",
        }
    }

    /// The kind's position in [`RootKind::ALL`] (0-based), for per-kind tables.
    pub fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for RootKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for RootKind {
    type Err = RootError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        RootKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| RootError::UnknownKind(s.to_owned()))
    }
}

/// Errors about roots.
#[derive(Debug, thiserror::Error)]
pub enum RootError {
    /// The kind word is not one of [`RootKind::ALL`].
    #[error(
        "unknown root kind {0:?}: expected one of temp, cache, library-caches, diagnostic-reports, container-temp, code-sign-clones, other"
    )]
    UnknownKind(String),
    /// A `--root` argument without `=`.
    #[error("malformed root {0:?}: expected KIND=PATH, e.g. temp=/tmp")]
    Malformed(String),
    /// The path does not exist or cannot be resolved.
    #[error("root {kind} {path:?} cannot be used: {source}")]
    Missing {
        /// Kind of the root.
        kind: RootKind,
        /// Path as given.
        path: PathBuf,
        /// The I/O error from resolving it.
        source: std::io::Error,
    },
    /// The path exists but is not a directory.
    #[error("root {kind} {path:?} is not a directory")]
    NotADirectory {
        /// Kind of the root.
        kind: RootKind,
        /// Path as given.
        path: PathBuf,
    },
    /// A dir that exists but cannot be listed (on macOS: another app's container without the
    /// user's consent or Full Disk Access).
    #[error("root {kind} {path:?} cannot be listed: {source}; grant access (Full Disk Access on macOS) or leave it out")]
    Unreadable {
        /// Kind of the root.
        kind: RootKind,
        /// Path as given.
        path: PathBuf,
        /// The I/O error from listing it.
        source: std::io::Error,
    },
    /// A container's `Data/tmp` resolves outside its container (a symlink): never a root.
    #[error("container temp dir {path:?} resolves to {resolved:?}, outside its container {container:?}; skipped")]
    OutsideContainer {
        /// `<container>/Data/tmp` as found.
        path: PathBuf,
        /// Where it resolves to.
        resolved: PathBuf,
        /// The container dir (canonical).
        container: PathBuf,
    },
}

/// A watched directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Root {
    /// What kind of root this is; selects the catalogue rules that apply.
    pub kind: RootKind,
    /// The path as the user (or the platform) gave it.
    pub path: PathBuf,
    /// The canonical path (symlinks resolved; `/private/var/...` on macOS).
    pub canonical: PathBuf,
    /// The other roots strictly inside this one, as paths relative to `canonical` (set on a list
    /// of roots by [`mark_nested`]; empty for a root made alone). An item belongs to the innermost
    /// root holding it: this root's scan attributes nothing at or below these paths (their bytes
    /// stay in its totals, in the item that holds them), so no item is counted in two roots.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nested: Vec<PathBuf>,
}

impl Root {
    /// Makes a root of `kind` at `path`, resolving its canonical form.
    ///
    /// # Errors
    /// [`RootError::Missing`] when `path` does not exist or cannot be resolved,
    /// [`RootError::NotADirectory`] when it is not a directory.
    pub fn new(kind: RootKind, path: impl Into<PathBuf>) -> Result<Root, RootError> {
        let path = path.into();
        let canonical = std::fs::canonicalize(&path).map_err(|source| RootError::Missing {
            kind,
            path: path.clone(),
            source,
        })?;
        if !canonical.is_dir() {
            return Err(RootError::NotADirectory { kind, path });
        }
        Ok(Root {
            kind,
            path,
            canonical,
            nested: Vec::new(),
        })
    }

    /// The container's bundle id for a `container-temp` root: the name of the dir two levels above
    /// it (`<containers>/<bundle-id>/Data/tmp`), read from the path as given; `None` for other kinds.
    pub fn container_bundle(&self) -> Option<String> {
        if self.kind != RootKind::ContainerTemp {
            return None;
        }
        let name = self.path.parent()?.parent()?.file_name()?;
        Some(name.to_string_lossy().into_owned())
    }

    /// Parses a `KIND=PATH` argument (the CLI's `--root`) and makes the root. For
    /// `container-temp=<containers dir>`, which names many roots, use [`resolve`].
    ///
    /// # Errors
    /// [`RootError::Malformed`] without `=`, [`RootError::UnknownKind`] for a bad kind, and the
    /// errors of [`Root::new`].
    pub fn parse_arg(arg: &str) -> Result<Root, RootError> {
        let (kind, path) = arg
            .split_once('=')
            .ok_or_else(|| RootError::Malformed(arg.to_owned()))?;
        if path.is_empty() {
            return Err(RootError::Malformed(arg.to_owned()));
        }
        Root::new(kind.parse()?, path)
    }

    /// The path of `p` relative to this root, trying the given spelling and the canonical one.
    /// `None` when `p` is outside the root. The root itself gives `Some("")`.
    pub fn relative<'a>(&self, p: &'a Path) -> Option<&'a Path> {
        p.strip_prefix(&self.canonical)
            .ok()
            .or_else(|| p.strip_prefix(&self.path).ok())
    }

    /// True when `rel` (a path relative to this root) is another root nested in this one, or lies
    /// inside one ([`Root::nested`]): this root attributes nothing there.
    pub fn in_nested(&self, rel: &Path) -> bool {
        self.nested.iter().any(|n| rel.starts_with(n))
    }

    /// True when `p` (absolute, either spelling) is exactly another root nested in this one.
    pub fn is_nested_root(&self, p: &Path) -> bool {
        !self.nested.is_empty()
            && self
                .relative(p)
                .is_some_and(|rel| self.nested.iter().any(|n| n == rel))
    }

    /// True when `p` lies inside this root (either spelling), the root itself excluded.
    pub fn contains(&self, p: &Path) -> bool {
        self.relative(p)
            .is_some_and(|r| r.components().next().is_some())
    }
}

/// The platform's default root dirs ([`crate::platform::default_dirs`]), existing or not, with
/// their kinds, in [`RootKind::ALL`] order.
pub fn default_root_paths() -> Vec<(RootKind, PathBuf)> {
    let d = crate::platform::default_dirs();
    let paths = [
        (RootKind::Temp, Some(d.temp)),
        (RootKind::Cache, d.cache),
        (RootKind::LibraryCaches, d.library_caches),
        (RootKind::DiagnosticReports, d.diagnostic_reports),
        (RootKind::CodeSignClones, d.code_sign_clones),
    ];
    paths
        .into_iter()
        .filter_map(|(kind, path)| Some((kind, path?)))
        .collect()
}

/// The platform's default roots that exist on this machine, in [`RootKind::ALL`] order.
///
/// macOS: the Darwin user temp and cache dirs (`confstr`), `~/Library/Caches`,
/// `~/Library/Logs/DiagnosticReports` and the code-sign clone dir `X` beside `T`. Elsewhere: `$TMPDIR` or `/tmp`, and `$XDG_CACHE_HOME` or
/// `~/.cache`. A default dir that does not exist is left out (returned in the second list with why).
pub fn default_roots() -> (Vec<Root>, Vec<RootError>) {
    let mut roots = Vec::new();
    let mut missing = Vec::new();
    for (kind, path) in default_root_paths() {
        match Root::new(kind, path) {
            Ok(r) => roots.push(r),
            Err(e) => missing.push(e),
        }
    }
    (roots, missing)
}

/// `roots` with every root whose canonical path an earlier one already has left out (the same
/// dir given twice, or once more through a symlink), in the given order: `(kept, dropped)`. The
/// first spelling and kind given win; call it on user-given roots before scanning, so no item is
/// listed twice.
pub fn dedupe(roots: Vec<Root>) -> (Vec<Root>, Vec<Root>) {
    let mut seen = std::collections::HashSet::new();
    roots
        .into_iter()
        .partition(|r| seen.insert(r.canonical.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_words_round_trip() {
        for (i, k) in RootKind::ALL.into_iter().enumerate() {
            assert_eq!(k.index(), i);
            assert_eq!(k.as_str().parse::<RootKind>().unwrap(), k);
            assert_eq!(
                serde_json::to_string(&k).unwrap(),
                format!("\"{}\"", k.as_str())
            );
        }
        assert!("tmp".parse::<RootKind>().is_err());
    }

    #[test]
    fn root_through_symlink_keeps_both_spellings() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let root = Root::new(RootKind::Temp, &link).unwrap();
        assert_eq!(root.path, link);
        assert_eq!(root.canonical, std::fs::canonicalize(&real).unwrap());
        let inside = root.canonical.join("a/b");
        assert_eq!(root.relative(&inside).unwrap(), Path::new("a/b"));
        assert_eq!(root.relative(&link.join("a")).unwrap(), Path::new("a"));
        assert!(!root.contains(&root.canonical));
        assert!(!root.contains(dir.path()));
    }

    #[test]
    fn same_dir_given_twice_or_through_a_symlink_is_kept_once() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        let other = dir.path().join("other");
        std::fs::create_dir(&real).unwrap();
        std::fs::create_dir(&other).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let given = vec![
            Root::new(RootKind::Temp, &real).unwrap(),
            Root::new(RootKind::Cache, &other).unwrap(),
            Root::new(RootKind::Temp, &real).unwrap(),
            Root::new(RootKind::Cache, &link).unwrap(),
        ];
        let (kept, dropped) = dedupe(given.clone());
        assert_eq!(kept, vec![given[0].clone(), given[1].clone()]);
        assert_eq!(dropped, vec![given[2].clone(), given[3].clone()]);
    }

    #[test]
    fn bad_root_args_are_refused() {
        assert!(matches!(
            Root::parse_arg("temp"),
            Err(RootError::Malformed(_))
        ));
        assert!(matches!(
            Root::parse_arg("nope=/tmp"),
            Err(RootError::UnknownKind(_))
        ));
        assert!(matches!(
            Root::parse_arg("temp=/does/not/exist/cachewatch"),
            Err(RootError::Missing { .. })
        ));
        // The opt-in kinds parse like the others.
        let dir = tempfile::tempdir().unwrap();
        let arg = format!("other={}", dir.path().display());
        assert_eq!(Root::parse_arg(&arg).unwrap().kind, RootKind::Other);
        let arg = format!("code-sign-clones={}", dir.path().display());
        assert_eq!(
            Root::parse_arg(&arg).unwrap().kind,
            RootKind::CodeSignClones
        );
        let f = tempfile::NamedTempFile::new().unwrap();
        let arg = format!("cache={}", f.path().display());
        assert!(matches!(
            Root::parse_arg(&arg),
            Err(RootError::NotADirectory { .. })
        ));
    }
}
