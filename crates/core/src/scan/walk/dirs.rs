//! The own entries of the dirs a walk classified, kept for the watcher's baselines (see
//! [`super::super::measure_entry_with`]).

use std::path::Path;
use std::sync::Mutex;

use super::{Acc, Classify, DirOwn, Walker};

impl<C: Classify + ?Sized> Walker<'_, C> {
    /// Makes the walk keep the own entry of every unclaimed dir whose entries it classifies (less
    /// than [`Walker::max_depth`] deep), as it counted it ([`Walker::take_dirs`]).
    pub(crate) fn record_dirs(mut self) -> Self {
        self.dirs = Some(Mutex::new(Vec::new()));
        self
    }

    /// The walk with a budget of `max` fds instead of a quarter of the open-file limit.
    #[cfg(test)]
    pub(crate) fn with_fd_budget(mut self, max: usize) -> Self {
        self.fds = super::FdBudget::with_max(max);
        self
    }

    /// The own entries kept by [`Walker::record_dirs`] (empty when not asked), in no order.
    pub(crate) fn take_dirs(&self) -> Vec<DirOwn> {
        self.dirs.as_ref().map_or_else(Vec::new, |d| {
            std::mem::take(&mut *d.lock().unwrap_or_else(|p| p.into_inner()))
        })
    }

    /// Keeps the own entry `own` of the dir at `rel` (relative to the root) when asked to.
    pub(super) fn record_dir(&self, rel: &Path, own: &Acc) {
        if let Some(dirs) = &self.dirs {
            let own = DirOwn::of(rel, own);
            dirs.lock().unwrap_or_else(|p| p.into_inner()).push(own);
        }
    }
}
