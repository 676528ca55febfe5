//! [`ScanProgress`]: what a running scan shares with whoever watches it (entries walked so far)
//! and how it is asked to stop.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Mutex;
use std::time::Duration;

use super::shard::Count;

/// How long a scan may count no new entry before it is reported as stalled.
pub(crate) const STALL_AFTER: Duration = Duration::from_secs(60);

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
    /// The big dirs (listed in batches) being listed now: what a stall report names.
    busy: Mutex<Vec<PathBuf>>,
}

/// A scan that counted no new entry for a while: what [`watch_stalls`] reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stall {
    /// How long no entry was counted.
    pub(crate) for_: Duration,
    /// Entries counted so far.
    pub(crate) entries: u64,
    /// The big dirs being listed, in the order their listing began (empty: the walk is in none).
    pub(crate) dirs: Vec<PathBuf>,
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

    /// The big dirs being listed now (see [`Stall::dirs`]).
    pub fn busy_dirs(&self) -> Vec<PathBuf> {
        self.busy.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Marks the big dir at `path` as being listed until the guard is dropped.
    pub(crate) fn listing(&self, path: PathBuf) -> Busy<'_> {
        let mut busy = self.busy.lock().unwrap_or_else(|p| p.into_inner());
        busy.push(path.clone());
        Busy {
            progress: self,
            path,
        }
    }

    pub(crate) fn add_entries(&self, n: u64) {
        self.entries.add(n);
    }

    pub(crate) fn add_item(&self) {
        self.items.add(1);
    }
}

/// A big dir being listed; its listing ended when dropped.
pub(crate) struct Busy<'a> {
    progress: &'a ScanProgress,
    path: PathBuf,
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        let mut busy = self.progress.busy.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(i) = busy.iter().position(|p| *p == self.path) {
            busy.remove(i);
        }
    }
}

/// Runs `scan` while a thread of its own (outside the scan's pool) checks `progress` every
/// `every`: each time no new entry was counted since the last check, `on_stall` hears of it (how
/// long, how many entries so far, the big dirs being listed). A scan never stalls silently.
/// `scan`'s result.
pub(crate) fn watch_stalls<R>(
    progress: &ScanProgress,
    every: Duration,
    on_stall: impl Fn(&Stall) + Send,
    scan: impl FnOnce() -> R,
) -> R {
    let (done, wait) = mpsc::channel::<()>();
    std::thread::scope(|s| {
        let watcher = std::thread::Builder::new()
            .name("cachewatch-scan-stall".into())
            .spawn_scoped(s, move || {
                let mut last = progress.entries();
                let mut still = Duration::ZERO;
                loop {
                    match wait.recv_timeout(every) {
                        Err(RecvTimeoutError::Timeout) => {}
                        _ => return,
                    }
                    let now = progress.entries();
                    if now != last {
                        (last, still) = (now, Duration::ZERO);
                        continue;
                    }
                    still += every;
                    on_stall(&Stall {
                        for_: still,
                        entries: now,
                        dirs: progress.busy_dirs(),
                    });
                }
            });
        if let Err(e) = &watcher {
            tracing::debug!("scan runs without its stall watch: {e}");
        }
        let r = scan();
        drop(done);
        r
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A scan that counts nothing while it lists a big dir is reported, again and again, naming
    /// the dir.
    #[test]
    fn a_scan_that_counts_nothing_is_reported_with_the_dirs_it_is_in() {
        let progress = ScanProgress::new();
        let stalls = Mutex::new(Vec::new());
        let every = Duration::from_millis(20);
        watch_stalls(
            &progress,
            every,
            |s| stalls.lock().unwrap().push(s.clone()),
            || {
                let _busy = progress.listing(PathBuf::from("/tmp/big"));
                // Wait (outside any pool) until the watch has reported twice.
                while stalls.lock().unwrap().len() < 2 {
                    std::thread::sleep(every);
                }
            },
        );
        let stalls = stalls.into_inner().unwrap();
        assert_eq!(stalls[0].dirs, [PathBuf::from("/tmp/big")]);
        assert_eq!(stalls[0].entries, 0);
        assert!(stalls[1].for_ > stalls[0].for_);
        assert!(progress.busy_dirs().is_empty(), "the dir's listing ended");
    }
}
