//! A root's live inventory turned back into a [`RootScan`], for reclaim plans and figures.

use crate::inventory::RootScan;

use super::{Entry, RootState};

impl RootState {
    /// The whole root as a [`RootScan`] (for a dry reclaim plan or a one-off summary). O(items).
    pub fn to_root_scan(&self) -> RootScan {
        self.to_root_scan_where(|_| true)
    }

    /// The root as a [`RootScan`] holding only the items `keep` accepts. O(items).
    pub fn to_root_scan_where(&self, keep: impl Fn(&Entry) -> bool) -> RootScan {
        RootScan {
            root: self.root.clone(),
            total: self.total,
            items: self
                .entries
                .iter()
                .filter(|(_, e)| keep(e))
                .map(|(rel, e)| self.item_at(rel, e))
                .collect(),
            issues: self.issues.clone(),
            vanished: 0,
            non_utf8_names: 0,
            other_device: 0,
        }
    }
}
