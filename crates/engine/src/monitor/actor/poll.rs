//! Roots (and paths) that are not watched by events: the poll of a polling root, which re-measures
//! only what moved ([`RootState::poll_dirs`]) and rescans in full every [`POLL_FULL_EVERY`]th
//! time, and the paths of an evented root whose watch failed, tried again every
//! [`POLL_INTERVAL`].

use tokio::time::Instant;

use crate::dto::WatchMode;
use crate::watch::state::RootState;

use super::super::{POLL_FULL_EVERY, POLL_INTERVAL};
use super::Actor;

impl Actor {
    /// Polls the roots that are due: polling roots by [`Actor::poll_root`], evented roots with
    /// unwatched paths by [`Actor::retry_unwatched`]. True when a root changed.
    pub(super) async fn poll_due(&mut self) -> bool {
        let mut changed = false;
        for i in 0..self.roots.len() {
            if self.paused || self.last_poll[i].elapsed() < POLL_INTERVAL || self.roots[i].gone {
                continue;
            }
            match self.roots[i].mode {
                WatchMode::Polling => {
                    self.poll_root(i).await;
                    changed = true;
                }
                WatchMode::Events if !self.roots[i].unwatched.is_empty() => {
                    changed |= self.retry_unwatched(i).await;
                }
                _ => {}
            }
        }
        changed
    }

    /// One poll of polling root `i`: the items whose top entry moved and the new entries of the
    /// dirs whose mtime moved are re-measured, as if events had named them; every
    /// [`POLL_FULL_EVERY`]th poll is a full rescan.
    pub(super) async fn poll_root(&mut self, i: usize) {
        self.polls[i] += 1;
        if self.polls[i] % POLL_FULL_EVERY == 0 {
            self.rescan_root(i).await;
            return;
        }
        let root = self.roots[i].root.clone();
        let mut st = std::mem::replace(&mut self.roots[i], RootState::new(root.clone()));
        let started = Instant::now();
        let res = tokio::task::spawn_blocking(move || {
            let report = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| st.poll_dirs()));
            (st, report)
        })
        .await;
        let report = match res {
            Ok((st, report)) => {
                self.roots[i] = st;
                report.ok()
            }
            Err(_) => None,
        };
        self.last_poll[i] = Instant::now();
        let Some(report) = report else {
            tracing::error!(root = %root.canonical.display(), "poll failed; rescanning the root");
            self.rescan_root(i).await;
            return;
        };
        let changed = report.changed.len();
        for path in &report.changed {
            self.file_path(i, path, true);
        }
        let dirty = self.debounce.take(i);
        if !dirty.is_empty() {
            self.remeasure(i, dirty).await;
            self.analysis_stale = true;
        }
        tracing::info!(
            root = %root.canonical.display(),
            stats = report.stats,
            listed = report.listed,
            changed,
            ms = started.elapsed().as_millis() as u64,
            "polled root"
        );
    }

    /// Tries again to watch the unwatched paths of evented root `i`; a path that can be watched now
    /// has its item re-measured. True when one could.
    pub(super) async fn retry_unwatched(&mut self, i: usize) -> bool {
        self.last_poll[i] = Instant::now();
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
            self.file_path(i, path, true);
        }
        let dirty = self.debounce.take(i);
        self.remeasure(i, dirty).await;
        self.analysis_stale = true;
        true
    }
}
