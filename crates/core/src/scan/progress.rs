//! [`ScanProgress`]: what a running scan shares with whoever watches it (entries walked so far)
//! and how it is asked to stop.

use std::sync::atomic::{AtomicBool, Ordering};

use super::shard::Count;

/// Progress and cancel of a running scan, shared between the scan and its watcher (e.g. the app's
/// "scanned 420,000 entries" line and its Cancel button). One value may serve several roots in a
/// row: the counters keep growing across them.
///
/// - [`ScanProgress::entries`] counts entries listed so far (files, dirs and symlinks, the roots'
///   own entries left out), updated inside a root at least once per dir listed and once per 256
///   entries of a big dir, not only once per finished root;
/// - [`ScanProgress::items`] counts items finished so far (handed to the visitor);
/// - [`ScanProgress::cancel`] asks the walk to stop: it is checked before each dir is listed, so
///   a cancelled scan returns within one dir's listing, with partial totals and
///   [`super::RootSummary::cancelled`] set.
///
/// All counters are relaxed atomics, one per walk thread (summed when read): cheap to update from
/// the walk threads, read at any time.
#[derive(Debug, Default)]
pub struct ScanProgress {
    entries: Count,
    items: Count,
    cancelled: AtomicBool,
}

impl ScanProgress {
    /// A fresh progress: nothing counted, not cancelled.
    pub fn new() -> ScanProgress {
        ScanProgress::default()
    }

    /// Entries listed so far (a count, not bytes).
    pub fn entries(&self) -> u64 {
        self.entries.get()
    }

    /// Items finished so far (a count).
    pub fn items(&self) -> u64 {
        self.items.get()
    }

    /// Asks the scan to stop before its next dir. Cannot be undone.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }

    /// True once [`ScanProgress::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }

    pub(crate) fn add_entries(&self, n: u64) {
        self.entries.add(n);
    }

    pub(crate) fn add_item(&self) {
        self.items.add(1);
    }
}
