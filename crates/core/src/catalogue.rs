//! The producer catalogue: rules that name who leaves what where.
//!
//! The data file `crates/core/producers.toml` (one `[[producer]]` table per rule, sorted by id) is
//! compiled into the binary with `include_str!` and can be extended by `[[producer]]` tables in the
//! user's config ([`Catalogue::with_extra`]). Each rule names a root kind and fixed-depth item globs
//! relative to that root (`*` never crosses `/`, no `**`), optionally narrowed by regexes on the
//! item's file name (`name_regex`) or its whole relative path (`path_regex`) whose named captures
//! `pid`, `ts` and `bundle` become [`Captures`].
//!
//! Owners (`owner = { pid_in_name, processes }`, decided by [`crate::owner::verdict`]): for a rule
//! with `pid_in_name`, an item whose name yields a `pid` capture is decided by that pid alone:
//! alive and started before the item was born (the name's `ts`, else the scan's birth time, with
//! 2 s of slack) keeps it; dead, or started after (a reused pid), makes it eligible. The rule's
//! `processes` keep only the items whose name yields no pid (while any of them runs). So a host
//! that keeps some engines running still gets back the items of the engines that exited. The app
//! named in an item's path (`bundle` capture, or a `container-temp` root's bundle id) owns it too
//! (`app_in_path`, on unless a rule turns it off): kept while that app runs.
//!
//! Structure (`structure`, globs like `item`): the dirs a rule's items live in that must stay, e.g.
//! `com.apple.gpuarchiver` (a sandboxed app that cannot recreate its Metal cache dirs crashes at
//! start). A top-level entry matching one is attributed to the rule (measured without the items
//! inside it, like an unattributed entry) but is never an item: reclaim keeps it
//! ([`crate::reclaim::KeepReason::Structure`]).
//!
//! Rules are compiled once into one [`globset::GlobSet`] per (root kind, depth). A path maps to at
//! most one rule: loading fails when two rules claim the same example path, or when an example of
//! one rule lies inside an item of another.

mod load;
mod matcher;
mod version;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::inventory::Captures;
use crate::roots::{Root, RootKind};

pub use version::compare_versions;

/// The compiled-in data file.
const BUILTIN_TOML: &str = include_str!("../producers.toml");

/// The origin named in errors about the compiled-in rules.
pub const BUILTIN_ORIGIN: &str = "<builtin>";

/// What kind of thing a producer leaves behind.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProducerKind {
    /// Leftovers nobody cleans up.
    Leak,
    /// A cache that manages itself (a control: attributed, not a leak).
    Cache,
    /// Reports (crash reports, diagnostics).
    Report,
    /// System-owned: reported, never deleted.
    System,
}

/// Whether reclaim may delete a producer's items.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReclaimMode {
    /// Included in a default reclaim.
    Auto,
    /// Only when the producer is named explicitly.
    Manual,
    /// Never deleted.
    Never,
}

/// Owner rules: what keeps a producer's items alive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Owner {
    /// The name carries the owner pid (`pid` capture): for an item whose name yields one, that pid
    /// alone decides (alive and started before the item's birth keeps it; dead or reused does
    /// not), and `processes` do not apply.
    pub pid_in_name: bool,
    /// Executable names that, while any is running, keep the rule's items whose name yields no pid.
    pub processes: Vec<String>,
    /// The app named in the item's path (the `bundle` capture: a bundle id or an executable name;
    /// in a `container-temp` root, the container's bundle id) owns the item: while a process of
    /// that app runs, an item whose name yields no pid is kept. True unless the rule says `false`
    /// (crash reports, whose `bundle` is the crashed process, and code-sign clones, whose running
    /// app keeps only its newest clone).
    pub app_in_path: bool,
    /// The item is an app bundle (or holds one, `<App>.app`): while a process runs whose
    /// executable name is one the bundle holds (`Contents/MacOS/<name>`), the item is kept, and
    /// an item in which no executable name can be read is kept too (its app is unknown). For
    /// backups of an installed app an updater keeps while it swaps the app (Tauri's updater):
    /// deleting one during an install leaves no app at all.
    pub app_in_item: bool,
}

impl Default for Owner {
    fn default() -> Owner {
        Owner {
            pid_in_name: false,
            processes: Vec::new(),
            app_in_path: true,
            app_in_item: false,
        }
    }
}

/// One `[[producer]]` rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Unique slug, e.g. `metal-gpuarchiver`.
    pub id: String,
    /// Human name.
    pub name: String,
    /// The root kind the globs are relative to.
    pub root: RootKind,
    /// Item globs relative to the root, fixed depth (no `**`), e.g. `com.apple.gpuarchiver/gpuarchiver-*`.
    /// In TOML: one string or an array of strings.
    #[serde(deserialize_with = "load::one_or_many")]
    pub item: Vec<String>,
    /// Optional regex on the item's file name (last component) with named captures `pid`, `ts`,
    /// `bundle`. When set, an item must match a glob and this regex.
    #[serde(default)]
    pub name_regex: Option<String>,
    /// Optional regex on the item's whole path relative to the root (`/`-separated), same captures
    /// as `name_regex` (useful to capture `bundle` from a parent dir). When set, it must match too.
    #[serde(default)]
    pub path_regex: Option<String>,
    /// What kind of producer it is.
    pub kind: ProducerKind,
    /// Whether reclaim may delete its items.
    pub reclaim: ReclaimMode,
    /// Age floor under the user's threshold, seconds.
    #[serde(default)]
    pub min_age_secs: u64,
    /// What keeps items alive.
    #[serde(default)]
    pub owner: Owner,
    /// Upstream report URLs.
    #[serde(default)]
    pub evidence: Vec<String>,
    /// Free text.
    #[serde(default)]
    pub notes: String,
    /// Paths relative to the root that must match (checked at load time).
    #[serde(default)]
    pub examples: Vec<String>,
    /// Paths relative to the root that must not match (checked at load time).
    #[serde(default)]
    pub counter_examples: Vec<String>,
    /// Globs (like `item`, relative to the root) of the dirs the rule's items live in, which must
    /// stay (e.g. `*/com.apple.metal`): attributed to the rule, never items, never reclaimed. In
    /// TOML: one string or an array of strings; empty when absent.
    #[serde(default, deserialize_with = "load::one_or_many")]
    pub structure: Vec<String>,
    /// A version-keyed cache (one item per installed version, e.g. `Cypress/14.5.1`): its
    /// `name_regex` captures `version` (and optionally `series`, e.g. the browser of an
    /// `ms-playwright` revision). Reclaim never deletes the newest version of a series among the
    /// item's siblings ([`crate::reclaim::KeepReason::NewestVersion`]).
    #[serde(default)]
    pub versioned: bool,
    /// Entries that must all exist inside an item (a dir) for the rule to claim it: the content
    /// signature a generic name needs. Each is a relative path of plain names (`index`, or
    /// `model/done` below the item: TF-DF's `tmp*` dirs hold the YDF model in `model/`); every
    /// dir on the way must be a real dir, never a symlink, and an entry written with a trailing
    /// `/` (`objects/`) must be a real dir itself (without it, any kind of entry counts). Checked against the file system by
    /// the scan (a few `fstatat` calls per candidate, as it lists the candidate's parent) and by
    /// [`Catalogue::item_of_in`]; the path-only [`Catalogue::classify`] and
    /// [`Catalogue::item_of`] never let such a rule claim anything. Empty when absent.
    #[serde(default)]
    pub contains: Vec<String>,
    /// Entries (written like `contains`) that must not exist inside an item for the rule to
    /// claim it: what tells a producer's dir from a look-alike (a temporary Git object database
    /// has `index` and `objects/` but no `HEAD`; a clone has `.git/HEAD`). Only with `contains`.
    /// Empty when absent.
    #[serde(default)]
    pub lacks: Vec<String>,
    /// The command of the tool that manages this cache itself (`brew cleanup`,
    /// `go clean -cache`): offered first wherever CacheWatch would delete its items (explain,
    /// the reclaim plan, alerts, the window); deleting by naming the producer stays possible.
    #[serde(default)]
    pub managed_by: Option<String>,
}

impl Rule {
    /// True when reclaim may delete the rule's items at all: not `reclaim = "never"`, not
    /// `kind = "system"` (planning keeps such items as [`crate::reclaim::KeepReason::Never`]).
    pub fn reclaimable(&self) -> bool {
        self.reclaim != ReclaimMode::Never && self.kind != ProducerKind::System
    }
}

/// A rule claiming a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Match<'a> {
    /// The rule.
    pub rule: &'a Rule,
    /// The item's path relative to the root (a prefix of the path asked about, or the path itself).
    pub item: PathBuf,
    /// What the rule's regexes captured from the item's name or path.
    pub captures: Captures,
}

/// Errors loading a catalogue. Every variant names the file (`origin`, [`BUILTIN_ORIGIN`] for the
/// compiled-in rules) and the 1-based line of the offending text.
#[derive(Debug, thiserror::Error)]
pub enum CatalogueError {
    /// TOML syntax error, unknown field, wrong type or bad enum word (root kind, kind, reclaim).
    #[error("{}:{line}: invalid producer table: {message}", origin.display())]
    Toml {
        /// File the rule came from.
        origin: PathBuf,
        /// 1-based line.
        line: usize,
        /// The parser's message.
        message: String,
    },
    /// An item glob that is empty, uses `**`, is not relative, or does not compile.
    #[error("{}:{line}: producer {id:?}: item glob {glob:?} {problem}", origin.display())]
    BadGlob {
        /// File the rule came from.
        origin: PathBuf,
        /// 1-based line.
        line: usize,
        /// Rule id.
        id: String,
        /// The glob as written.
        glob: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A `name_regex` or `path_regex` that does not compile.
    #[error("{}:{line}: producer {id:?}: regex {regex:?} does not compile: {message}", origin.display())]
    BadRegex {
        /// File the rule came from.
        origin: PathBuf,
        /// 1-based line.
        line: usize,
        /// Rule id.
        id: String,
        /// The regex as written.
        regex: String,
        /// The regex compiler's message.
        message: String,
    },
    /// Two rules with the same id in one file.
    #[error("{}:{line}: duplicate producer id {id:?} (first defined on line {first_line}); ids must be unique", origin.display())]
    DuplicateId {
        /// File the rule came from.
        origin: PathBuf,
        /// 1-based line of the second definition.
        line: usize,
        /// The id.
        id: String,
        /// 1-based line of the first definition.
        first_line: usize,
    },
    /// Two rules claim the same path, or a path of one rule lies inside an item of another.
    #[error("{}:{line}: path {path:?} is claimed by both {first:?} and {second:?}; a path maps to at most one rule: narrow the globs or regexes", origin.display())]
    Overlap {
        /// File of the rule whose example revealed the overlap.
        origin: PathBuf,
        /// 1-based line of that example.
        line: usize,
        /// The example path (relative to the root).
        path: PathBuf,
        /// One rule id.
        first: String,
        /// The other rule id.
        second: String,
    },
    /// A rule's own example does not match it, or a counter-example does.
    #[error("{}:{line}: producer {id:?}: {message}", origin.display())]
    Example {
        /// File the rule came from.
        origin: PathBuf,
        /// 1-based line of the example.
        line: usize,
        /// Rule id.
        id: String,
        /// What is wrong.
        message: String,
    },
    /// Anything else wrong with a rule (empty id, no item glob).
    #[error("{}:{line}: {message}", origin.display())]
    Invalid {
        /// File the rule came from.
        origin: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

impl CatalogueError {
    /// The 1-based line the error points at.
    pub fn line(&self) -> usize {
        match self {
            CatalogueError::Toml { line, .. }
            | CatalogueError::BadGlob { line, .. }
            | CatalogueError::BadRegex { line, .. }
            | CatalogueError::DuplicateId { line, .. }
            | CatalogueError::Overlap { line, .. }
            | CatalogueError::Example { line, .. }
            | CatalogueError::Invalid { line, .. } => *line,
        }
    }

    /// The file the error is about.
    pub fn origin(&self) -> &Path {
        match self {
            CatalogueError::Toml { origin, .. }
            | CatalogueError::BadGlob { origin, .. }
            | CatalogueError::BadRegex { origin, .. }
            | CatalogueError::DuplicateId { origin, .. }
            | CatalogueError::Overlap { origin, .. }
            | CatalogueError::Example { origin, .. }
            | CatalogueError::Invalid { origin, .. } => origin,
        }
    }
}

/// The compiled set of rules.
#[derive(Debug, Clone)]
pub struct Catalogue {
    rules: Vec<Rule>,
    compiled: matcher::Compiled,
    /// Per rule (same order): the `name_regex` of a `versioned` rule, for its `version` and
    /// `series` captures.
    versions: Vec<Option<regex::Regex>>,
}

/// True when `id` can be a producer id: lowercase ASCII words of letters and digits joined by
/// single dashes (`my-app-temp`). A rule whose id is not is refused when the catalogue loads.
pub fn is_slug(id: &str) -> bool {
    load::is_slug(id)
}

impl Catalogue {
    /// The catalogue compiled into the binary (parsed and compiled once per process, then cloned).
    ///
    /// # Panics
    /// Never in a tested build: the built-in data is validated by the crate's tests.
    pub fn builtin() -> Catalogue {
        static BUILTIN: OnceLock<Catalogue> = OnceLock::new();
        BUILTIN
            .get_or_init(|| {
                Catalogue::from_toml(BUILTIN_TOML, Path::new(BUILTIN_ORIGIN))
                    .unwrap_or_else(|e| panic!("built-in catalogue is invalid: {e}"))
            })
            .clone()
    }

    /// The rules of one TOML text only (its `[[producer]]` tables; other keys are ignored).
    ///
    /// # Errors
    /// [`CatalogueError`] naming `origin`, the line and what is wrong.
    pub fn from_toml(text: &str, origin: &Path) -> Result<Catalogue, CatalogueError> {
        let parsed = load::parse(text, origin)?;
        load::build(parsed)
    }

    /// The built-in rules plus `[[producer]]` tables parsed from `extra` (read from `origin`, e.g.
    /// the user's config file; other keys are ignored). A user rule whose id equals a built-in one
    /// replaces it.
    ///
    /// # Errors
    /// [`CatalogueError`] naming `origin`, the line and what is wrong: TOML syntax, unknown field,
    /// bad root kind, a glob that does not compile or uses `**`, a regex that does not compile, a
    /// duplicate id within `extra`, rules that overlap (on any rule's examples).
    pub fn with_extra(extra: &str, origin: &Path) -> Result<Catalogue, CatalogueError> {
        let user = load::parse(extra, origin)?;
        let builtin = load::parse(BUILTIN_TOML, Path::new(BUILTIN_ORIGIN))?;
        let mut all: Vec<load::Loaded> = builtin
            .into_iter()
            .filter(|b| !user.iter().any(|u| u.rule.id == b.rule.id))
            .collect();
        all.extend(user);
        load::build(all)
    }

    /// All rules, sorted by id.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The rule with this id.
    pub fn rule(&self, id: &str) -> Option<&Rule> {
        self.rules
            .binary_search_by(|r| r.id.as_str().cmp(id))
            .ok()
            .map(|i| &self.rules[i])
    }

    /// The rule whose item glob (and regexes) match `rel` itself (a path relative to a root of
    /// `kind`, `/`-separated, no `.` or `..`), if any. Cheap on misses: no allocation. A rule with
    /// `contains` never claims here (nothing is read from disk): see [`Catalogue::classify_with`].
    pub fn classify(&self, kind: RootKind, rel: &Path) -> Option<Match<'_>> {
        self.classify_with(kind, rel, &|_| false)
    }

    /// [`Catalogue::classify`], where `has(entry)` says whether `entry` (a relative path) exists
    /// inside `rel`: a rule with `contains` claims `rel` only when every one of its entries does
    /// and none of its `lacks` does (a rule that matches by name but fails its signature claims
    /// nothing).
    pub fn classify_with(
        &self,
        kind: RootKind,
        rel: &Path,
        has: &dyn Fn(&str) -> bool,
    ) -> Option<Match<'_>> {
        let (rule, captures) = self.claim_with(kind, rel, has)?;
        Some(Match {
            rule,
            item: rel.to_path_buf(),
            captures,
        })
    }

    /// The item that `rel` (any path inside a root of `kind`) belongs to: the shortest prefix of `rel`
    /// that a rule claims. `None` when no prefix is claimed (then the item is the unattributed
    /// top-level entry, `rel`'s first component). Rules with `contains` claim nothing here (see
    /// [`Catalogue::item_of_in`]).
    pub fn item_of(&self, kind: RootKind, rel: &Path) -> Option<Match<'_>> {
        self.item_of_with(kind, rel, &|_, _| false)
    }

    /// [`Catalogue::item_of`] for a path inside `root`, checking the `contains` and `lacks`
    /// entries of a candidate item on disk (`lstat` of each component of `<root>/<item>/<entry>`,
    /// no symlink followed), as the scan does.
    pub fn item_of_in(&self, root: &Root, rel: &Path) -> Option<Match<'_>> {
        let base = &root.canonical;
        self.item_of_with(root.kind, rel, &|item, entry| {
            has_on_disk(base, item, entry)
        })
    }

    /// True when the item `rel` of the root at `base` holds every `contains` entry of `rule` and
    /// no `lacks` entry, read on disk as [`Catalogue::item_of_in`] reads them (true for a rule
    /// without a signature): a git store that gained a `HEAD` since a plan is a repository now.
    pub fn signature_holds(rule: &Rule, base: &Path, rel: &Path) -> bool {
        rule.contains.iter().all(|e| has_on_disk(base, rel, e))
            && !rule.lacks.iter().any(|e| has_on_disk(base, rel, e))
    }

    /// The rule other than `id` that claims a dir `rel` lies in (`rel`'s parent or above, in a
    /// root of `kind` at `base`), signatures read on disk as [`Catalogue::item_of_in`] reads
    /// them: a dir that became another producer's item since a plan (a `tmp.*` dir that now
    /// holds a git index and objects) takes what lies in it out of the plan.
    pub fn claimed_above(
        &self,
        kind: RootKind,
        base: &Path,
        rel: &Path,
        id: &str,
    ) -> Option<&Rule> {
        rel.ancestors()
            .skip(1)
            .take_while(|p| !p.as_os_str().is_empty())
            .find_map(|dir| {
                let has = |entry: &str| has_on_disk(base, dir, entry);
                self.claim_with(kind, dir, &has)
                    .map(|(rule, _)| rule)
                    .filter(|r| r.id != id)
            })
    }

    /// [`Catalogue::item_of`] where `has(item, name)` says whether the entry `name` exists
    /// directly inside the candidate item `item` (relative to the root), for rules with
    /// `contains`.
    pub fn item_of_with(
        &self,
        kind: RootKind,
        rel: &Path,
        has: &dyn Fn(&Path, &str) -> bool,
    ) -> Option<Match<'_>> {
        let max = self.max_depth(kind);
        let mut prefixes: Vec<&Path> = rel
            .ancestors()
            .filter(|p| !p.as_os_str().is_empty())
            .collect();
        prefixes.reverse();
        prefixes
            .into_iter()
            .take(max)
            .find_map(|p| self.classify_with(kind, p, &|name| has(p, name)))
    }

    /// The rule one of whose `structure` globs matches `rel` (relative to a root of `kind`): `rel`
    /// is a dir that rule's items live in, which reclaim never deletes.
    pub fn structure_of(&self, kind: RootKind, rel: &Path) -> Option<&Rule> {
        self.compiled
            .structure_of(kind, rel)
            .map(|i| &self.rules[i])
    }

    /// The rules one of whose item globs matches `rel` (relative to a root of `kind`), their
    /// regexes and `contains` not checked: `explain`'s near misses.
    pub(crate) fn glob_claimants(&self, kind: RootKind, rel: &Path) -> Vec<&Rule> {
        self.compiled
            .glob_claimants(kind, rel)
            .into_iter()
            .map(|i| &self.rules[i])
            .collect()
    }

    /// The deepest item glob for roots of `kind` (number of path components); 0 when no rule applies.
    pub fn max_depth(&self, kind: RootKind) -> usize {
        self.compiled.max_depth(kind)
    }

    /// The first item a rule claims at `rel` (inside `root`), at a prefix of it, or anywhere under
    /// it down to the deepest level a rule of the root's kind reaches ([`Catalogue::max_depth`]),
    /// `contains` and `lacks` checked on disk as the scan does ([`Catalogue::item_of_in`]).
    /// Symlinks are not followed; a dir that cannot be listed is taken as holding nothing more.
    /// What a new rule claiming `rel` whole would take from the producers that hold it now.
    pub fn claim_at_or_under(&self, root: &Root, rel: &Path) -> Option<PathBuf> {
        if let Some(m) = self.item_of_in(root, rel) {
            return Some(m.item);
        }
        let max = self.max_depth(root.kind);
        let mut stack = vec![rel.to_path_buf()];
        while let Some(dir) = stack.pop() {
            if dir.components().count() >= max {
                continue;
            }
            let Ok(entries) = std::fs::read_dir(root.canonical.join(&dir)) else {
                continue;
            };
            for entry in entries.flatten() {
                let sub = dir.join(entry.file_name());
                if let Some(m) = self.item_of_in(root, &sub) {
                    return Some(m.item);
                }
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push(sub);
                }
            }
        }
        None
    }
}

/// True when the `contains`/`lacks` entry `entry` exists inside the item `item` of the root at
/// `base` (`lstat` of each component, no symlink followed; an entry ending in `/` a real dir).
fn has_on_disk(base: &Path, item: &Path, entry: &str) -> bool {
    let mut at = base.join(item);
    let (entry, want_dir) = match entry.strip_suffix('/') {
        Some(d) => (d, true),
        None => (entry, false),
    };
    let mut parts = entry.split('/').peekable();
    while let Some(part) = parts.next() {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(md) if (parts.peek().is_none() && !want_dir) || md.is_dir() => {}
            _ => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests;
