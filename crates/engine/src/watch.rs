//! Watching the roots: `notify` events (FSEvents on macOS, inotify on Linux) mapped to items.
//!
//! One [`RootWatcher`] per root sends every event (or watcher error) into a channel as a
//! [`WatchMsg`]; the monitor maps each event path to its item ([`map::target_of`]), debounces, and
//! re-measures only the dirty items, keeping an incremental [`state::RootState`] per root.
//!
//! When the OS cannot watch a root with events (Linux out of inotify watches: `ENOSPC`; or out of
//! inotify instances: `EMFILE` from `inotify_init`, `/proc/sys/fs/inotify/max_user_instances`),
//! the root falls back to periodic rescans ([`crate::snapshot::WatchMode::Polling`]): every
//! [`crate::monitor::POLL_INTERVAL`] and on each [`crate::monitor::MonitorHandle::flush`].
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
//! - **Polling re-reads the whole root.** The fallback rescans the root rather than re-reading
//!   only what changed, so a change shows up within one poll interval (or at the next flush), at
//!   the cost of a full scan each time.
//! - **Our own scans overflow inotify.** notify 8 always watches `IN_OPEN`, so a scan (which opens
//!   every dir) queues one event per dir; past `max_queued_events` (16384) the kernel reports an
//!   overflow and the root is rescanned once more. On a 111k-dir tree this costs one extra full
//!   scan after the first.

pub mod map;
pub mod state;

use std::path::PathBuf;

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

/// A live recursive watch on one root. Dropping it stops the watch.
pub struct RootWatcher {
    _watcher: notify::RecommendedWatcher,
}

impl std::fmt::Debug for RootWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RootWatcher")
    }
}

impl RootWatcher {
    /// Starts a recursive watch on `root` (its canonical path), sending every event and error to
    /// `tx` tagged with `index`.
    ///
    /// # Errors
    /// [`WatchError::Create`] when the OS watcher cannot be made, [`WatchError::Watch`] when the
    /// root cannot be watched (see [`WatchError::is_watch_limit`]).
    pub fn start(
        index: usize,
        root: &Root,
        tx: UnboundedSender<WatchMsg>,
    ) -> Result<RootWatcher, WatchError> {
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                if tx.send(WatchMsg { root: index, event }).is_err() {
                    tracing::debug!(root = index, "watch event after the monitor stopped");
                }
            })
            .map_err(|source| WatchError::Create { source })?;
        watcher
            .watch(&root.canonical, RecursiveMode::Recursive)
            .map_err(|source| WatchError::Watch {
                path: root.canonical.clone(),
                source,
            })?;
        Ok(RootWatcher { _watcher: watcher })
    }
}
