//! A big dir (more than one batch of entries) listed on while its earlier batches are walked.
//!
//! The bound on what is in flight comes from structure, not from a wait: a batch task is spawned
//! only after a slot was counted for it, and no task ever waits for a slot. When
//! [`BATCHES_IN_FLIGHT`] batches are out, whoever feeds the pipeline simply stops; the batch that
//! lands next frees its slot and feeds it on (listing the next batch and spawning it). Feeding is
//! done by one task at a time, elected by a request counter (a task that finds another feeding
//! leaves its request for that one), so no task blocks or spins on another task of the pool. The
//! only wait is the end of the dir's `rayon::scope`, rayon's own fork-join wait, which runs other
//! tasks meanwhile. A spin here (`yield_now` until a slot freed) could wait on work stacked
//! beneath its own frame.

use super::*;
use std::os::fd::AsFd;
use std::sync::atomic::AtomicUsize;

/// A big dir being listed: what [`Walker::list_pipelined`] needs of it.
pub(super) struct Big<'p, 'a> {
    /// Its listing, past the first batch.
    pub(super) listing: Listing,
    /// A second fd of it, for the batches' `lstat`s and opens while it is listed on.
    pub(super) shared: OwnedFd,
    /// The names of its serial part (the subdirs queued from it point into these).
    pub(super) serial: &'p Names,
    pub(super) at: &'p At<'a>,
    pub(super) rel: Option<&'p Path>,
    pub(super) depth: usize,
}

/// The shared state of one big dir's pipeline.
struct Pipe<'p, 'a> {
    /// The rest of its listing; `None` once listed to the end. Only the feeding task touches it
    /// (the lock is never contended: [`Pipe::requests`] elects one feeder at a time).
    listing: Mutex<Option<Listing>>,
    /// Feed requests not yet served; the task that raised it from 0 feeds.
    requests: AtomicUsize,
    /// Batches spawned and not yet landed.
    in_flight: AtomicUsize,
    /// The sum of the landed batches.
    total: Mutex<Acc>,
    dir: BorrowedFd<'p>,
    serial: &'p Names,
    at: &'p At<'a>,
    rel: Option<&'p Path>,
    depth: usize,
}

/// One batch in flight fewer when dropped (at the end of its walk, even a panicking one).
struct Landed<'a>(&'a AtomicUsize);

impl Drop for Landed<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl<C: Classify + ?Sized> Walker<'_, C> {
    /// The rest of a big dir: each batch of [`BATCH_ENTRIES`] names is `lstat`ed and its subdirs
    /// walked as one task while the next batch is listed, at most [`BATCHES_IN_FLIGHT`] batches at
    /// once (so buffers stay bounded by the batch), with no wait between batches. `first` is the
    /// batch already listed, `subs` the subdirs queued from the serial part. The sum to add to the
    /// dir.
    pub(super) fn list_pipelined(&self, big: Big<'_, '_>, first: Names, subs: Vec<Sub>) -> Acc {
        let pipe = Pipe {
            listing: Mutex::new(Some(big.listing)),
            requests: AtomicUsize::new(0),
            in_flight: AtomicUsize::new(0),
            total: Mutex::new(Acc::default()),
            dir: big.shared.as_fd(),
            serial: big.serial,
            at: big.at,
            rel: big.rel,
            depth: big.depth,
        };
        rayon::scope(|s| {
            pipe.in_flight.fetch_add(1, Ordering::SeqCst);
            self.spawn_batch(&pipe, s, first, subs);
            self.feed(&pipe, s);
        });
        let total = pipe.total.into_inner();
        total.unwrap_or_else(|p| p.into_inner())
    }

    /// Spawns the walk of `batch` (and of `subs`, queued from the serial part), already counted
    /// in [`Pipe::in_flight`]; once it landed, it feeds the pipeline on.
    fn spawn_batch<'s>(
        &'s self,
        pipe: &'s Pipe<'s, 's>,
        s: &rayon::Scope<'s>,
        batch: Names,
        subs: Vec<Sub>,
    ) {
        s.spawn(move |s| {
            {
                let _landed = Landed(&pipe.in_flight);
                let (mut acc, groups) =
                    self.stat_batch(&batch, pipe.dir, pipe.at, pipe.rel, pipe.depth);
                let parent = Parent {
                    fd: Some(pipe.dir),
                    at: pipe.at,
                    serial: pipe.serial,
                    batch: &batch,
                };
                acc = acc.merge(self.descend_all(subs, groups, parent, pipe.depth + 1));
                let mut sum = pipe.total.lock().unwrap_or_else(|p| p.into_inner());
                *sum = std::mem::take(&mut *sum).merge(acc);
            }
            self.feed(pipe, s);
        });
    }

    /// Lists and spawns batches while fewer than [`BATCHES_IN_FLIGHT`] are out, if no other task
    /// is doing so; else leaves a request that the feeding task serves before it stops.
    fn feed<'s>(&'s self, pipe: &'s Pipe<'s, 's>, s: &rayon::Scope<'s>) {
        if pipe.requests.fetch_add(1, Ordering::SeqCst) != 0 {
            return;
        }
        let mut served = 1;
        loop {
            self.feed_once(pipe, s);
            match pipe
                .requests
                .compare_exchange(served, 0, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => return,
                // Requests came meanwhile (a batch landed): feed again for them.
                Err(now) => served = now,
            }
        }
    }

    fn feed_once<'s>(&'s self, pipe: &'s Pipe<'s, 's>, s: &rayon::Scope<'s>) {
        let mut listing = pipe.listing.lock().unwrap_or_else(|p| p.into_inner());
        while pipe.in_flight.load(Ordering::SeqCst) < BATCHES_IN_FLIGHT {
            if self.progress.is_cancelled() {
                // Nothing more is listed; the dir's fd goes with the listing.
                *listing = None;
                return;
            }
            let Some(l) = listing.as_mut() else { return };
            let mut batch = Names::default();
            let mut more = true;
            while more && batch.len() < BATCH_ENTRIES {
                let read = l.read_some(|dir, name| {
                    batch.push_listed(name, platform::listed_stat(dir, name));
                });
                more = self.read_on(read, pipe.at);
            }
            if !more {
                // Listed to the end: its fd and buffer go now, the batches use `dir`.
                *listing = None;
            }
            if batch.is_empty() {
                return;
            }
            pipe.in_flight.fetch_add(1, Ordering::SeqCst);
            self.spawn_batch(pipe, s, batch, Vec::new());
        }
    }
}
