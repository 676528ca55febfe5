//! From a change on disk to a re-measure, in the order a change travels:
//! - watch events in ([`Actor::start_watcher`], [`Actor::on_watch`]): each root's watcher (or its
//!   fallback to polling), and every event filed into the root's dirty set for the debounce;
//! - when the dirty items are re-measured ([`Actor::process_dirty`]): at the end of the
//!   debounce's quiet time, at once for a flush, a resume or a reclaim, and rescans the watcher
//!   asks for no more often than [`MIN_RESCAN_GAP`] per root;
//! - roots (and paths) that are not watched by events ([`Actor::poll_root`],
//!   [`Actor::retry_unwatched`]): the poll of a polling root, which re-measures only what moved
//!   ([`RootState::poll_dirs`](crate::watch::live::RootState::poll_dirs)) and now and then rescans
//!   in full, each paced by its cost ([`super::super::pace`]), and the paths of an evented root
//!   whose watch failed, tried again every [`POLL_INTERVAL`];
//! - [`MonitorHandle::flush`](super::super::MonitorHandle::flush) ([`Actor::start_flush`]): a
//!   marker file written into each evented root, answered once every marker's event came back
//!   (everything before it has then arrived) and the dirty items are re-measured, or with a
//!   timeout after [`FLUSH_TIMEOUT`].
//!
//! Applying the re-measures and scans to the roots' states is [`super::update`]'s.

use std::collections::BTreeSet;
use std::time::Duration;

use notify::event::{CreateKind, EventKind, ModifyKind, RenameMode};
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::dto::WatchMode;
use crate::watch::live::PollScope;
use crate::watch::map::{target_of, Target, FLUSH_MARKER_PREFIX};
use crate::watch::{is_watch_limit, RootWatcher, WatchMsg};

use super::super::debounce::MAX_DIRTY;
use super::super::{MonitorError, FLUSH_TIMEOUT, POLL_INTERVAL, POLL_RECENT};
use super::Actor;

// --- Watch events in -----------------------------------------------------------------------------

/// The info notify's FSEvents backend puts on the event of a `kFSEventStreamEventFlagRootChanged`
/// record.
const ROOT_CHANGED: &str = "root changed";

impl Actor {
    /// Watches root `i` by events (the paths below it that cannot be watched are listed in its
    /// state and polled), or falls back to polling it and says why in the snapshot.
    pub(super) fn start_watcher(&mut self, i: usize) {
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
    pub(super) fn on_watch(&mut self, msg: WatchMsg) {
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
                self.rescan_answers_flushes(i);
                return;
            }
        };
        if event.need_rescan() {
            tracing::info!(root = %self.roots[i].root.canonical.display(), "the watcher asked for a rescan (event queue overflow or coalesced events)");
            self.debounce.root(i).rescan = true;
            self.rescan_answers_flushes(i);
            return;
        }
        if event.info() == Some(ROOT_CHANGED) {
            // FSEvents' RootChanged: the watched root itself was moved, removed or replaced, so
            // nothing below it can be trusted; gone or not is decided with the rescan.
            tracing::info!(root = %self.roots[i].root.canonical.display(), "the root itself changed; rescanning it");
            self.debounce.root(i).root_touched = true;
            self.debounce.root(i).rescan = true;
            self.rescan_answers_flushes(i);
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
            self.file_path(i, path, discover_kind);
        }
        if self.debounce.overflow_to_rescan(i, MAX_DIRTY) {
            tracing::info!(root = %self.roots[i].root.canonical.display(), "too many changed items; rescanning the root instead");
        }
    }

    /// Files `path` (named by an event or found changed by a poll) into root `i`'s dirty set: the
    /// item it changes, and with `discover` (a dir created or moved in), the dir to search for
    /// claimed items.
    pub(super) fn file_path(&mut self, i: usize, path: &std::path::Path, discover: bool) {
        let max_depth = self.opts.catalogue.max_depth(self.roots[i].root.kind);
        match target_of(&self.roots[i].root, &self.opts.catalogue, path) {
            Target::Outside => {}
            Target::Root => self.debounce.root(i).root_touched = true,
            Target::Marker(token) => self.on_marker(i, &token),
            Target::Item {
                path: item,
                claimed,
                ..
            } => {
                if !claimed {
                    // An unattributed entry appeared or changed: see who runs now.
                    let root = &self.roots[i].root.canonical;
                    self.provenance.want_under(root, &item);
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
}

// --- When the dirty items are re-measured --------------------------------------------------------

/// Rescans that the watcher asks for (queue overflow, coalesced events) run at most this often per
/// root outside a flush: a busy temp dir (a build writing into it) would otherwise be rescanned back
/// to back. The changes are not lost: the rescan runs when the gap has passed.
const MIN_RESCAN_GAP: Duration = Duration::from_secs(30);

impl Actor {
    /// The next time the loop must wake up by itself: the debounce deadline, a flush timeout or
    /// a wanted process-table sample.
    pub(super) fn next_wake(&self) -> Option<Instant> {
        [
            self.debounce.deadline(),
            self.flushes.iter().map(|f| f.deadline).min(),
            self.provenance.deadline(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// After a batch of events: starts the quiet time, re-measures if it is already over, answers
    /// the flushes whose markers came back.
    pub(super) async fn after_events(&mut self) {
        // Before the quiet time: a writer that exits right after writing is caught while alive.
        self.sample_for_provenance().await;
        self.debounce.arm(Instant::now());
        // Under a steady stream of events the timer branch may not get its turn.
        if self.debounce.is_due(Instant::now()) {
            self.on_wake().await;
        }
        self.finish_flushes(false).await;
    }

    /// The loop woke up by itself: re-measures when the quiet time is over, expires late flushes.
    pub(super) async fn on_wake(&mut self) {
        self.sample_for_provenance().await;
        let now = Instant::now();
        if self.debounce.take_due(now) && !self.paused {
            self.process_dirty(false).await;
        }
        let expired = self.flushes.iter().any(|f| f.deadline <= now);
        if expired {
            self.finish_flushes(true).await;
        }
    }

    /// Re-measures the dirty items of every root (and rescans flagged roots), then publishes.
    /// Without `now_please`, a root rescanned less than [`MIN_RESCAN_GAP`] ago keeps its rescan
    /// pending until the gap has passed; a flush, a resume or a reclaim pass `true`.
    pub(super) async fn process_dirty(&mut self, now_please: bool) {
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
                self.rescan_root(i).await;
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
                self.rescan_root(i).await;
                continue;
            }
            self.remeasure(i, dirty).await;
        }
        if changed {
            self.figures_stale = true;
            self.after_update(false).await;
        }
    }
}

// --- Roots and paths not watched by events -------------------------------------------------------

impl Actor {
    /// Polls the roots that are due: polling roots by [`Actor::poll_root`], evented roots with
    /// unwatched paths by [`Actor::retry_unwatched`]. True when a root changed.
    pub(super) async fn poll_due(&mut self) -> bool {
        let mut changed = false;
        for i in 0..self.roots.len() {
            if self.paused || !self.pace[i].poll_due(Instant::now()) || self.roots[i].gone() {
                continue;
            }
            match self.roots[i].mode {
                WatchMode::Polling => changed |= self.poll_root(i).await,
                WatchMode::Events if !self.roots[i].unwatched.is_empty() => {
                    changed |= self.retry_unwatched(i).await;
                }
                _ => {}
            }
        }
        changed
    }

    /// One poll of polling root `i`: the items whose top entry moved and the new entries of the
    /// dirs whose mtime moved are re-measured, as if events had named them; when a full rescan is
    /// due ([`super::super::pace`]), the poll is one. The poll re-stats every item when a sweep is
    /// due, else only those written within [`POLL_RECENT`]. True when something was re-measured.
    pub(super) async fn poll_root(&mut self, i: usize) -> bool {
        if self.pace[i].full_due(Instant::now()) || self.root_moved(i) {
            self.rescan_root(i).await;
            return true;
        }
        let root = self.roots[i].root.clone();
        let sweep = self.pace[i].sweep_due(Instant::now());
        let scope = if sweep {
            PollScope::Every
        } else {
            // A clock before 1970 + an hour: every item is recent.
            let now = self.opts.clock.now();
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
            self.rescan_root(i).await;
            return true;
        };
        let changed = report.changed.len();
        for path in &report.changed {
            self.file_path(i, path, true);
        }
        let dirty = self.debounce.take(i);
        let remeasured = !dirty.is_empty();
        if remeasured {
            self.remeasure(i, dirty).await;
            self.figures_stale = true;
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
    pub(super) async fn retry_unwatched(&mut self, i: usize) -> bool {
        self.pace[i].tried(Instant::now());
        if self.root_moved(i) {
            self.rescan_root(i).await;
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
            self.file_path(i, path, true);
        }
        let dirty = self.debounce.take(i);
        self.remeasure(i, dirty).await;
        self.figures_stale = true;
        true
    }
}

// --- Flushes -------------------------------------------------------------------------------------

/// A flush waiting for its markers.
pub(super) struct PendingFlush {
    /// The marker name's token (`<pid>-<n>`).
    token: String,
    /// The roots whose marker event has not come back yet.
    roots: BTreeSet<usize>,
    /// When the flush gives up ([`MonitorError::FlushTimeout`]).
    pub(super) deadline: Instant,
    reply: oneshot::Sender<Result<(), MonitorError>>,
}

impl Actor {
    /// The marker `token` came back from root `root`.
    pub(super) fn on_marker(&mut self, root: usize, token: &str) {
        for f in &mut self.flushes {
            if f.token == token {
                f.roots.remove(&root);
            }
        }
    }

    /// Root `root` will be rescanned (queue overflow, a rescan flag, a watch error): its marker
    /// event may have been among the events dropped, and the rescan covers everything a marker
    /// would have, so the flushes stop waiting for it (the rescan runs before they are answered).
    pub(super) fn rescan_answers_flushes(&mut self, root: usize) {
        for f in &mut self.flushes {
            f.roots.remove(&root);
        }
    }

    /// Answers the flushes whose markers all came back (or, with `expire`, that timed out).
    pub(super) async fn finish_flushes(&mut self, expire: bool) {
        let now = Instant::now();
        let ready = self
            .flushes
            .iter()
            .any(|f| f.roots.is_empty() || (expire && f.deadline <= now));
        if !ready {
            return;
        }
        self.check_roots().await;
        if !self.paused {
            self.process_dirty(true).await;
            if self.figures_stale {
                self.refresh_figures().await;
                self.publish();
            }
        }
        let (done, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.flushes)
            .into_iter()
            .partition(|f| f.roots.is_empty() || (expire && f.deadline <= now));
        self.flushes = waiting;
        for f in done {
            let res = match f.roots.iter().next() {
                None => Ok(()),
                Some(&i) => Err(MonitorError::FlushTimeout {
                    path: self.roots[i].root.canonical.clone(),
                }),
            };
            if f.reply.send(res).is_err() {
                tracing::debug!("flush caller went away");
            }
        }
    }

    /// Writes (and removes) a marker in every evented root and waits for their events; a root the
    /// marker cannot be written to is not waited for. The roots' paths are looked at first: a root
    /// swapped for a link or removed is marked gone (and one back is rescanned) before the flush
    /// answers, and no marker is written through a link.
    pub(super) async fn start_flush(&mut self, reply: oneshot::Sender<Result<(), MonitorError>>) {
        self.check_roots().await;
        self.flush_seq += 1;
        let token = format!("{}-{}", std::process::id(), self.flush_seq);
        let name = format!("{FLUSH_MARKER_PREFIX}{token}");
        let mut roots = BTreeSet::new();
        for (i, st) in self.roots.iter().enumerate() {
            // A polling root has no events to wait for: the flush re-reads it.
            if st.mode == WatchMode::Polling && !st.gone() {
                self.debounce.root(i).rescan = true;
            }
            if self.watchers[i].is_none() || st.gone() {
                continue;
            }
            match write_marker(&st.root.canonical, &name) {
                Ok(()) => {
                    roots.insert(i);
                }
                Err(e) => {
                    tracing::debug!(root = %st.root.canonical.display(), marker = %name, error = %e, "cannot write a flush marker; flushing what has arrived");
                }
            }
        }
        self.flushes.push(PendingFlush {
            token,
            roots,
            deadline: Instant::now() + FLUSH_TIMEOUT,
            reply,
        });
        self.finish_flushes(false).await;
    }
}

/// Creates (and removes) the marker `name` in the dir `root`, opened without following a link:
/// created with `O_EXCL | O_NOFOLLOW`, never opened as an existing file (a root is often a shared
/// temp dir where another user can guess the name and plant a link there), and not written at
/// all when `root` itself is now a link.
fn write_marker(root: &std::path::Path, name: &str) -> std::io::Result<()> {
    use rustix::fs::{Mode, OFlags};
    let dir = rustix::fs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let marker = rustix::fs::openat(
        &dir,
        name,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )?;
    drop(marker);
    if let Err(e) = rustix::fs::unlinkat(&dir, name, rustix::fs::AtFlags::empty()) {
        tracing::warn!(root = %root.display(), marker = name, error = %e, "cannot remove flush marker");
    }
    Ok(())
}
