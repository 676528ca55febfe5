//! [`Watching`]: the roots' live states and how they follow the disk. It owns each root's state,
//! its watcher (or its fallback to polling), the debounce's dirty sets, the pace of its polls and
//! rescans, when it last fired a `root-gone` alert, and the pending flushes ([`Flushes`]).
//!
//! In the order a change travels:
//! - here: watch events in ([`Watching::start_watcher`], [`Watching::on_watch`]), each filed into
//!   the root's dirty set for the debounce; when the dirty items are re-measured
//!   ([`Watching::process_dirty`]): at the end of the debounce's quiet time, at once for a flush,
//!   a resume or a reclaim, and rescans the watcher asks for no more often than
//!   [`MIN_RESCAN_GAP`] per root; the items a reclaim deleted ([`Watching::mark_deleted`]);
//! - [`poll`]: roots (and paths) not watched by events, polled paced by their cost;
//! - [`rescan`]: scans and re-measures applied to the roots' states, gone roots;
//! - [`jobs`]: blocking jobs over the roots' states (moved into the job and back);
//! - [`flushes`]: [`MonitorHandle::flush`](crate::monitor::MonitorHandle::flush)'s markers.
//!
//! What a step reaches outside this state (the options, the records, whether paused, the first
//! scan's progress) it is given as an [`Outside`]. Whether the roots changed since the figures
//! last took them is [`Watching::changed`].

mod flushes;
mod jobs;
mod poll;
mod rescan;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use notify::event::{CreateKind, EventKind, ModifyKind, RenameMode};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use crate::dto::{ScanProgressDto, WatchMode};
use crate::monitor::debounce::{Debounce, MAX_DIRTY};
use crate::monitor::pace::Pace;
use crate::monitor::{MonitorOptions, POLL_INTERVAL};
use crate::snapshot::Snapshot;
use crate::watch::live::RootState;
use crate::watch::map::{target_of, Target};
use crate::watch::{is_watch_limit, RootWatcher, WatchMsg};

use super::records::Records;
pub(super) use flushes::Flushes;
pub(super) use jobs::blocking;

/// The info notify's FSEvents backend puts on the event of a `kFSEventStreamEventFlagRootChanged`
/// record.
const ROOT_CHANGED: &str = "root changed";

/// Rescans that the watcher asks for (queue overflow, coalesced events) run at most this often per
/// root outside a flush: a busy temp dir (a build writing into it) would otherwise be rescanned back
/// to back. The changes are not lost: the rescan runs when the gap has passed.
const MIN_RESCAN_GAP: Duration = Duration::from_secs(30);

/// The roots' states and what keeps them following the disk. Only the monitor task touches it.
pub(in crate::monitor::actor) struct Watching {
    /// Each root's live state.
    pub(in crate::monitor::actor) roots: Vec<RootState>,
    watchers: Vec<Option<RootWatcher>>,
    /// When each root was last scanned or polled, and what that cost: the pace of the polls of
    /// polling roots and of the unwatched paths of evented roots.
    pace: Vec<Pace>,
    ev_tx: mpsc::UnboundedSender<WatchMsg>,
    debounce: Debounce,
    /// The flushes waiting for their markers.
    pub(in crate::monitor::actor) flushes: Flushes,
    /// When each root last fired a `root-gone` alert (at most one per root per cooldown).
    root_alerted: Vec<Option<SystemTime>>,
    /// A root was scanned, re-measured or marked gone since the figures last took the roots.
    changed: bool,
}

/// What a step of [`Watching`] reaches outside its own state, borrowed beside it.
pub(in crate::monitor::actor) struct Outside<'a> {
    pub(in crate::monitor::actor) opts: &'a MonitorOptions,
    /// A failed scan's error line, a `root-gone` alert, who writes unattributed entries.
    pub(in crate::monitor::actor) records: &'a mut Records,
    pub(in crate::monitor::actor) paused: bool,
    /// During the first scan only: the progress published while a root is scanned.
    pub(in crate::monitor::actor) shown: Option<Shown<'a>>,
}

/// The first scan's progress and where it is published.
pub(in crate::monitor::actor) struct Shown<'a> {
    pub(in crate::monitor::actor) progress: &'a mut ScanProgressDto,
    pub(in crate::monitor::actor) snap_tx: &'a watch::Sender<Arc<Snapshot>>,
}

impl Shown<'_> {
    /// Publishes the last snapshot again with the current scan progress only (cheap: nothing is
    /// rebuilt), for the entry count that moves during the first scan.
    pub(in crate::monitor::actor) fn publish(&mut self) {
        let progress = self.progress.clone();
        self.snap_tx.send_if_modified(|snap| {
            let changed = snap.scan_progress != progress;
            if changed {
                Arc::make_mut(snap).scan_progress = progress;
            }
            changed
        });
    }
}

// --- Watch events in -----------------------------------------------------------------------------

impl Watching {
    /// The roots of `opts`, none scanned or watched yet; their watchers send to `ev_tx`.
    pub(in crate::monitor::actor) fn new(
        opts: &MonitorOptions,
        ev_tx: mpsc::UnboundedSender<WatchMsg>,
    ) -> Watching {
        let n = opts.roots.len();
        Watching {
            roots: opts.roots.iter().cloned().map(RootState::new).collect(),
            watchers: (0..n).map(|_| None).collect(),
            pace: vec![Pace::new(Instant::now()); n],
            ev_tx,
            debounce: Debounce::new(n, opts.debounce),
            flushes: Flushes::default(),
            root_alerted: vec![None; n],
            changed: false,
        }
    }

    /// True when a root was scanned, re-measured or marked gone since the figures last took the
    /// roots ([`Watching::figures_took`]).
    pub(in crate::monitor::actor) fn changed(&self) -> bool {
        self.changed
    }

    /// The figures were computed from the roots as they are now.
    pub(in crate::monitor::actor) fn figures_took(&mut self) {
        self.changed = false;
    }

    /// Stops every watcher (the monitor shuts down).
    pub(in crate::monitor::actor) fn stop(&mut self) {
        self.watchers.clear();
    }

    /// Watches root `i` by events (the paths below it that cannot be watched are listed in its
    /// state and polled), or falls back to polling it and says why in the snapshot.
    pub(in crate::monitor::actor) fn start_watcher(&mut self, i: usize) {
        let root = self.roots[i].root.clone();
        match RootWatcher::start(i, &root, self.ev_tx.clone()) {
            Ok((w, unwatched)) => {
                self.watchers[i] = Some(w);
                self.roots[i].mode = WatchMode::Events;
                self.roots[i].watch_error = None;
                self.roots[i].unwatched = unwatched.into_iter().map(|u| u.path).collect();
            }
            Err(e) => {
                tracing::warn!(root = %root.canonical.display(), error = %e, "cannot watch root; polling it instead");
                self.watchers[i] = None;
                self.roots[i].mode = WatchMode::Polling;
                self.roots[i].watch_error = Some(e.to_string());
            }
        }
    }

    /// Files one watcher message into the dirty sets.
    pub(in crate::monitor::actor) fn on_watch(&mut self, msg: WatchMsg, out: &mut Outside<'_>) {
        let i = msg.root;
        if i >= self.roots.len() {
            tracing::warn!(root = i, "event for an unknown root index");
            return;
        }
        if self.watchers[i].is_none() {
            // A polling (or gone) root: what its dropped watcher still had queued (often an
            // overflow from the watch walk itself) is covered by the polls; a rescan for it would
            // only repeat the first scan.
            return;
        }
        let event = match msg.event {
            Ok(ev) => ev,
            Err(e) => {
                if is_watch_limit(&e) {
                    tracing::warn!(root = %self.roots[i].root.canonical.display(), error = %e, "out of file watches; polling this root instead");
                    self.watchers[i] = None;
                    self.roots[i].mode = WatchMode::Polling;
                    self.roots[i].watch_error = Some(format!(
                        "the OS limit on file watches was reached ({e}); polling every {}s, less \
                         often when a poll costs more than 1% of that. On Linux raise \
                         /proc/sys/fs/inotify/max_user_watches",
                        POLL_INTERVAL.as_secs()
                    ));
                } else {
                    tracing::warn!(root = %self.roots[i].root.canonical.display(), error = %e, "watch error; rescanning the root");
                }
                self.debounce.root(i).rescan = true;
                self.flushes.rescan_answers(i);
                return;
            }
        };
        if event.need_rescan() {
            tracing::info!(root = %self.roots[i].root.canonical.display(), "the watcher asked for a rescan (event queue overflow or coalesced events)");
            self.debounce.root(i).rescan = true;
            self.flushes.rescan_answers(i);
            return;
        }
        if event.info() == Some(ROOT_CHANGED) {
            // FSEvents' RootChanged: the watched root itself was moved, removed or replaced, so
            // nothing below it can be trusted; gone or not is decided with the rescan.
            tracing::info!(root = %self.roots[i].root.canonical.display(), "the root itself changed; rescanning it");
            self.debounce.root(i).root_touched = true;
            self.debounce.root(i).rescan = true;
            self.flushes.rescan_answers(i);
            return;
        }
        if matches!(event.kind, EventKind::Access(_)) {
            return;
        }
        let discover_kind = matches!(
            event.kind,
            EventKind::Create(CreateKind::Folder | CreateKind::Any | CreateKind::Other)
                | EventKind::Modify(ModifyKind::Name(
                    RenameMode::To | RenameMode::Both | RenameMode::Any
                ))
        );
        for path in &event.paths {
            self.file_path(i, path, discover_kind, out);
        }
        if self.debounce.overflow_to_rescan(i, MAX_DIRTY) {
            tracing::info!(root = %self.roots[i].root.canonical.display(), "too many changed items; rescanning the root instead");
        }
    }

    /// Files `path` (named by an event or found changed by a poll) into root `i`'s dirty set: the
    /// item it changes, and with `discover` (a dir created or moved in), the dir to search for
    /// claimed items. An unattributed entry makes the records want a process-table sample.
    pub(in crate::monitor::actor) fn file_path(
        &mut self,
        i: usize,
        path: &std::path::Path,
        discover: bool,
        out: &mut Outside<'_>,
    ) {
        let catalogue = &out.opts.catalogue;
        let max_depth = catalogue.max_depth(self.roots[i].root.kind);
        match target_of(&self.roots[i].root, catalogue, path) {
            Target::Outside => {}
            Target::Root => self.debounce.root(i).root_touched = true,
            Target::Marker(token) => self.flushes.on_marker(i, &token),
            Target::Item {
                path: item,
                claimed,
                ..
            } => {
                if !claimed {
                    // An unattributed entry appeared or changed: see who runs now.
                    let root = &self.roots[i].root.canonical;
                    out.records.provenance.want_under(root, &item);
                }
                if !claimed && discover && max_depth > 1 {
                    if let Some(rel) = self.roots[i].root.relative(path) {
                        if rel.components().count() < max_depth {
                            let dir = self.roots[i].root.canonical.join(rel);
                            self.debounce.root(i).discover.insert(dir);
                        }
                    }
                }
                self.debounce.root(i).items.insert(item);
            }
        }
    }

    /// Files the deleted items as dirty so the next snapshot has them gone (a large drain turns
    /// into a rescan by the dirty-set bound).
    pub(in crate::monitor::actor) fn mark_deleted(
        &mut self,
        deleted: &[PathBuf],
        opts: &MonitorOptions,
    ) {
        if deleted.len() > MAX_DIRTY {
            self.rescan_all_next();
            return;
        }
        for p in deleted {
            for (i, st) in self.roots.iter().enumerate() {
                if let Target::Item { path, .. } = target_of(&st.root, &opts.catalogue, p) {
                    self.debounce.root(i).items.insert(path);
                }
            }
        }
        for i in 0..self.roots.len() {
            self.debounce.overflow_to_rescan(i, MAX_DIRTY);
        }
    }

    /// Flags every root for a rescan at the next [`Watching::process_dirty`].
    pub(in crate::monitor::actor) fn rescan_all_next(&mut self) {
        for i in 0..self.roots.len() {
            self.debounce.root(i).rescan = true;
        }
    }
}

// --- When the dirty items are re-measured --------------------------------------------------------

impl Watching {
    /// The next time the loop must wake up for the roots: the debounce deadline or a flush
    /// timeout.
    pub(in crate::monitor::actor) fn next_wake(&self) -> Option<Instant> {
        [self.debounce.deadline(), self.flushes.deadline()]
            .into_iter()
            .flatten()
            .min()
    }

    /// After a batch of events: starts the quiet time. True when it is already over.
    pub(in crate::monitor::actor) fn arm(&mut self, now: Instant) -> bool {
        self.debounce.arm(now);
        self.debounce.is_due(now)
    }

    /// True when the quiet time is over (it is then spent).
    pub(in crate::monitor::actor) fn take_due(&mut self, now: Instant) -> bool {
        self.debounce.take_due(now)
    }

    /// Re-measures the dirty items of every root (and rescans flagged roots). Without
    /// `now_please`, a root rescanned less than [`MIN_RESCAN_GAP`] ago keeps its rescan pending
    /// until the gap has passed; a flush, a resume or a reclaim pass `true`. True when a root
    /// changed.
    pub(in crate::monitor::actor) async fn process_dirty(
        &mut self,
        now_please: bool,
        out: &mut Outside<'_>,
    ) -> bool {
        self.debounce.cancel();
        let mut changed = false;
        for i in 0..self.roots.len() {
            let dirty = self.debounce.take(i);
            if dirty.is_empty() {
                continue;
            }
            // The root swapped for a link, removed or replaced: rescanned (or marked gone) now,
            // never re-measured through its path.
            if self.root_moved(i) {
                changed = true;
                self.rescan_root(i, out).await;
                continue;
            }
            let since = self.pace[i].last.elapsed();
            if dirty.rescan && !now_please && since < MIN_RESCAN_GAP {
                let due = Instant::now() + (MIN_RESCAN_GAP - since);
                self.debounce.defer(i, dirty, due);
                continue;
            }
            changed = true;
            if dirty.rescan {
                self.rescan_root(i, out).await;
                continue;
            }
            self.remeasure(i, dirty, out).await;
        }
        if changed {
            self.changed = true;
        }
        changed
    }

    /// Forgets every root's dirty set and rescans every root (a gone root comes back here, or
    /// stays gone: [`Watching::rescan_root`] looks first).
    pub(in crate::monitor::actor) async fn rescan_all(&mut self, out: &mut Outside<'_>) {
        for i in 0..self.roots.len() {
            self.debounce.forget(i);
            self.rescan_root(i, out).await;
        }
    }
}
