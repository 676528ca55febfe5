//! Watch events in: each root's watcher (or its fallback to polling), and every event filed into
//! the root's dirty set for the debounce.

use notify::event::{CreateKind, EventKind, ModifyKind, RenameMode};

use crate::dto::WatchMode;
use crate::watch::map::{target_of, Target};
use crate::watch::{is_watch_limit, RootWatcher, WatchMsg};

use super::super::debounce::MAX_DIRTY;
use super::super::POLL_INTERVAL;
use super::Actor;

/// The info notify's FSEvents backend puts on the event of a `kFSEventStreamEventFlagRootChanged`
/// record.
const ROOT_CHANGED: &str = "root changed";

impl Actor {
    /// Watches root `i` by events (the paths below it that cannot be watched are listed in its
    /// state and polled), or falls back to polling it every [`POLL_INTERVAL`] and says why in the
    /// snapshot.
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
                tracing::warn!(root = %root.canonical.display(), error = %e, "cannot watch root; polling it every {}s", POLL_INTERVAL.as_secs());
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
                    tracing::warn!(root = %self.roots[i].root.canonical.display(), error = %e, "out of file watches; polling this root every {}s instead", POLL_INTERVAL.as_secs());
                    self.watchers[i] = None;
                    self.roots[i].mode = WatchMode::Polling;
                    self.roots[i].watch_error = Some(format!(
                        "the OS limit on file watches was reached ({e}); polling every {}s. \
                         On Linux raise /proc/sys/fs/inotify/max_user_watches",
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
