//! `container-temp` roots: the temp dir of every sandboxed app, `<containers>/<bundle-id>/Data/tmp`.
//!
//! In a sandboxed app `NSTemporaryDirectory()` is its container's `Data/tmp`, which the system's
//! 3-day sweep of the per-user temp dir does not look at, so what a sandboxed host of KataGo, ONNX
//! Runtime or Core ML leaks there stays forever. The containers dir is `~/Library/Containers`
//! ([`default_containers_dir`]); tests and the CLI pass their own.
//!
//! macOS asks the user before an app reads other apps' containers (or it needs Full Disk Access),
//! so a container that cannot be read is reported in [`Resolved::skipped`], never fatal.

use std::path::{Path, PathBuf};

use super::{Root, RootError, RootKind};

/// The roots that one root spec (`KIND=PATH`, or a config `roots` entry) names, and the dirs left
/// out with why.
#[derive(Debug, Default)]
pub struct Resolved {
    /// The roots found, sorted by path.
    pub roots: Vec<Root>,
    /// Containers whose temp dir could not be used (unreadable, not a dir, resolving outside the
    /// container), each naming the path. A container without `Data/tmp` is not listed.
    pub skipped: Vec<RootError>,
}

/// The default containers dir: `~/Library/Containers` under the user's home dir; `None` when no
/// home dir is known. Not checked for existence (it does not exist off macOS).
pub fn default_containers_dir() -> Option<PathBuf> {
    directories::BaseDirs::new().map(|d| d.home_dir().join("Library/Containers"))
}

/// Every container's temp dir under [`default_containers_dir`]: empty when there is no home dir or
/// no containers dir (off macOS); a containers dir that cannot be used is one entry of `skipped`.
pub fn default_container_temps() -> Resolved {
    let Some(dir) = default_containers_dir() else {
        return Resolved::default();
    };
    match discover_container_temps(&dir) {
        Ok(found) => found,
        Err(RootError::Missing { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            Resolved::default()
        }
        Err(e) => Resolved {
            roots: Vec::new(),
            skipped: vec![e],
        },
    }
}

/// Finds every container's temp dir under `containers` (e.g. `~/Library/Containers`): one
/// [`RootKind::ContainerTemp`] root per `<containers>/<bundle-id>/Data/tmp` that exists, is a dir,
/// resolves inside its container and can be listed. Call it again to pick up containers created
/// since. Symlinked container entries are not followed.
///
/// # Errors
/// The containers dir itself cannot be used: [`RootError::Missing`] (does not exist),
/// [`RootError::NotADirectory`], [`RootError::Unreadable`] (cannot be listed). Problems with one
/// container go to [`Resolved::skipped`].
pub fn discover_container_temps(containers: &Path) -> Result<Resolved, RootError> {
    let kind = RootKind::ContainerTemp;
    let canonical = std::fs::canonicalize(containers).map_err(|source| RootError::Missing {
        kind,
        path: containers.to_path_buf(),
        source,
    })?;
    if !canonical.is_dir() {
        return Err(RootError::NotADirectory {
            kind,
            path: containers.to_path_buf(),
        });
    }
    let unreadable = |path: &Path, source| RootError::Unreadable {
        kind,
        path: path.to_path_buf(),
        source,
    };
    let listing = std::fs::read_dir(containers).map_err(|e| unreadable(containers, e))?;
    let mut out = Resolved::default();
    for entry in listing {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                out.skipped.push(unreadable(containers, e));
                continue;
            }
        };
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let container = containers.join(entry.file_name());
        match container_temp(&container, &canonical.join(entry.file_name())) {
            Ok(Some(root)) => out.roots.push(root),
            Ok(None) => {}
            Err(e) => out.skipped.push(e),
        }
    }
    out.roots.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// The temp dir root of one container (`container` as found, `canonical` its resolved form);
/// `Ok(None)` when it has no `Data/tmp`.
fn container_temp(container: &Path, canonical: &Path) -> Result<Option<Root>, RootError> {
    let kind = RootKind::ContainerTemp;
    let tmp = container.join("Data/tmp");
    let root = match Root::new(kind, &tmp) {
        Ok(r) => r,
        Err(RootError::Missing { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Ok(None)
        }
        Err(e) => return Err(e),
    };
    if !root.canonical.starts_with(canonical) {
        return Err(RootError::OutsideContainer {
            path: tmp,
            resolved: root.canonical,
            container: canonical.to_path_buf(),
        });
    }
    std::fs::read_dir(&root.canonical).map_err(|source| RootError::Unreadable {
        kind,
        path: tmp,
        source,
    })?;
    Ok(Some(root))
}

/// Resolves one root spec: for [`RootKind::ContainerTemp`], `path` is the containers dir and the
/// roots are its containers' temp dirs ([`discover_container_temps`]); for any other kind, the one
/// root at `path`.
///
/// # Errors
/// The errors of [`Root::new`], or of [`discover_container_temps`] for the containers dir.
pub fn resolve(kind: RootKind, path: &Path) -> Result<Resolved, RootError> {
    if kind == RootKind::ContainerTemp {
        return discover_container_temps(path);
    }
    Ok(Resolved {
        roots: vec![Root::new(kind, path)?],
        skipped: Vec::new(),
    })
}

impl Resolved {
    /// Parses a `KIND=PATH` argument (the CLI's `--root`) and resolves it ([`resolve`]).
    ///
    /// # Errors
    /// [`RootError::Malformed`] without `=` or with an empty path, [`RootError::UnknownKind`], and
    /// the errors of [`resolve`].
    pub fn parse_arg(arg: &str) -> Result<Resolved, RootError> {
        let (kind, path) = arg
            .split_once('=')
            .filter(|(_, p)| !p.is_empty())
            .ok_or_else(|| RootError::Malformed(arg.to_owned()))?;
        resolve(kind.parse()?, Path::new(path))
    }
}
