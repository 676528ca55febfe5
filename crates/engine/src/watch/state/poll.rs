//! The fallback for a root that cannot be watched by events (Linux out of inotify watches): a poll
//! that re-stats what the state knows and reports only what moved, instead of a full rescan.
//!
//! Cost per poll: one `lstat` per item and per dir between the root and the items, and one listing
//! of each such dir whose mtime moved (no listing of an item's contents, no re-measure of an item
//! that did not change). What it cannot see: a change deeper inside an item that leaves the item's
//! top entry alone (a file rewritten in place in an item dir, a change in a subdir of an item);
//! polling roots are therefore also rescanned in full now and then (every
//! [`crate::monitor::POLL_FULL_EVERY`] poll intervals, longer for a costly root).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::slot::encode_time;
use super::store::ROOT_DIR;
use super::RootState;

/// What a poll found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PollReport {
    /// Absolute paths to handle as if an event had named them: items whose top entry is gone or
    /// newer than their newest recorded mtime, and entries of a changed dir that the state does not
    /// know yet.
    pub changed: Vec<PathBuf>,
    /// `lstat` calls made.
    pub stats: u64,
    /// Dirs listed (their mtime moved).
    pub listed: u64,
}

fn mtime_of(md: &std::fs::Metadata) -> u64 {
    encode_time(md.modified().ok()).unwrap_or(0)
}

impl RootState {
    /// Records the mtime of every dir the state knows (after a load), as the poll's baseline.
    /// Blocking: one `lstat` per dir.
    pub fn record_dir_mtimes(&mut self) {
        for id in 0..self.names.dirs.len() {
            let path = self.root.canonical.join(self.names.dir_path(id as u32));
            self.names.dirs[id].mtime =
                std::fs::symlink_metadata(&path).map_or(0, |m| mtime_of(&m));
        }
    }

    /// Re-stats every item's top entry and every known dir; lists the dirs whose mtime moved.
    /// Blocking. The state itself is not changed but for the dirs' recorded mtimes: the caller
    /// re-measures [`PollReport::changed`].
    pub fn poll_dirs(&mut self) -> PollReport {
        let mut out = PollReport::default();
        // One buffer for every item's absolute path: no allocation per item.
        let mut buf = self.root.canonical.as_os_str().as_bytes().to_vec();
        if buf.last() == Some(&b'/') {
            buf.pop();
        }
        let base = buf.len();
        for id in self.live() {
            buf.truncate(base);
            self.names
                .append_item_path(self.slots[id as usize].rec, &mut buf);
            let path = Path::new(OsStr::from_bytes(&buf));
            out.stats += 1;
            let newest = encode_time(self.measure_of(id).newest_mtime).unwrap_or(u64::MAX);
            let moved = match std::fs::symlink_metadata(path) {
                Ok(md) => mtime_of(&md) > newest,
                Err(_) => true,
            };
            if moved {
                out.changed.push(path.to_path_buf());
            }
        }
        for id in 0..self.names.dirs.len() {
            let rel = self.names.dir_path(id as u32);
            let path = self.root.canonical.join(&rel);
            out.stats += 1;
            let now = match std::fs::symlink_metadata(&path) {
                Ok(md) => mtime_of(&md),
                Err(_) => {
                    if id as u32 != ROOT_DIR {
                        out.changed.push(path);
                    }
                    continue;
                }
            };
            if now == self.names.dirs[id].mtime {
                continue;
            }
            self.names.dirs[id].mtime = now;
            out.listed += 1;
            let Ok(entries) = std::fs::read_dir(&path) else {
                out.changed.push(path);
                continue;
            };
            // The dir's own entry is re-read when an item below it is re-measured
            // (`restat_ancestors`); items that went away fail their own `lstat` above.
            for e in entries.flatten() {
                let name = e.file_name();
                let known_item = self
                    .names
                    .find_item(&self.slots, id as u32, name.as_bytes())
                    .is_some();
                let known_dir = self.names.find_dir_path(&rel.join(&name)).is_some();
                if !known_item && !known_dir {
                    out.changed.push(path.join(&name));
                }
            }
        }
        out
    }
}
