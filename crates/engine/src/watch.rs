//! Watching the roots: `notify` events (FSEvents on macOS, inotify on Linux) mapped to items.
//!
//! One [`RootWatcher`] per root sends every event (or watcher error) into a channel as a
//! [`WatchMsg`]; the monitor maps each event path to its item ([`map::target_of`]), debounces, and
//! re-measures only the dirty items, keeping an incremental [`state::RootState`] per root.
//!
//! When the OS cannot watch a root with events (Linux out of inotify watches: `ENOSPC`; or out of
//! inotify instances: `EMFILE` from `inotify_init`, `/proc/sys/fs/inotify/max_user_instances`),
//! the root falls back to polling ([`crate::dto::WatchMode::Polling`]): every
//! [`crate::monitor::POLL_INTERVAL`] a poll re-stats each dir between the root and the items and
//! the top entry of each item written within [`crate::monitor::POLL_RECENT`] (of every item at a
//! sweep), lists only the dirs whose mtime moved and re-measures only the items that changed
//! ([`state::RootState::poll_dirs`]); every [`crate::monitor::POLL_FULL_EVERY`] intervals, and at
//! each [`crate::monitor::MonitorHandle::flush`], a full rescan instead. Each kind of work is paced
//! by its cost (at most 1% of the time for polls, 0.1% for sweeps, 0.5% of the wall time for
//! rescans: [`crate::monitor::POLL_COST_RATIO`], [`crate::monitor::SWEEP_COST_RATIO`],
//! [`crate::monitor::FULL_COST_RATIO`]): at 700,000 old items a poll every minute costs a few
//! `lstat`s, a sweep (1.8-3.7 s) every 30-60 minutes. macOS has no such limit (FSEvents watches
//! a tree with one stream), so there a root polls only when its stream cannot be made at all.
//!
//! A path whose own watch fails for another reason (an unreadable dir: inotify needs read
//! permission) does not switch its root to polling: the rest of the root stays watched by events
//! and that path is listed ([`RootWatcher::start`], the snapshot's `unwatched_paths`) and tried
//! again at every poll interval; when it can be watched again, the item holding it is
//! re-measured.
//!
//! # FSEvents (macOS)
//! notify 8's FSEvents backend (`notify/src/fsevent.rs`) opens one stream per watcher with
//! `kFSEventStreamCreateFlagFileEvents | NoDefer`, latency 0, from "now" (no history). Each record
//! (a path and its flags) becomes one `notify::Event` per flag, all with that path, in this order;
//! what the monitor does with each (`monitor/actor/changes.rs`):
//! - `MustScanSubDirs` (with `UserDropped` or `KernelDropped` when events were dropped in the
//!   daemon or the kernel: only the event's info says which): `EventKind::Other` with
//!   `Flag::Rescan` and the dir's path. The monitor rescans the whole root (`need_rescan`), within
//!   the rescan gap, at once on a flush. `UserDropped`/`KernelDropped` alone make no event.
//! - `RootChanged` (sent only with `kFSEventStreamCreateFlagWatchRoot`, which notify does not set,
//!   so in practice never): `Modify(Name(From))` with the info `"root changed"` on the root path.
//!   The monitor rescans the root (or marks it gone when it is no longer a dir).
//! - `Mount`/`Unmount`: `Create(Other)`/`Remove(Other)` with the info `"mount"`: re-measures the
//!   item holding the path (the scan stays on the root's device).
//! - `ItemCreated`/`ItemRemoved`: `Create`/`Remove` of `Folder`, `File`, or `Other` (symlink, hard
//!   link or clone, said in the info); `ItemRenamed`: `Modify(Name(Any))` once per side, never
//!   paired and in no set order; a side outside the watched root is not reported (a tree moved in
//!   has one event, for its top dir: the monitor searches it for items). Metadata and xattr flags:
//!   `Modify(Metadata(..))`; `ItemModified`: `Modify(Data(Content))`.
//! - `HistoryDone`: nothing (and never sent: the stream starts from "now").
//!
//! Flags accumulate per path between callbacks, so one record can say created, modified *and*
//! removed: the events say which paths to look at, never what is there. The monitor therefore
//! re-measures the item holding each path from the disk, so repeated, reordered or stale events
//! cost time, never a lost or double-counted item. Paths are reported canonical (`/private/var/...`
//! for a root given as `/var/...`): the watch is on the root's canonical path and the mapping
//! accepts both spellings. notify drops events outside the watched paths, and panics on a path
//! that is not UTF-8 (APFS and HFS+ refuse such names; other volumes may not).
//! `tests/watch_fsevents_replay.rs` replays these sequences on Linux against `du`; only a Mac runs
//! a real stream (`tests/macos_fsevents.rs`).
//!
//! # Known problems
//! - **New dirs race inotify.** Files created in a new dir before its watch is added send no
//!   events; the item holding them is re-measured after the dir's own event (debounce), and a dir
//!   moved in whole is searched for claimed items down to the catalogue's depth.
//! - **Flush markers.** [`crate::monitor::MonitorHandle::flush`] creates and removes an empty file
//!   `.cachewatch-flush-<pid>-<n>` in each evented root; such paths are never items. In a root the
//!   user cannot write, flush only processes what has already arrived.
//! - **Per-update cost.** Re-measuring is per dirty item and the totals and largest items per
//!   producer are kept by deltas ([`state::RootState`]), so an update costs about the same at 10k
//!   and 1M entries (a few ms; see `benches/watch_bench.rs`). O(items) work is left to rescans and
//!   the periodic reclaimable figures (every 30 s while events flow).
//! - **Polling sees top entries, not contents.** A poll compares each item's top entry with the
//!   item's newest mtime, so a file rewritten in place inside an item dir (or a change in a subdir
//!   of an item) shows up only at the next full rescan (every
//!   [`crate::monitor::POLL_FULL_EVERY`] poll intervals, or 200 times the last rescan's cost when
//!   longer, or a flush); and a file added to an item not written within
//!   [`crate::monitor::POLL_RECENT`] shows at the next sweep. A poll costs one `lstat` per dir and
//!   per recent item, a sweep one per item (the monitor logs each sweep's count and time).
//! - **Memory on a huge root.** The live inventory costs a slot of integers per item plus its
//!   interned name ([`state::RootState`]), never a path; the monitor's resident size after its
//!   first scan and during polls is measured by `benches/bench.sh` (figures in
//!   `docs/benchmarks.md`). Past the inotify limit, notify's tables of the watches made before it
//!   (one path per watched dir, in two maps) are freed when the watcher is dropped, and their
//!   pages returned to the OS as soon as notify's thread has removed the watches. macOS has no
//!   such tables: FSEvents watches each root with one stream.
//! - **Past the inotify limit, the watch walk is wasted.** notify walks and watches dirs until
//!   `ENOSPC`, so on a 700k-dir tree the first scan starts after a walk of about 190k dirs (tens of
//!   seconds) whose watches are then dropped.
//! - **Our own scans overflow inotify.** notify 8 always watches `IN_OPEN`, so a scan (which opens
//!   every dir) queues one event per dir; past `max_queued_events` (16384) the kernel reports an
//!   overflow and the root is rescanned once more. On a 111k-dir tree this costs one extra full
//!   scan after the first.

pub mod live;
pub mod map;
pub mod presence;

use std::path::{Path, PathBuf};

use notify::{RecursiveMode, Watcher};
use tokio::sync::mpsc::UnboundedSender;

use crate::roots::Root;

/// Errors of the watcher.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// The OS watcher could not be created (e.g. no inotify instance left for the user).
    #[error("cannot create a file watcher: {source}; falling back to periodic rescans{}", if is_instance_limit(source) { " (on Linux raise /proc/sys/fs/inotify/max_user_instances)" } else { "" })]
    Create {
        /// The error from `notify`.
        source: notify::Error,
    },
    /// A root could not be watched (e.g. the inotify watch limit was reached).
    #[error("cannot watch root {path:?}: {source}; falling back to periodic rescans")]
    Watch {
        /// The root's canonical path.
        path: PathBuf,
        /// The error from `notify`.
        source: notify::Error,
    },
}

impl WatchError {
    /// True when the error is the OS limit on watches (`ENOSPC` from `inotify_add_watch`).
    pub fn is_watch_limit(&self) -> bool {
        match self {
            WatchError::Create { source } | WatchError::Watch { source, .. } => {
                is_watch_limit(source)
            }
        }
    }
}

/// True when `e` is the OS limit on watcher instances (`EMFILE` from `inotify_init`).
pub fn is_instance_limit(e: &notify::Error) -> bool {
    matches!(&e.kind, notify::ErrorKind::Io(io) if io.raw_os_error() == Some(libc::EMFILE))
}

/// True when `e` is the OS limit on watches.
pub fn is_watch_limit(e: &notify::Error) -> bool {
    match &e.kind {
        notify::ErrorKind::MaxFilesWatch => true,
        notify::ErrorKind::Io(io) => io.raw_os_error() == Some(libc::ENOSPC),
        _ => false,
    }
}

/// One message from a root's watcher.
#[derive(Debug)]
pub struct WatchMsg {
    /// Index of the root in the monitor's list.
    pub root: usize,
    /// The event, or the watcher's error.
    pub event: notify::Result<notify::Event>,
}

/// A live recursive watch on one root. Dropping it stops the watch; once notify's thread has let go
/// of its tables (on Linux one path per watched dir, twice: tens of MiB at 190k dirs), the free heap
/// is returned to the OS ([`crate::platform::release_free_memory`]) by a short-lived thread.
pub struct RootWatcher {
    watcher: notify::RecommendedWatcher,
    /// Disconnected when notify has dropped the event handler, i.e. its watch thread is done.
    stopped: Option<std::sync::mpsc::Receiver<()>>,
}

/// How long a dropped watcher's thread is waited for before its memory is returned anyway.
const STOP_WAIT: std::time::Duration = std::time::Duration::from_secs(120);

impl Drop for RootWatcher {
    fn drop(&mut self) {
        // `self.watcher` is dropped right after this: notify then removes its watches and frees
        // its tables on its own thread (on Linux, 190k `inotify_rm_watch` take a while).
        let Some(stopped) = self.stopped.take() else {
            return;
        };
        let spawned = std::thread::Builder::new()
            .name("cachewatch-unwatch".into())
            .spawn(move || {
                let started = std::time::Instant::now();
                let done = matches!(
                    stopped.recv_timeout(STOP_WAIT),
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected)
                );
                crate::platform::release_free_memory();
                tracing::info!(
                    done,
                    ms = started.elapsed().as_millis() as u64,
                    "watcher stopped; free heap returned"
                );
            });
        if let Err(e) = spawned {
            tracing::debug!(error = %e, "no thread to return a stopped watcher's memory");
        }
    }
}

impl std::fmt::Debug for RootWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RootWatcher")
    }
}

/// A path below a root that could not be watched by events (the rest of the root is).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unwatched {
    /// The path (absolute, under the root's canonical path).
    pub path: PathBuf,
    /// Why its watch failed.
    pub error: String,
}

impl RootWatcher {
    /// Starts a recursive watch on `root` (its canonical path), sending every event and error to
    /// `tx` tagged with `index`. A path below the root whose watch fails for another reason than
    /// the OS limit (an unreadable dir: `EACCES` from `inotify_add_watch`) does not fail the root:
    /// the rest is watched and the path is returned in the list, to be polled.
    ///
    /// # Errors
    /// [`WatchError::Create`] when the OS watcher cannot be made, [`WatchError::Watch`] when the
    /// root itself cannot be watched or the OS limit on watches is reached (see
    /// [`WatchError::is_watch_limit`]).
    pub fn start(
        index: usize,
        root: &Root,
        tx: UnboundedSender<WatchMsg>,
    ) -> Result<(RootWatcher, Vec<Unwatched>), WatchError> {
        let (alive, stopped) = std::sync::mpsc::sync_channel::<()>(0);
        let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            // Held by the handler only: dropped with it when notify's thread ends.
            let _alive = &alive;
            if tx.send(WatchMsg { root: index, event }).is_err() {
                tracing::debug!(root = index, "watch event after the monitor stopped");
            }
        })
        .map_err(|source| WatchError::Create { source })?;
        let mut w = RootWatcher {
            watcher,
            stopped: Some(stopped),
        };
        let mut unwatched = Vec::new();
        // On failure `w` is dropped: the watches made before it go, and so does their memory.
        watch_tree(&mut w.watcher, &root.canonical, true, &mut unwatched).map_err(|source| {
            WatchError::Watch {
                path: root.canonical.clone(),
                source,
            }
        })?;
        Ok((w, unwatched))
    }

    /// Tries again to watch `path` (a path [`RootWatcher::start`] could not watch) and what is
    /// below it; returns what still cannot be watched.
    ///
    /// # Errors
    /// The OS limit on watches, or `path` itself cannot be watched.
    pub fn watch_again(&mut self, path: &Path) -> Result<Vec<Unwatched>, notify::Error> {
        let mut unwatched = Vec::new();
        watch_tree(&mut self.watcher, path, true, &mut unwatched)?;
        Ok(unwatched)
    }
}

/// Watches `dir` recursively. When a path below it cannot be watched (not for the OS limit: that
/// is returned), watches its siblings one by one, going down to that path, and lists it in
/// `unwatched`. `dir` itself failing is an error when `top`, else listed too. The dirs walked
/// before the failure are walked again (adding a watch twice is harmless), so a failure at depth
/// `d` costs up to `d` walks of the subtree holding it.
fn watch_tree(
    w: &mut notify::RecommendedWatcher,
    dir: &Path,
    top: bool,
    unwatched: &mut Vec<Unwatched>,
) -> Result<(), notify::Error> {
    let err = match w.watch(dir, RecursiveMode::Recursive) {
        Ok(()) => return Ok(()),
        Err(e) => e,
    };
    if is_watch_limit(&err) || is_instance_limit(&err) {
        return Err(err);
    }
    let below = err
        .paths
        .first()
        .filter(|p| p.as_path() != dir && p.starts_with(dir))
        .cloned();
    let entries = below.and_then(|_| std::fs::read_dir(dir).ok());
    let Some(entries) = entries else {
        if top {
            return Err(err);
        }
        tracing::warn!(path = %dir.display(), error = %err, "cannot watch a dir; polling it instead");
        unwatched.push(Unwatched {
            path: dir.to_path_buf(),
            error: err.to_string(),
        });
        return Ok(());
    };
    // `dir` itself is watched (the walk starts with it): new dirs in it are watched as they come.
    for e in entries.flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            watch_tree(w, &e.path(), false, unwatched)?;
        }
    }
    Ok(())
}
