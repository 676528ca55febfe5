//! What `cachewatch scan --json` prints: the snapshot's own DTOs of roots, producers and groups,
//! filled from a one-shot scan, and the paths it could not read.

use cachewatch_core::inventory::IssueKind;
use serde::{Deserialize, Serialize};

use super::{ProducerDto, RootDto, UnattributedDto, UnattributedGroupDto};

/// The report of a one-shot scan of the roots.
///
/// The fields a one-shot scan cannot know are empty: a root is not watched (`watch_mode` `off`,
/// no volume figures), a producer has no growth, history, orphans, reclaimable figures nor top
/// items (`reclaim --dry-run` plans a reclaim).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScanReportDto {
    /// One per root, in the order scanned.
    pub roots: Vec<RootDto>,
    /// One per producer with items, largest allocated first.
    pub producers: Vec<ProducerDto>,
    /// Unattributed top-level entries grouped by name shape (unknown producers), per root,
    /// largest allocated first. Their members are not listed in `unattributed`.
    pub unattributed_groups: Vec<UnattributedGroupDto>,
    /// The largest unattributed top-level entries that joined no group (at most `--top`).
    pub unattributed: Vec<UnattributedDto>,
    /// Every path that could not be read.
    pub errors: Vec<ScanErrorDto>,
}

/// A path a scan could not read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScanErrorDto {
    /// The path (lossy text when not UTF-8).
    pub path: String,
    /// Only when `path` is not UTF-8: its exact bytes in base64 ([`super::path_bytes`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<String>,
    /// `permission-denied` or `io`.
    pub kind: IssueKind,
    /// The OS error text.
    pub message: String,
}
