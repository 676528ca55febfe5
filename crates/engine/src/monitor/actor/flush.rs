//! [`MonitorHandle::flush`](super::super::MonitorHandle::flush): a marker file written into each
//! evented root, answered once every marker's event came back (everything before it has then
//! arrived) and the dirty items are re-measured, or with a timeout after [`FLUSH_TIMEOUT`].

use std::collections::BTreeSet;
use std::os::unix::fs::OpenOptionsExt as _;

use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::dto::WatchMode;
use crate::watch::map::FLUSH_MARKER_PREFIX;

use super::super::{MonitorError, FLUSH_TIMEOUT};
use super::Actor;

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
        self.check_gone_roots().await;
        if !self.paused {
            self.process_dirty(true).await;
            if self.analysis_stale {
                self.refresh_analysis().await;
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
    /// marker cannot be written to is not waited for.
    pub(super) async fn start_flush(&mut self, reply: oneshot::Sender<Result<(), MonitorError>>) {
        self.flush_seq += 1;
        let token = format!("{}-{}", std::process::id(), self.flush_seq);
        let mut roots = BTreeSet::new();
        for (i, st) in self.roots.iter().enumerate() {
            // A polling root has no events to wait for: the flush re-reads it.
            if st.mode == WatchMode::Polling && !st.gone {
                self.debounce.root(i).rescan = true;
            }
            if self.watchers[i].is_none() || st.gone {
                continue;
            }
            let marker = st
                .root
                .canonical
                .join(format!("{FLUSH_MARKER_PREFIX}{token}"));
            // Created, never opened: a root is often a shared temp dir where another user can
            // guess the name and plant a link there; `File::create` would truncate its target.
            let created = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&marker);
            match created {
                Ok(_) => {
                    roots.insert(i);
                    if let Err(e) = std::fs::remove_file(&marker) {
                        tracing::warn!(path = %marker.display(), error = %e, "cannot remove flush marker");
                    }
                }
                Err(e) => {
                    tracing::debug!(path = %marker.display(), error = %e, "cannot write a flush marker; flushing what has arrived");
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
