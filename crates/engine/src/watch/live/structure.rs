//! The own entries of top-level dirs that are not items: a structure dir (`com.apple.gpuarchiver`)
//! holding nothing but claimed items. A full scan counts such a dir's own entry in the root total
//! and no item holds it, so the state counts it there directly, at its recorded dir stat; once the
//! dir holds anything unclaimed it becomes an unattributed item whose measure holds that entry.
//!
//! The rule kept: a top-level dir with a recorded stat and no item of its own is counted in the
//! root total at that stat; one without a recorded stat is counted nowhere (unless it is an item).
//! Every change is O(1) plus O(depth); the items below such a dir are never touched.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::groups::{shift, DirEntryStat};
use super::store::ROOT_DIR;
use super::RootState;

/// True when `rel` is a top-level entry (one component).
fn is_top(rel: &Path) -> bool {
    rel.components().count() == 1
}

impl RootState {
    /// The own entry of the top-level dir `rel` as counted directly in the root total: it has a
    /// recorded stat and no item of its own.
    pub(super) fn direct_own(&self, rel: &Path) -> Option<DirEntryStat> {
        if !is_top(rel) || self.find(rel).is_some() {
            return None;
        }
        self.dir_stat(rel)
    }

    /// Moves the root total by the change of a top-level dir's own entry from `old` to `now` (one
    /// of them unknown: new or gone) when it is counted directly (no item of its own). Called by
    /// [`RootState::restat_ancestors`] before the dir's stat is set to `now`.
    pub(super) fn count_new_or_gone_top(
        &mut self,
        dir: &Path,
        old: Option<DirEntryStat>,
        now: Option<DirEntryStat>,
    ) {
        if !is_top(dir) || self.find(dir).is_some() {
            return;
        }
        let (old, now) = (old.unwrap_or_default(), now.unwrap_or_default());
        shift(
            &mut self.total,
            now.allocated_bytes as i64 - old.allocated_bytes as i64,
            now.apparent_bytes as i64 - old.apparent_bytes as i64,
        );
    }

    /// Takes a top-level dir's directly counted own entry out of the root total before an item
    /// (whose measure holds that entry) takes its place, or as the dir is gone.
    pub(super) fn uncount_direct_own(&mut self, rel: &Path) {
        if let Some(s) = self.direct_own(rel) {
            shift(
                &mut self.total,
                -(s.allocated_bytes as i64),
                -(s.apparent_bytes as i64),
            );
            self.set_dir_stat(rel, None);
        }
    }

    /// The entry at `path` (absolute) was measured as no item. A top-level dir still there (on the
    /// root's device) is structure holding only claimed items (or nothing): its own entry, `own`
    /// as the measure saw it or else read now, is counted in the root total and the items below it
    /// are kept. Anything else is gone, with every item below it ([`RootState::apply`]). Returns
    /// the change in allocated bytes.
    pub fn apply_not_item(&mut self, path: &Path, own: Option<DirEntryStat>) -> i64 {
        let rel = self.root.relative(path).map(Path::to_path_buf);
        let md = std::fs::symlink_metadata(path)
            .ok()
            .filter(|m| m.is_dir() && (self.root_dev == 0 || m.dev() == self.root_dev));
        let (Some(rel), Some(md)) = (rel.filter(|r| is_top(r)), md) else {
            return self.apply(path, None);
        };
        let now = own.unwrap_or(DirEntryStat {
            allocated_bytes: md.blocks() * 512,
            apparent_bytes: md.size(),
        });
        let before = self.total.allocated_bytes as i64;
        // An unattributed item held the own entry (with what was unclaimed in it): it goes, and
        // the entry is counted directly from now on.
        let old = match self.find(&rel) {
            Some(_) => {
                self.set(&rel, None);
                DirEntryStat::default()
            }
            None => self.dir_stat(&rel).unwrap_or_default(),
        };
        shift(
            &mut self.total,
            now.allocated_bytes as i64 - old.allocated_bytes as i64,
            now.apparent_bytes as i64 - old.apparent_bytes as i64,
        );
        self.set_dir_stat(&rel, Some(now));
        self.total.allocated_bytes as i64 - before
    }

    /// Forgets the recorded stats of dir `dir` and every dir below it (they are gone). O(dirs).
    pub(super) fn forget_dir_stats(&mut self, dir: u32) {
        if dir == ROOT_DIR {
            return;
        }
        for id in 0..self.names.dirs.len() as u32 {
            if self.names.is_under(id, dir) {
                self.names.dirs[id as usize].stat = None;
            }
        }
    }

    /// Interns every top-level dir (on the root's device, not a symlink) that is not an item, so
    /// that [`RootState::finish_load`] records its stat: the scan counted its own entry in the root
    /// total (an empty structure dir has no item below it to be interned for). O(top-level
    /// entries).
    pub(super) fn intern_bare_top_dirs(&mut self) {
        let Ok(entries) = std::fs::read_dir(&self.root.canonical) else {
            return;
        };
        for e in entries.flatten() {
            let rel = Path::new(&e.file_name()).to_path_buf();
            let same_dev = std::fs::symlink_metadata(e.path())
                .is_ok_and(|m| m.is_dir() && (self.root_dev == 0 || m.dev() == self.root_dev));
            if same_dev && self.find(&rel).is_none() {
                self.names.make_dir_path(&rel);
            }
        }
    }
}
