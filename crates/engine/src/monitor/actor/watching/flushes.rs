//! [`Flushes`]: the flushes of [`MonitorHandle::flush`](crate::monitor::MonitorHandle::flush)
//! waiting for their markers, and the sequence that names the markers. A flush writes a marker
//! file into each evented root ([`Watching::start_flush`]) and is answered once every marker's
//! event came back (everything before it has then arrived) and the dirty items are re-measured, or
//! with a timeout after [`FLUSH_TIMEOUT`].

use std::collections::BTreeSet;

use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::dto::WatchMode;
use crate::monitor::{MonitorError, FLUSH_TIMEOUT};
use crate::watch::map::FLUSH_MARKER_PREFIX;

use super::Watching;

/// The flushes waiting for their markers.
#[derive(Default)]
pub(in crate::monitor::actor) struct Flushes {
    pending: Vec<PendingFlush>,
    /// The last marker's number.
    seq: u64,
}

/// A flush waiting for its markers.
struct PendingFlush {
    /// The marker name's token (`<pid>-<n>`).
    token: String,
    /// The roots whose marker event has not come back yet.
    roots: BTreeSet<usize>,
    /// When the flush gives up ([`MonitorError::FlushTimeout`]).
    deadline: Instant,
    reply: oneshot::Sender<Result<(), MonitorError>>,
}

impl PendingFlush {
    /// Every marker came back, or (with `expire`) the flush timed out.
    fn done(&self, expire: bool, now: Instant) -> bool {
        self.roots.is_empty() || (expire && self.deadline <= now)
    }
}

impl Flushes {
    /// The marker `token` came back from root `root`.
    pub(super) fn on_marker(&mut self, root: usize, token: &str) {
        for f in &mut self.pending {
            if f.token == token {
                f.roots.remove(&root);
            }
        }
    }

    /// Root `root` will be rescanned (queue overflow, a rescan flag, a watch error): its marker
    /// event may have been among the events dropped, and the rescan covers everything a marker
    /// would have, so the flushes stop waiting for it (the rescan runs before they are answered).
    pub(super) fn rescan_answers(&mut self, root: usize) {
        for f in &mut self.pending {
            f.roots.remove(&root);
        }
    }

    /// The earliest flush timeout.
    pub(super) fn deadline(&self) -> Option<Instant> {
        self.pending.iter().map(|f| f.deadline).min()
    }

    /// True when a flush timed out by `now`.
    pub(in crate::monitor::actor) fn expired(&self, now: Instant) -> bool {
        self.pending.iter().any(|f| f.deadline <= now)
    }

    /// True when a flush can be answered: its markers all came back (or, with `expire`, it timed
    /// out by `now`).
    pub(in crate::monitor::actor) fn ready(&self, expire: bool, now: Instant) -> bool {
        self.pending.iter().any(|f| f.done(expire, now))
    }
}

impl Watching {
    /// Writes (and removes) a marker in every evented root and files a flush waiting for their
    /// events; a root the marker cannot be written to is not waited for, a polling root is
    /// flagged for a rescan (it has no events to wait for). No marker is written through a link.
    pub(in crate::monitor::actor) fn start_flush(
        &mut self,
        reply: oneshot::Sender<Result<(), MonitorError>>,
    ) {
        self.flushes.seq += 1;
        let token = format!("{}-{}", std::process::id(), self.flushes.seq);
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
        self.flushes.pending.push(PendingFlush {
            token,
            roots,
            deadline: Instant::now() + FLUSH_TIMEOUT,
            reply,
        });
    }

    /// Answers the flushes whose markers all came back (or, with `expire`, that timed out by
    /// `now`: with the path of a root whose marker did not come back).
    pub(in crate::monitor::actor) fn answer_flushes(&mut self, expire: bool, now: Instant) {
        let (done, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.flushes.pending)
            .into_iter()
            .partition(|f| f.done(expire, now));
        self.flushes.pending = waiting;
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
