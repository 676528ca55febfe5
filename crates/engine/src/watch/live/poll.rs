//! The fallback for a root that cannot be watched by events (Linux out of inotify watches): a poll
//! that re-stats what the state knows and reports only what moved, instead of a full rescan.
//!
//! Cost per poll: one `lstat` per dir between the root and the items and per item in the poll's
//! [`PollScope`], and one listing of each such dir whose mtime moved (no listing of an item's
//! contents, no re-measure of an item that did not change). A dir's mtime moves when an entry is
//! created, removed or renamed in it, so new and removed items are found whatever the scope.
//!
//! The scope is every item (a sweep) or only the items written lately (their newest mtime after a
//! cutoff): a leak's items are written once and then sit, so on a root of 700,000 old items a poll
//! of the recent ones costs a few `lstat`s where a sweep costs 700,000 (1.8 s). The monitor sweeps
//! now and then, paced by the sweep's cost ([`crate::monitor::SWEEP_COST_RATIO`]). What a poll of
//! recent items does not see until the next sweep: an old item written again (a file added to an
//! old item dir, an old log file appended to).
//!
//! What no poll sees: a change deeper inside an item that leaves the item's top entry alone (a file
//! rewritten in place in an item dir, a change in a subdir of an item); polling roots are therefore
//! also rescanned in full now and then (every [`crate::monitor::POLL_FULL_EVERY`] poll intervals,
//! longer for a costly root).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::slot::encode_time;
use super::store::ROOT_DIR;
use super::RootState;

/// Which items a poll re-stats (the dirs between the root and the items are re-stat'ed by every
/// poll).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PollScope {
    /// Every item: a sweep.
    Every,
    /// Only the items whose newest mtime is at or after this time, and those with none recorded.
    WrittenSince(SystemTime),
}

/// What a poll found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PollReport {
    /// Absolute paths to handle as if an event had named them: items whose top entry is gone or
    /// newer than their newest recorded mtime, and entries of a changed dir that the state does not
    /// know yet.
    pub changed: Vec<PathBuf>,
    /// `lstat` calls made.
    pub stats: u64,
    /// Items left out of the scope (written before its cutoff): not re-stat'ed.
    pub skipped: u64,
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

    /// Re-stats every known dir and the top entry of every item in `scope`; lists the dirs whose
    /// mtime moved. An item out of the scope is reported anyway when its dir was listed without it
    /// (removed: no `lstat` needed), and re-stat'ed when its dir is gone or cannot be listed, so a
    /// removed old item is found by any poll. Blocking. The state itself is not changed but for
    /// the dirs' recorded mtimes: the caller re-measures [`PollReport::changed`].
    pub fn poll_dirs(&mut self, scope: PollScope) -> PollReport {
        let mut out = PollReport::default();
        let ndirs = self.names.dirs.len();
        // Per dir: listed (its items not in `found` are gone), or gone or unreadable (`lost`: its
        // items are re-stat'ed).
        let mut listed = vec![false; ndirs];
        let mut lost = vec![false; ndirs];
        // The items seen in a listing, a bit per slot (allocated at the first listing).
        let mut found: Vec<u64> = Vec::new();
        for id in 0..ndirs {
            let rel = self.names.dir_path(id as u32);
            let path = self.root.canonical.join(&rel);
            out.stats += 1;
            let now = match std::fs::symlink_metadata(&path) {
                Ok(md) => mtime_of(&md),
                Err(_) => {
                    lost[id] = true;
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
                lost[id] = true;
                out.changed.push(path);
                continue;
            };
            listed[id] = true;
            if found.is_empty() {
                found = vec![0; self.slots.len().div_ceil(64)];
            }
            // The dir's own entry is re-read when an item below it is re-measured
            // (`restat_ancestors`).
            for e in entries.flatten() {
                let name = e.file_name();
                match self
                    .names
                    .find_item(&self.slots, id as u32, name.as_bytes())
                {
                    Some(item) => found[item as usize / 64] |= 1 << (item % 64),
                    None => {
                        if self.names.find_dir_path(&rel.join(&name)).is_none() {
                            out.changed.push(path.join(&name));
                        }
                    }
                }
            }
        }
        // Items whose newest mtime (encoded; 0 for none) is below this are out of the scope.
        let cutoff = match scope {
            PollScope::Every => 0,
            // A cutoff before 1970 cannot be encoded: every item is after it.
            PollScope::WrittenSince(t) => encode_time(Some(t)).unwrap_or(0),
        };
        // One buffer for every item's absolute path: no allocation per item.
        let mut buf = self.root.canonical.as_os_str().as_bytes().to_vec();
        if buf.last() == Some(&b'/') {
            buf.pop();
        }
        let base = buf.len();
        for id in self.live() {
            let rec = self.slots[id as usize].rec;
            let dir = self.names.item_dir(rec) as usize;
            let gone = listed[dir] && found[id as usize / 64] & (1 << (id % 64)) == 0;
            let newest = encode_time(self.measure_of(id).newest_mtime).unwrap_or(u64::MAX);
            if !gone && newest != 0 && newest < cutoff && !lost[dir] {
                out.skipped += 1;
                continue;
            }
            buf.truncate(base);
            self.names.append_item_path(rec, &mut buf);
            let path = Path::new(OsStr::from_bytes(&buf));
            if gone {
                out.changed.push(path.to_path_buf());
                continue;
            }
            out.stats += 1;
            let moved = match std::fs::symlink_metadata(path) {
                Ok(md) => mtime_of(&md) > newest,
                Err(_) => true,
            };
            if moved {
                out.changed.push(path.to_path_buf());
            }
        }
        out
    }
}
