//! Paths that are not UTF-8 in `--json` output, without changing the shape of any field: a path
//! field keeps its text (lossy: each invalid byte as U+FFFD, for people), and when the path is not
//! valid UTF-8 a sibling field `<field>_bytes` carries its exact bytes in standard base64 (with
//! padding), so a script can act on it. A field is only added for such a path, so the JSON of
//! UTF-8 paths is unchanged. (ripgrep's JSON writes `{"text": ...}` or `{"bytes": ...}` instead;
//! that would change every path field of the documented shape.)

use std::path::Path;

use cachewatch::api::reclaim::{DeletedItem, KeepReason, KeptItem, PlannedItem, ReclaimErrorEntry};
use serde::{Serialize, Serializer};

/// The base64 of `p`'s bytes when `p` is not valid UTF-8, else `None` (the engine's
/// [`cachewatch::dto::path_bytes`], which the DTOs' `<field>_bytes` use too).
pub fn of(p: &Path) -> Option<String> {
    cachewatch::dto::path_bytes(p)
}

/// A value whose path fields are known by name: `(field, path)` for each.
pub trait RawPaths {
    /// The value's path fields, as they are named in its JSON.
    fn raw_paths(&self) -> Vec<(&'static str, &Path)>;
}

/// Serializes `T` as it is, plus `<field>_bytes` next to each path field that is not UTF-8.
pub struct WithBytes<T>(pub T);

impl<T: Serialize + RawPaths> Serialize for WithBytes<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let raw: Vec<(&str, String)> = self
            .0
            .raw_paths()
            .into_iter()
            .filter_map(|(field, p)| of(p).map(|b| (field, b)))
            .collect();
        if raw.is_empty() {
            return self.0.serialize(s);
        }
        let mut v = serde_json::to_value(&self.0).map_err(serde::ser::Error::custom)?;
        if let Some(obj) = v.as_object_mut() {
            for (field, b) in raw {
                obj.insert(format!("{field}_bytes"), serde_json::Value::String(b));
            }
        }
        v.serialize(s)
    }
}

/// For a list of paths (`already_gone`): `None` when every one is UTF-8, else one entry per path,
/// in order: its base64 when it is not UTF-8, `null` when it is.
pub fn of_list(ps: &[std::path::PathBuf]) -> Option<Vec<Option<String>>> {
    let v: Vec<Option<String>> = ps.iter().map(|p| of(p)).collect();
    v.iter().any(Option::is_some).then_some(v)
}

impl<T: RawPaths> RawPaths for &T {
    fn raw_paths(&self) -> Vec<(&'static str, &Path)> {
        (**self).raw_paths()
    }
}

impl RawPaths for PlannedItem {
    fn raw_paths(&self) -> Vec<(&'static str, &Path)> {
        vec![("path", &self.path), ("root", &self.root)]
    }
}

impl RawPaths for DeletedItem {
    fn raw_paths(&self) -> Vec<(&'static str, &Path)> {
        vec![("path", &self.path)]
    }
}

impl RawPaths for ReclaimErrorEntry {
    fn raw_paths(&self) -> Vec<(&'static str, &Path)> {
        vec![("path", &self.path)]
    }
}

impl RawPaths for KeptItem {
    fn raw_paths(&self) -> Vec<(&'static str, &Path)> {
        let mut v: Vec<(&'static str, &Path)> = vec![("path", &self.path)];
        // The reason's path, under the name a kept item's JSON flattens it to.
        let reason: Option<(&'static str, &Path)> = match &self.reason {
            KeepReason::InUse { path, .. } => Some(("open_path", path)),
            KeepReason::HoldsRoot { root } => Some(("root", root)),
            KeepReason::HoldsMount { path } => Some(("mount_point", path)),
            KeepReason::HoldsProtected { path } => Some(("protected_path", path)),
            KeepReason::Unreadable { path } => Some(("unreadable_path", path)),
            KeepReason::NotDeletable { path } => Some(("not_writable_path", path)),
            KeepReason::NotChecked { path, .. } => Some(("unchecked_path", path)),
            KeepReason::TooYoung { .. }
            | KeepReason::OwnerAlive { .. }
            | KeepReason::AppRunning { .. }
            | KeepReason::Never
            | KeepReason::Manual
            | KeepReason::Structure
            | KeepReason::Changed { .. }
            | KeepReason::UnknownProducer
            | KeepReason::NewestCloneOfRunningApp { .. }
            | KeepReason::NewestVersion { .. }
            | KeepReason::StagedUpdate { .. } => None,
        };
        v.extend(reason);
        v
    }
}
