//! The JSON document of `cachewatch reclaim --json`, its item lists streamed from the plan's
//! spools (read back while serializing), never held whole.

use std::path::PathBuf;

use cachewatch::api::reclaim::{
    self, DeletedItem, KeptItem, ReclaimErrorEntry, Spool, StreamedPlan,
};
use serde::ser::{Error as _, SerializeSeq};
use serde::{Serialize, Serializer};

use crate::path_bytes::{RawPaths, WithBytes};

/// The JSON document of `cachewatch reclaim --json`.
#[derive(Serialize)]
pub struct ReclaimJson<'a> {
    /// True when asked for a dry run.
    pub dry_run: bool,
    /// True when the plan was executed (`--yes` or a "y" answer).
    pub executed: bool,
    /// The age threshold used, seconds.
    pub older_than_secs: u64,
    /// What the plan would delete.
    pub planned: Planned<'a>,
    /// For each planned producer whose tool manages its cache, the tool's own clean-up command
    /// (`go clean -cache`): the better first step than deleting its entries.
    pub managed_by: std::collections::BTreeMap<String, String>,
    /// Deleted items (empty unless executed).
    pub deleted: Deleted<'a>,
    /// Kept items with the reason: at planning, then at the re-check before deleting.
    pub kept: Kept<'a>,
    /// Items gone before they could be deleted (not an error).
    #[serde(serialize_with = "reclaim::path_text::many::serialize")]
    pub already_gone: &'a [PathBuf],
    /// Only when a path of `already_gone` is not UTF-8: per path, in order, the base64 of its
    /// bytes, or null for a UTF-8 one ([`crate::path_bytes`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub already_gone_bytes: Option<Vec<Option<String>>>,
    /// Allocated bytes freed.
    pub freed_bytes: u64,
    /// Items that could not be deleted, and audit rows that could not be written.
    #[serde(serialize_with = "with_bytes")]
    pub errors: Vec<ReclaimErrorEntry>,
}

/// Each entry with `path_bytes` when its path is not UTF-8 ([`crate::path_bytes`]).
fn with_bytes<S: Serializer>(v: &[ReclaimErrorEntry], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(v.iter().map(WithBytes))
}

/// The plan's items, serialized as a list read from its spool.
pub struct Planned<'a>(pub &'a StreamedPlan);

/// The deleted items, serialized as a list read from their spool.
pub struct Deleted<'a>(pub &'a Spool<DeletedItem>);

/// The items kept at planning (from the plan's spool), then those kept at the re-check.
pub struct Kept<'a>(pub &'a StreamedPlan, pub &'a [KeptItem]);

/// The items as a list, each with `<field>_bytes` next to a path field that is not UTF-8
/// ([`crate::path_bytes`]).
fn seq<S, T, I>(s: S, len: u64, items: I) -> Result<S::Ok, S::Error>
where
    S: Serializer,
    T: Serialize + RawPaths,
    I: Iterator<Item = std::io::Result<T>>,
{
    let mut out = s.serialize_seq(usize::try_from(len).ok())?;
    for item in items {
        let item = item.map_err(|e| S::Error::custom(format!("reading the plan back: {e}")))?;
        out.serialize_element(&WithBytes(item))?;
    }
    out.end()
}

impl Serialize for Planned<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        seq(s, self.0.summary.planned_items, self.0.planned())
    }
}

impl Serialize for Deleted<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        seq(s, self.0.len(), self.0.iter())
    }
}

impl Serialize for Kept<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let later = self.1.iter().cloned().map(Ok);
        let len = self.0.summary.kept_items + self.1.len() as u64;
        seq(s, len, self.0.kept().chain(later))
    }
}
