//! `impl` [`Watching`]: applying the file system to the roots' states: full scans (the first one,
//! rescans), re-measures of dirty items, and roots that are removed and come back. State: the
//! roots' states, watchers, pace, dirty sets and `root-gone` alert times.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::time::Instant;

use crate::dto::{RootStatus, WatchMode};
use crate::monitor::debounce::Dirty;
use crate::monitor::measure::measure_batch;
use crate::watch::live::RootState;
use crate::watch::presence::{explain, probe, swapped};

use super::{blocking, Outside, Shown, Watching};

/// How often the first scan's entry count is published while a root is scanned.
const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Items in flight between a scan's walk and the state (each about 200 bytes with its path).
const HANDOFF: usize = 1024;

/// Runs `scan` (a streaming scan, given the visitor of its items) on a thread of its own and loads
/// each item into `st` on this one: the state's memory is then allocated by one thread, apart from
/// the walk's short-lived buffers (allocated by the walk's threads, each with its own malloc arena),
/// so that the pages those free can go back to the OS after the scan instead of staying pinned by
/// the state's allocations among them. The channel is bounded: a walk faster than the loading
/// waits.
fn load_scan<R: Send>(
    st: &mut RootState,
    scan: impl FnOnce(&mut (dyn FnMut(crate::scan::Found) + Send)) -> R + Send,
) -> R {
    let (tx, rx) = std::sync::mpsc::sync_channel(HANDOFF);
    std::thread::scope(|s| {
        let walk = std::thread::Builder::new()
            .name("cachewatch-scan".into())
            .spawn_scoped(s, move || {
                let mut visit = |item| {
                    if tx.send(item).is_err() {
                        tracing::debug!("scan item after the loader stopped");
                    }
                };
                scan(&mut visit)
            });
        let walk = match walk {
            Ok(w) => w,
            Err(e) => panic!("cannot start a scan thread: {e}"),
        };
        for found in rx {
            match found {
                crate::scan::Found::Item(item) => st.load_item(&item),
                crate::scan::Found::Nested(g) => {
                    let inside_root = g
                        .within
                        .as_ref()
                        .is_some_and(|w| st.root.in_nested(w.as_ref()));
                    if !inside_root {
                        st.set_nested(g);
                    }
                }
            }
        }
        match walk.join() {
            Ok(r) => r,
            Err(p) => std::panic::resume_unwind(p),
        }
    })
}

impl Watching {
    /// Scans root `i` afresh and replaces its state. The scan streams ([`crate::scan::scan_root_each`]):
    /// each item goes into the compact state as soon as it is measured, so the scan's item list is
    /// never held. The state moves into the blocking job and back; a scan that panicked is logged
    /// and kept as an error line, and the root starts empty until its next scan.
    ///
    /// The root's path is looked at first, no link followed ([`probe`]): one that no longer
    /// leads to a real dir is marked gone instead ([`Watching::mark_gone`]); a root that was gone and
    /// is back, or whose dir was swapped for another at the same path, is watched afresh.
    pub(in crate::monitor::actor) async fn rescan_root(&mut self, i: usize, out: &mut Outside<'_>) {
        let now_there = probe(&self.roots[i].root.canonical);
        if now_there.status != RootStatus::Ok {
            self.mark_gone(i, now_there.status, out).await;
            return;
        }
        let st = &self.roots[i];
        let watch_afresh = if st.gone() {
            tracing::info!(root = %st.root.canonical.display(), "root is back; watching and rescanning it");
            true
        } else if swapped(st.identity, now_there.identity) {
            tracing::warn!(root = %st.root.canonical.display(), "the root dir was replaced by another dir; watching and rescanning the new one");
            true
        } else {
            false
        };
        if watch_afresh {
            self.start_watcher(i);
            self.debounce.forget(i);
        }
        self.roots[i].status = RootStatus::Ok;
        self.roots[i].identity = now_there.identity;
        let root = self.roots[i].root.clone();
        let catalogue = out.opts.catalogue.clone();
        let started = Instant::now();
        let now = out.opts.clock.now();
        let st = std::mem::replace(&mut self.roots[i], RootState::new(root.clone()));
        let progress = Arc::new(crate::scan::ScanProgress::new());
        let walked = progress.clone();
        // The scan's buffers are freed at its end: their pages go back to the OS.
        let job = blocking(st, true, move |st| {
            st.begin_load();
            let root = st.root.clone();
            let summary = load_scan(st, |visit| {
                crate::scan::scan_root_each_found(&root, &*catalogue, &walked, visit)
            });
            st.finish_load(summary.total, summary.issues, now);
        });
        let res = await_scan(job, &progress, out.shown.as_mut()).await;
        let failed = match res {
            Ok((st, done)) => {
                self.roots[i] = st;
                done.err().map(|_| "the scan panicked".to_owned())
            }
            Err(e) => Some(e.to_string()),
        };
        match failed {
            None => {
                self.pace[i].scanned(Instant::now(), started.elapsed());
                tracing::info!(
                    root = %self.roots[i].root.canonical.display(),
                    items = self.roots[i].item_count(),
                    allocated_bytes = self.roots[i].total.allocated_bytes,
                    ms = started.elapsed().as_millis() as u64,
                    "scanned root"
                );
            }
            Some(e) => {
                // Tried again as a full rescan at the next poll, not at every tick.
                self.pace[i].tried(Instant::now());
                tracing::error!(root = %self.roots[i].root.canonical.display(), error = %e, "scan of root failed");
                self.roots[i].clear();
                out.records
                    .recorder
                    .error(format!("scan of {:?} failed: {e}", self.roots[i].root.path));
            }
        }
        self.changed = true;
    }
}

/// Waits for the scan `job`; during the first scan (`shown`), publishes the entries `progress`
/// has counted once per [`PROGRESS_EVERY`] while it runs (the window's "N entries so far" moves
/// inside a big root, not only when a root is done). Rescans after the first publish nothing here.
/// The job's result.
async fn await_scan<T>(
    job: impl std::future::Future<Output = Result<T, tokio::task::JoinError>>,
    progress: &crate::scan::ScanProgress,
    mut shown: Option<&mut Shown<'_>>,
) -> Result<T, tokio::task::JoinError> {
    tokio::pin!(job);
    let base = shown.as_ref().map_or(0, |s| s.progress.entries_done);
    let mut tick = tokio::time::interval(PROGRESS_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let res = loop {
        tokio::select! {
            res = &mut job => break res,
            _ = tick.tick(), if shown.is_some() => {
                if let Some(s) = shown.as_mut() {
                    s.progress.entries_done = base + progress.entries();
                    s.publish();
                }
            }
        }
    };
    if let Some(s) = shown {
        s.progress.entries_done = base + progress.entries();
    }
    res
}

impl Watching {
    /// Re-measures the dirty items of root `i` (off the async threads) and applies them; a failed
    /// re-measure rescans the root.
    /// A root whose path no longer leads to the dir scanned is rescanned instead (which marks it
    /// gone when it is not a real dir): nothing is measured through a link.
    pub(super) async fn remeasure(&mut self, i: usize, dirty: Dirty, out: &mut Outside<'_>) {
        if self.root_moved(i) {
            self.rescan_root(i, out).await;
            return;
        }
        let root = self.roots[i].root.clone();
        let catalogue = out.opts.catalogue.clone();
        let mut items = dirty.items;
        let tops = self.roots[i].tops_to_rebase(&items);
        items.extend(tops);
        let items: Vec<PathBuf> = items.into_iter().collect();
        let discover: Vec<PathBuf> = dirty.discover.into_iter().collect();
        let res = tokio::task::spawn_blocking(move || {
            measure_batch(&root, &catalogue, &items, &discover)
        })
        .await;
        let measured = match res {
            Ok(m) => m,
            Err(e) => {
                tracing::error!(error = %e, "re-measure failed; rescanning the root");
                self.rescan_root(i, out).await;
                return;
            }
        };
        let st = &mut self.roots[i];
        for (path, _, _, _) in &measured {
            if let Some(rel) = st.root.relative(path).map(Path::to_path_buf) {
                st.restat_ancestors(&rel);
            }
        }
        if dirty.root_touched {
            st.restat_ancestors(Path::new("x"));
        }
        for (path, item, own, nested) in measured {
            // What the children of a top-level dir form is what its last measure found.
            let measured_path = item.as_ref().map_or(path.as_path(), |it| it.path.as_path());
            if let Some(rel) = st.root.relative(measured_path) {
                let mut parts = rel.components();
                if let (Some(std::path::Component::Normal(top)), None) =
                    (parts.next(), parts.next())
                {
                    st.replace_nested(top, nested);
                }
            }
            let is_dir = item
                .as_ref()
                .is_some_and(|it| it.measure.dirs > 0 && !it.is_symlink);
            match item {
                Some(item) => {
                    st.apply(&path, Some(item));
                }
                None => {
                    // Gone, or a structure dir holding only claimed items: those are kept, and its
                    // own entry is counted (as the measure saw it) in the root total.
                    let rel = st.root.relative(&path).map(Path::to_path_buf);
                    let top = own.iter().find(|(r, _, _)| Some(r) == rel.as_ref());
                    st.apply_not_item(&path, top.map(|&(_, s, _)| s));
                }
            }
            // The own entries that the measure of a top-level dir counted (its own, and those of
            // the dirs below it on the way to claimed items) become the baselines that later
            // changes below them are compared with (see `restat_ancestors`).
            if is_dir {
                for (rel, stat, keep) in own {
                    if keep {
                        st.set_dir_stat(&rel, Some(stat));
                    } else {
                        st.replace_dir_stat(&rel, stat);
                    }
                }
            }
        }
    }

    /// True when root `i`'s path no longer leads to the dir last scanned: not a real dir any more
    /// (or one on its way is a link), or another dir on the same device ([`swapped`]). A gone
    /// root has not moved (it stays gone).
    pub(super) fn root_moved(&self, i: usize) -> bool {
        let st = &self.roots[i];
        if st.gone() {
            return false;
        }
        let now_there = probe(&st.root.canonical);
        now_there.status != RootStatus::Ok || swapped(st.identity, now_there.identity)
    }

    /// Root `i`'s path no longer leads to a real dir (`status`): empties its state (its figures
    /// are zero: what was counted is not under the root any more, and nothing is read through a
    /// link), stops watching it, says why in the snapshot. Entering that state is logged and fires
    /// a `root-gone` alert (not while paused, at most once per root within the alerts' cooldown).
    async fn mark_gone(&mut self, i: usize, status: RootStatus, out: &mut Outside<'_>) {
        let was = self.roots[i].status;
        let st = &mut self.roots[i];
        st.status = status;
        st.identity = None;
        st.clear();
        st.mode = WatchMode::Off;
        st.watch_error = Some(explain(status).to_owned());
        self.watchers[i] = None;
        self.debounce.forget(i);
        self.changed = true;
        if was == status {
            return;
        }
        let st = &self.roots[i];
        tracing::warn!(
            root = %st.root.canonical.display(),
            state = status.as_str(),
            "watched root gone: {}",
            explain(status)
        );
        let now = out.opts.clock.now();
        let quiet = self.root_alerted[i]
            .is_some_and(|t| now.duration_since(t).unwrap_or_default() < out.opts.alerts.cooldown);
        if out.paused || quiet {
            return;
        }
        self.root_alerted[i] = Some(now);
        let alert = crate::alerts::Alert {
            rule: crate::alerts::AlertRule::RootGone,
            producer: None,
            title: "Watched root gone".to_owned(),
            message: format!(
                "The {} root {}: {}.",
                st.root.kind,
                st.root.path.display(),
                explain(status)
            ),
            time: now,
        };
        out.records.raise(vec![alert.to_dto(0)], now).await;
    }

    /// Looks at every root's path (no link followed): a root that no longer leads to a real dir
    /// is marked gone, one that was gone and is a real dir again (or whose dir was swapped for
    /// another) is watched and rescanned. True when one changed.
    pub(in crate::monitor::actor) async fn check_roots(&mut self, out: &mut Outside<'_>) -> bool {
        let mut changed = false;
        for i in 0..self.roots.len() {
            let st = &self.roots[i];
            let now_there = probe(&st.root.canonical);
            let act = if now_there.status == RootStatus::Ok {
                st.gone() || swapped(st.identity, now_there.identity)
            } else {
                now_there.status != st.status
            };
            if act {
                changed = true;
                self.rescan_root(i, out).await;
            }
        }
        changed
    }
}
