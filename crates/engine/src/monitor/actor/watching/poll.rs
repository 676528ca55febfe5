//! `impl` [`Watching`]: the roots (and paths) not watched by events. The poll of a polling root
//! re-measures only what moved ([`RootState::poll_dirs`](crate::watch::live::RootState::poll_dirs))
//! and now and then rescans in full, each paced by its cost ([`crate::monitor::pace`]); the paths
//! of an evented root whose watch failed are tried again every
//! [`POLL_INTERVAL`](crate::monitor::POLL_INTERVAL). State: the roots' states, watchers, pace and
//! dirty sets.

use tokio::time::Instant;

use crate::dto::WatchMode;
use crate::monitor::POLL_RECENT;
use crate::watch::live::PollScope;

use super::{Outside, Watching};

impl Watching {
    /// Polls the roots that are due: polling roots by [`Watching::poll_root`], evented roots with
    /// unwatched paths by [`Watching::retry_unwatched`]. True when a root changed.
    pub(in crate::monitor::actor) async fn poll_due(&mut self, out: &mut Outside<'_>) -> bool {
        let mut changed = false;
        for i in 0..self.roots.len() {
            if out.paused || !self.pace[i].poll_due(Instant::now()) || self.roots[i].gone() {
                continue;
            }
            match self.roots[i].mode {
                WatchMode::Polling => changed |= self.poll_root(i, out).await,
                WatchMode::Events if !self.roots[i].unwatched.is_empty() => {
                    changed |= self.retry_unwatched(i, out).await;
                }
                _ => {}
            }
        }
        changed
    }

    /// One poll of polling root `i`: the items whose top entry moved and the new entries of the
    /// dirs whose mtime moved are re-measured, as if events had named them; when a full rescan is
    /// due ([`crate::monitor::pace`]), the poll is one. The poll re-stats every item when a sweep
    /// is due, else only those written within [`POLL_RECENT`]. True when something was
    /// re-measured.
    async fn poll_root(&mut self, i: usize, out: &mut Outside<'_>) -> bool {
        if self.pace[i].full_due(Instant::now()) || self.root_moved(i) {
            self.rescan_root(i, out).await;
            return true;
        }
        let root = self.roots[i].root.clone();
        let sweep = self.pace[i].sweep_due(Instant::now());
        let scope = if sweep {
            PollScope::Every
        } else {
            // A clock before 1970 + an hour: every item is recent.
            let now = out.opts.clock.now();
            now.checked_sub(POLL_RECENT)
                .map_or(PollScope::Every, PollScope::WrittenSince)
        };
        let started = Instant::now();
        let report = match self.with_root(i, move |st| st.poll_dirs(scope)).await {
            Ok(report) => report.ok(),
            Err(_) => None,
        };
        self.pace[i].polled(Instant::now(), started.elapsed(), sweep);
        let Some(report) = report else {
            tracing::error!(root = %root.canonical.display(), "poll failed; rescanning the root");
            self.rescan_root(i, out).await;
            return true;
        };
        let changed = report.changed.len();
        for path in &report.changed {
            self.file_path(i, path, true, out);
        }
        let dirty = self.debounce.take(i);
        let remeasured = !dirty.is_empty();
        if remeasured {
            self.remeasure(i, dirty, out).await;
            self.changed = true;
        }
        // A sweep, or a poll that found something, is worth a line; a quiet poll of the recent
        // items, once a minute, is not.
        if sweep || changed > 0 {
            tracing::info!(
                root = %root.canonical.display(),
                sweep,
                stats = report.stats,
                skipped = report.skipped,
                listed = report.listed,
                changed,
                ms = started.elapsed().as_millis() as u64,
                next_in_secs = self.pace[i].poll_interval().as_secs(),
                next_sweep_in_secs = self.pace[i].sweep_interval().as_secs(),
                "polled root"
            );
        } else {
            tracing::debug!(
                root = %root.canonical.display(),
                stats = report.stats,
                skipped = report.skipped,
                ms = started.elapsed().as_millis() as u64,
                "polled the root's recent items; nothing moved"
            );
        }
        remeasured
    }

    /// Tries again to watch the unwatched paths of evented root `i`; a path that can be watched now
    /// has its item re-measured. True when one could.
    async fn retry_unwatched(&mut self, i: usize, out: &mut Outside<'_>) -> bool {
        self.pace[i].tried(Instant::now());
        if self.root_moved(i) {
            self.rescan_root(i, out).await;
            return true;
        }
        let Some(w) = self.watchers[i].as_mut() else {
            return false;
        };
        let mut still = Vec::new();
        let mut back = Vec::new();
        for path in std::mem::take(&mut self.roots[i].unwatched) {
            match w.watch_again(&path) {
                Ok(rest) => {
                    still.extend(rest.into_iter().map(|u| u.path));
                    back.push(path);
                }
                Err(e) => {
                    tracing::debug!(path = %path.display(), error = %e, "still cannot watch");
                    still.push(path);
                }
            }
        }
        self.roots[i].unwatched = still;
        if back.is_empty() {
            return false;
        }
        for path in &back {
            tracing::info!(path = %path.display(), "watching a path again");
            self.file_path(i, path, true, out);
        }
        let dirty = self.debounce.take(i);
        self.remeasure(i, dirty, out).await;
        self.changed = true;
        true
    }
}
