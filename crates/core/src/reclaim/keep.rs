//! Why [`plan`](super::plan) or [`execute`](super::execute) kept an item, and the keep rules
//! that look at more than one item ([`NewestCloneGuard`]).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::path_text;
use crate::inventory::{Inventory, Item};
use crate::owner::OwnerVerdict;
use crate::process::ProcessProbe;
use crate::roots::{Root, RootKind};

/// Why an item was kept.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "reason")]
pub enum KeepReason {
    /// Younger than max(threshold, the rule's floor).
    TooYoung {
        /// Age of the item, seconds.
        age_secs: u64,
        /// The age it needs, seconds.
        needed_secs: u64,
    },
    /// The owner pid in the name is alive and started before the item was born (see
    /// [`crate::owner`]).
    OwnerAlive {
        /// The owner pid.
        pid: u32,
    },
    /// A process has a file in it open.
    InUse {
        /// The process.
        pid: u32,
        /// The open file. Serialized as `open_path`: a [`KeptItem`](super::KeptItem) flattens the reason next to its
        /// own `path`.
        #[serde(rename = "open_path", with = "path_text")]
        #[cfg_attr(feature = "ts", ts(type = "string"))]
        path: PathBuf,
    },
    /// One of the rule's named processes runs, and the item's name yields no owner pid (see
    /// [`crate::owner`]).
    AppRunning {
        /// The process name.
        name: String,
    },
    /// The rule says `reclaim = "never"` or `kind = "system"`.
    Never,
    /// The rule says `reclaim = "manual"` and it was not named.
    Manual,
    /// The path is a dir the rule's items live in (its `structure` globs, e.g. `com.apple.metal`),
    /// not an item: the producer needs it to exist, so it is never deleted.
    Structure,
    /// Changed between plan and execute (device, inode, age or use).
    Changed {
        /// What changed.
        what: String,
    },
    /// The item's producer id is not in the catalogue (e.g. a rule removed from the config).
    UnknownProducer,
    /// The item is a root (of another kind) or holds one inside it: deleting it would delete a
    /// root (nested roots, e.g. a temp root inside a cache root).
    HoldsRoot {
        /// The root it is or holds.
        #[serde(with = "path_text")]
        #[cfg_attr(feature = "ts", ts(type = "string"))]
        root: PathBuf,
    },
    /// A filesystem is mounted at the item or somewhere inside it (a bind mount, a disk image);
    /// reclaim never descends into a mount.
    HoldsMount {
        /// The mount point. Serialized as `mount_point`: a [`KeptItem`](super::KeptItem) flattens
        /// the reason next to its own `path`.
        #[serde(rename = "mount_point", with = "path_text")]
        #[cfg_attr(feature = "ts", ts(type = "string"))]
        path: PathBuf,
    },
    /// The item is or holds a protected path (the user's home, the data dir, the config dir, or
    /// one the caller listed in [`Policy::protected`](super::Policy::protected)).
    HoldsProtected {
        /// The protected path it is or holds. Serialized as `protected_path`: a [`KeptItem`](super::KeptItem)
        /// flattens the reason next to its own `path`.
        #[serde(rename = "protected_path", with = "path_text")]
        #[cfg_attr(feature = "ts", ts(type = "string"))]
        path: PathBuf,
    },
    /// The newest code-sign clone of an app that is running (`code-sign-clones` root: clones
    /// grouped by the rule's `bundle` capture); see [`NewestCloneGuard`].
    NewestCloneOfRunningApp {
        /// The running executable name the clone holds (`<App>.app/Contents/MacOS/<name>`).
        app: String,
    },
    /// The newest version of a version-keyed cache (`versioned` rule: `Cypress/14.5.1` beside
    /// older versions): never deleted, whatever its age.
    NewestVersion {
        /// The version its name carries.
        version: String,
    },
    /// A staged app update (`sparkle-installation`) that may still be installed: its version is
    /// newer than the installed app's, or either cannot be read (see
    /// [`crate::reclaim::staged`]). A staged build at most as new as the installed app is stale.
    StagedUpdate {
        /// The staged build's version (`5.2 (520)`), when read.
        staged: Option<String>,
        /// The installed app's version, when one was found and read.
        installed: Option<String>,
    },
    /// The scan could not read the item or something inside it (permission denied, I/O error):
    /// execute could not delete it whole, so the plan keeps it.
    Unreadable {
        /// The first path inside it the scan could not read. Serialized as `unreadable_path`: a
        /// [`KeptItem`](super::KeptItem) flattens the reason next to its own `path`.
        #[serde(rename = "unreadable_path", with = "path_text")]
        #[cfg_attr(feature = "ts", ts(type = "string"))]
        path: PathBuf,
    },
    /// The effective user may not delete the item whole: its parent dir, or a dir inside it (a
    /// root-owned dir with mode 0755, say), is not writable or not searchable by them, so execute
    /// would delete part of it and fail on the rest. Found at planning (`faccessat(AT_EACCESS)`,
    /// never through a symlink); execute's own refusal stays the real guard.
    NotDeletable {
        /// The first dir found that the user cannot remove entries from. Serialized as
        /// `not_writable_path`: a [`KeptItem`](super::KeptItem) flattens the reason next to its
        /// own `path`.
        #[serde(rename = "not_writable_path", with = "path_text")]
        #[cfg_attr(feature = "ts", ts(type = "string"))]
        path: PathBuf,
    },
    /// Whether the user may delete the item whole could not be checked: a dir in it could not be
    /// opened or listed (too many open files, permission to list denied, an I/O error). Kept
    /// rather than deleted on a guess; the next plan checks again.
    NotChecked {
        /// The dir that could not be opened or listed. Serialized as `unchecked_path`: a
        /// [`KeptItem`](super::KeptItem) flattens the reason next to its own `path`.
        #[serde(rename = "unchecked_path", with = "path_text")]
        #[cfg_attr(feature = "ts", ts(type = "string"))]
        path: PathBuf,
        /// The OS's error, as it reads it (`Too many open files`).
        error: String,
    },
}

impl KeepReason {
    /// The kebab-case code of the reason, as serde's `reason` tag writes it (`too-young`,
    /// `owner-alive`, `in-use`, ...): the key kept items are counted and grouped by.
    pub fn code(&self) -> &'static str {
        self.kind().as_str()
    }

    /// The reason without its details: what kept items are counted and grouped by.
    pub fn kind(&self) -> KeepCode {
        match self {
            KeepReason::TooYoung { .. } => KeepCode::TooYoung,
            KeepReason::OwnerAlive { .. } => KeepCode::OwnerAlive,
            KeepReason::InUse { .. } => KeepCode::InUse,
            KeepReason::AppRunning { .. } => KeepCode::AppRunning,
            KeepReason::Never => KeepCode::Never,
            KeepReason::Manual => KeepCode::Manual,
            KeepReason::Structure => KeepCode::Structure,
            KeepReason::Changed { .. } => KeepCode::Changed,
            KeepReason::UnknownProducer => KeepCode::UnknownProducer,
            KeepReason::HoldsRoot { .. } => KeepCode::HoldsRoot,
            KeepReason::HoldsMount { .. } => KeepCode::HoldsMount,
            KeepReason::HoldsProtected { .. } => KeepCode::HoldsProtected,
            KeepReason::NewestCloneOfRunningApp { .. } => KeepCode::NewestCloneOfRunningApp,
            KeepReason::NewestVersion { .. } => KeepCode::NewestVersion,
            KeepReason::StagedUpdate { .. } => KeepCode::StagedUpdate,
            KeepReason::Unreadable { .. } => KeepCode::Unreadable,
            KeepReason::NotDeletable { .. } => KeepCode::NotDeletable,
            KeepReason::NotChecked { .. } => KeepCode::NotChecked,
        }
    }
}

/// The kind of a [`KeepReason`], without its details: its `reason` word (`too-young`, ...).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeepCode {
    /// [`KeepReason::TooYoung`].
    TooYoung,
    /// [`KeepReason::OwnerAlive`].
    OwnerAlive,
    /// [`KeepReason::InUse`].
    InUse,
    /// [`KeepReason::AppRunning`].
    AppRunning,
    /// [`KeepReason::Never`].
    Never,
    /// [`KeepReason::Manual`].
    Manual,
    /// [`KeepReason::Structure`].
    Structure,
    /// [`KeepReason::Changed`].
    Changed,
    /// [`KeepReason::UnknownProducer`].
    UnknownProducer,
    /// [`KeepReason::HoldsRoot`].
    HoldsRoot,
    /// [`KeepReason::HoldsMount`].
    HoldsMount,
    /// [`KeepReason::HoldsProtected`].
    HoldsProtected,
    /// [`KeepReason::NewestCloneOfRunningApp`].
    NewestCloneOfRunningApp,
    /// [`KeepReason::NewestVersion`].
    NewestVersion,
    /// [`KeepReason::StagedUpdate`].
    StagedUpdate,
    /// [`KeepReason::Unreadable`].
    Unreadable,
    /// [`KeepReason::NotDeletable`].
    NotDeletable,
    /// [`KeepReason::NotChecked`].
    NotChecked,
}

impl KeepCode {
    /// Every code.
    pub const ALL: [KeepCode; 18] = [
        KeepCode::TooYoung,
        KeepCode::OwnerAlive,
        KeepCode::InUse,
        KeepCode::AppRunning,
        KeepCode::Never,
        KeepCode::Manual,
        KeepCode::Structure,
        KeepCode::Changed,
        KeepCode::UnknownProducer,
        KeepCode::HoldsRoot,
        KeepCode::HoldsMount,
        KeepCode::HoldsProtected,
        KeepCode::NewestCloneOfRunningApp,
        KeepCode::NewestVersion,
        KeepCode::StagedUpdate,
        KeepCode::Unreadable,
        KeepCode::NotDeletable,
        KeepCode::NotChecked,
    ];

    /// The kebab-case word serde writes, as [`KeepReason`]'s `reason` tag.
    pub fn as_str(self) -> &'static str {
        match self {
            KeepCode::TooYoung => "too-young",
            KeepCode::OwnerAlive => "owner-alive",
            KeepCode::InUse => "in-use",
            KeepCode::AppRunning => "app-running",
            KeepCode::Never => "never",
            KeepCode::Manual => "manual",
            KeepCode::Structure => "structure",
            KeepCode::Changed => "changed",
            KeepCode::UnknownProducer => "unknown-producer",
            KeepCode::HoldsRoot => "holds-root",
            KeepCode::HoldsMount => "holds-mount",
            KeepCode::HoldsProtected => "holds-protected",
            KeepCode::NewestCloneOfRunningApp => "newest-clone-of-running-app",
            KeepCode::NewestVersion => "newest-version",
            KeepCode::StagedUpdate => "staged-update",
            KeepCode::Unreadable => "unreadable",
            KeepCode::NotDeletable => "not-deletable",
            KeepCode::NotChecked => "not-checked",
        }
    }

    /// The code written `s` (as [`KeepCode::as_str`]); `None` for an unknown word.
    pub fn parse(s: &str) -> Option<KeepCode> {
        KeepCode::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

impl std::fmt::Display for KeepCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Lets a code be compared with its word (`k.reason == "too-young"`).
impl PartialEq<&str> for KeepCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl std::fmt::Display for KeepReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeepReason::TooYoung {
                age_secs,
                needed_secs,
            } => write!(
                f,
                "too young: {} old, needs {}",
                crate::units::format_duration(*age_secs),
                crate::units::format_duration(*needed_secs)
            ),
            KeepReason::OwnerAlive { pid } => write!(f, "owner pid {pid} is alive"),
            KeepReason::InUse { pid, path } => {
                write!(f, "in use: pid {pid} has {} open", path.display())
            }
            KeepReason::AppRunning { name } => write!(f, "{name} is running"),
            KeepReason::Never => f.write_str("the rule never reclaims"),
            KeepReason::Manual => f.write_str("the rule is manual and was not named"),
            KeepReason::Structure => {
                f.write_str("a dir the producer's items live in, never deleted")
            }
            KeepReason::Changed { what } => write!(f, "changed: {what}"),
            KeepReason::UnknownProducer => f.write_str("the producer is not in the catalogue"),
            KeepReason::HoldsRoot { root } => {
                write!(f, "it is or holds the root {}", root.display())
            }
            KeepReason::HoldsMount { path } => {
                write!(f, "a filesystem is mounted at {}", path.display())
            }
            KeepReason::HoldsProtected { path } => {
                write!(f, "it is or holds the protected path {}", path.display())
            }
            KeepReason::NewestCloneOfRunningApp { app } => {
                write!(f, "the newest clone of {app}, which is running")
            }
            KeepReason::NewestVersion { version } => {
                write!(f, "newest version ({version}) of a version-keyed cache")
            }
            KeepReason::StagedUpdate { staged, installed } => match (staged, installed) {
                (Some(s), Some(i)) => {
                    write!(f, "staged update {s} is newer than the installed {i}")
                }
                (Some(s), None) => write!(
                    f,
                    "staged update {s}: no installed app of its bundle id found to compare with"
                ),
                (None, _) => f.write_str("staged update whose version cannot be read"),
            },
            KeepReason::Unreadable { path } => {
                write!(f, "unreadable: the scan could not read {}", path.display())
            }
            KeepReason::NotDeletable { path } => {
                write!(
                    f,
                    "not deletable: {} is not writable by you",
                    path.display()
                )
            }
            KeepReason::NotChecked { path, error } => write!(
                f,
                "not checked: {} could not be opened to see whether you may delete it ({error})",
                path.display()
            ),
        }
    }
}

/// The keep rules [`plan`](super::plan) applies to an item it would otherwise delete, so that the
/// dry run already shows what execute would keep: the item holds a mount point
/// ([`KeepReason::HoldsMount`], from the OS's mount table, bind mounts of the same file system
/// included), the scan could not read it or something inside it ([`KeepReason::Unreadable`]),
/// or it is the newest clone of a running app ([`NewestCloneGuard`]). Execute still re-checks
/// mounts itself (one mounted after the plan).
#[derive(Debug, Default)]
pub struct PlanGuards {
    newest: NewestCloneGuard,
    /// Mount points, sorted (component order).
    mounts: Vec<PathBuf>,
    /// What the scan could not read, sorted.
    unreadable: Vec<PathBuf>,
}

impl PlanGuards {
    /// Reads the mount table once and gathers the scan's unreadable paths of `inv`.
    pub fn new(inv: &Inventory, probe: &dyn ProcessProbe) -> PlanGuards {
        PlanGuards::mounts().with_scan(
            inv.roots
                .iter()
                .flat_map(|r| r.issues.iter().map(|i| i.path.clone())),
            inv.items(),
            probe,
        )
    }

    /// Only the mount-table guard (read once now): what can be known before a scan.
    pub fn mounts() -> PlanGuards {
        let mut mounts = crate::platform::mount_points();
        mounts.sort();
        mounts.dedup();
        PlanGuards {
            mounts,
            ..PlanGuards::default()
        }
    }

    /// These guards plus what a scan found: the paths it could not read (`unreadable`) and its
    /// items, of which only those of `code-sign-clones` roots are looked at (newest clones).
    pub fn with_scan<'i>(
        mut self,
        unreadable: impl IntoIterator<Item = PathBuf>,
        items: impl IntoIterator<Item = (&'i Root, &'i Item)>,
        probe: &dyn ProcessProbe,
    ) -> PlanGuards {
        self.unreadable.extend(unreadable);
        self.unreadable.sort();
        self.unreadable.dedup();
        self.newest = NewestCloneGuard::of_items(items, probe);
        self
    }

    /// Adds paths a scan could not read (an item at or above one is kept).
    pub(super) fn add_unreadable(&mut self, unreadable: impl IntoIterator<Item = PathBuf>) {
        self.unreadable.extend(unreadable);
        self.unreadable.sort();
        self.unreadable.dedup();
    }

    /// Replaces the newest-clone guard.
    pub(super) fn set_newest(&mut self, newest: NewestCloneGuard) {
        self.newest = newest;
    }

    /// True when only the mount guard can keep anything (no unreadable path, no newest clone).
    pub fn mounts_only(&self) -> bool {
        self.unreadable.is_empty() && self.newest.newest.is_empty()
    }

    /// Why the item at `path` (absolute, as the inventory has it) must be kept, if it must.
    pub fn keep_reason(&self, path: &Path) -> Option<KeepReason> {
        if let Some(m) = first_under(&self.mounts, path) {
            return Some(KeepReason::HoldsMount { path: m.clone() });
        }
        if let Some(u) = first_under(&self.unreadable, path) {
            return Some(KeepReason::Unreadable { path: u.clone() });
        }
        self.newest.keep_reason(path)
    }
}

/// The first of `sorted` at `dir` or under it: `Path` orders by components, so every descendant
/// of `dir` sorts right after it.
fn first_under<'a>(sorted: &'a [PathBuf], dir: &Path) -> Option<&'a PathBuf> {
    let at = sorted.partition_point(|p| p.as_path() < dir);
    sorted.get(at).filter(|p| p.starts_with(dir))
}

/// "Never the newest clone of a running app" (crbug 340836884: Chromium clones its
/// bundle into `$X/<bundle-id>.code_sign_clone/code_sign_clone.XXXXXX` at every launch, and its
/// helpers start from the newest clone while the app runs, not always holding a file in it yet).
///
/// Items of a `code-sign-clones` root are grouped by rule and `bundle` capture. A group whose app
/// runs keeps its newest clone: newest by birth time (a clone is a new inode made at launch),
/// then by newest mtime (clonefile keeps the bundle's mtimes, so these tie across clones of one
/// app version), then by path. The app runs when a process has an executable name found in one of the group's clones
/// (`<App>.app/Contents/MacOS/<name>`, or `<App>` from the bundle dir's name), as
/// [`ProcessProbe::is_running`] answers. A clone that can be read neither way gives no name: a
/// group none of whose clones names its app keeps its newest clone whatever runs (safe default).
/// Symlinks are never followed (an item that is a symlink names nothing).
///
/// The in-use check (an open or mapped file inside the item, [`ProcessProbe::open_file_under`])
/// applies to clones as to every item, before and after this guard.
#[derive(Debug, Default)]
pub struct NewestCloneGuard {
    newest: HashMap<PathBuf, String>,
}

impl NewestCloneGuard {
    /// Finds the newest clone of every running app in `inv`, asking `probe` (already refreshed).
    pub fn new(inv: &Inventory, probe: &dyn ProcessProbe) -> NewestCloneGuard {
        NewestCloneGuard::of_items(inv.items(), probe)
    }

    /// [`NewestCloneGuard::new`] over any items with their roots (those of other roots than
    /// `code-sign-clones` are skipped).
    pub fn of_items<'i>(
        items: impl IntoIterator<Item = (&'i Root, &'i Item)>,
        probe: &dyn ProcessProbe,
    ) -> NewestCloneGuard {
        let mut groups: BTreeMap<(&str, &str), Vec<&Item>> = BTreeMap::new();
        for (root, item) in items {
            if root.kind != RootKind::CodeSignClones {
                continue;
            }
            if let (Some(id), Some(bundle)) = (&item.producer, &item.captures.bundle) {
                groups.entry((id, bundle)).or_default().push(item);
            }
        }
        let mut newest = HashMap::new();
        for ((_, bundle), clones) in groups {
            let mut names: Vec<String> = clones.iter().flat_map(|c| app_names(c)).collect();
            names.sort();
            names.dedup();
            let running = if names.is_empty() {
                Some(bundle.to_owned())
            } else {
                names.into_iter().find(|n| probe.is_running(n))
            };
            let Some(app) = running else { continue };
            let key = |i: &&&Item| (i.measure.birth_time, i.measure.newest_mtime, i.path.clone());
            if let Some(latest) = clones.iter().max_by_key(key) {
                newest.insert(latest.path.clone(), app);
            }
        }
        NewestCloneGuard { newest }
    }

    /// The keep reason of the item at `path`, when it is the newest clone of a running app.
    pub fn keep_reason(&self, path: &Path) -> Option<KeepReason> {
        self.newest
            .get(path)
            .map(|app| KeepReason::NewestCloneOfRunningApp { app: app.clone() })
    }
}

/// Executable names a clone holds: for each dir in it (the cloned bundle: `<App>.app`, or
/// `<App>.app.bundle` as some reports spell it), `<App>` and the entries of its `Contents/MacOS`.
/// Empty for a symlink or an unreadable clone.
fn app_names(clone: &Item) -> Vec<String> {
    let mut out = Vec::new();
    if clone.is_symlink {
        return out;
    }
    let Ok(entries) = std::fs::read_dir(&clone.path) else {
        return out;
    };
    for e in entries.flatten() {
        if !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let name = e.file_name().to_string_lossy().into_owned();
        let macos = e.path().join("Contents/MacOS");
        let real_dir = std::fs::symlink_metadata(&macos).is_ok_and(|m| m.is_dir());
        let inner = real_dir.then(|| std::fs::read_dir(&macos).ok()).flatten();
        let app = name.strip_suffix(".bundle").unwrap_or(&name);
        match (app.strip_suffix(".app"), inner) {
            (Some(app), inner) => {
                out.push(app.to_owned());
                out.extend(inner.into_iter().flatten().flatten().map(file_name));
            }
            (None, Some(inner)) => out.extend(inner.flatten().map(file_name)),
            (None, None) => {}
        }
    }
    out
}

fn file_name(e: std::fs::DirEntry) -> String {
    e.file_name().to_string_lossy().into_owned()
}

/// The owner rule's verdict as a plan's keep reason.
impl OwnerVerdict {
    /// Why the owner keeps the item ([`KeepReason::OwnerAlive`] or [`KeepReason::AppRunning`]);
    /// `None` when the owner rule lets it go.
    pub fn keep_reason(&self) -> Option<KeepReason> {
        match self {
            OwnerVerdict::PidAlive { pid } => Some(KeepReason::OwnerAlive { pid: *pid }),
            OwnerVerdict::NoPid {
                running: Some(name),
            } => Some(KeepReason::AppRunning { name: name.clone() }),
            OwnerVerdict::PidDead { .. }
            | OwnerVerdict::PidReused { .. }
            | OwnerVerdict::NoPid { running: None } => None,
        }
    }
}

#[cfg(test)]
mod code_tests;
