//! Sums the walk's threads add to without sharing a cache line: one slot per scan thread (by
//! rayon thread index), summed when read. A counter every thread bumps once per dir or item costs
//! a cache-line transfer per bump when shared.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Slots per sharded value (threads beyond this share slots).
const SHARDS: usize = 32;

/// A value on its own cache line.
#[derive(Debug, Default)]
#[repr(align(128))]
struct Line<T>(T);

/// The slot of the calling thread.
fn slot() -> usize {
    rayon::current_thread_index().unwrap_or(0) % SHARDS
}

/// A counter added to from many threads.
#[derive(Debug)]
pub(crate) struct Count(Box<[Line<AtomicU64>]>);

impl Default for Count {
    fn default() -> Count {
        Count((0..SHARDS).map(|_| Line::default()).collect())
    }
}

impl Count {
    pub(crate) fn add(&self, n: u64) {
        self.0[slot()].0.fetch_add(n, Ordering::Relaxed);
    }

    /// The sum so far.
    pub(crate) fn get(&self) -> u64 {
        self.0.iter().map(|l| l.0.load(Ordering::Relaxed)).sum()
    }
}

/// A value merged into from many threads, each into its own slot.
#[derive(Debug)]
pub(crate) struct Merged<T>(Box<[Line<Mutex<T>>]>);

impl<T: Default> Default for Merged<T> {
    fn default() -> Merged<T> {
        Merged((0..SHARDS).map(|_| Line::default()).collect())
    }
}

impl<T> Merged<T> {
    /// Runs `f` on the calling thread's slot.
    pub(crate) fn with(&self, f: impl FnOnce(&mut T)) {
        let mut v = self.0[slot()].0.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut v);
    }

    /// Runs `f` on every slot in turn.
    pub(crate) fn each(&self, mut f: impl FnMut(&mut T)) {
        for l in self.0.iter() {
            let mut v = l.0.lock().unwrap_or_else(|p| p.into_inner());
            f(&mut v);
        }
    }

    /// Every slot's value, folded with `merge`.
    pub(crate) fn into_fold(self, init: T, merge: impl Fn(T, T) -> T) -> T {
        self.0
            .into_vec()
            .into_iter()
            .map(|l| l.0.into_inner().unwrap_or_else(|p| p.into_inner()))
            .fold(init, merge)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rayon::prelude::*;

    #[test]
    fn sums_over_threads_equal_the_plain_sums() {
        let c = Count::default();
        let m: Merged<u64> = Merged::default();
        (0..10_000u64).into_par_iter().for_each(|i| {
            c.add(i);
            m.with(|v| *v += 1);
        });
        assert_eq!(c.get(), (0..10_000u64).sum::<u64>());
        assert_eq!(m.into_fold(0, |a, b| a + b), 10_000);
    }
}
