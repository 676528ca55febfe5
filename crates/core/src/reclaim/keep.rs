//! Why [`plan`](super::plan) or [`execute`](super::execute) kept an item.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::path_text;

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
}

impl std::fmt::Display for KeepReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeepReason::TooYoung {
                age_secs,
                needed_secs,
            } => write!(f, "too young: {age_secs} s old, needs {needed_secs} s"),
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
        }
    }
}
