//! Listing one open dir in batches: the part of the walk that bounds its buffers by the batch,
//! not by the dir, and hands subdirs to the parallel descent.

use super::pipeline::Big;
use super::*;

impl<C: Classify + ?Sized> Walker<'_, C> {
    /// Lists the open dir `fd` (see [`Walker::children`]).
    ///
    /// The first [`SERIAL_ENTRIES`] entries are `lstat`ed (and classified) as they are listed; the
    /// rest of a big dir is listed [`BATCH_ENTRIES`] at a time, each batch `lstat`ed in parallel
    /// chunks and its subdirs walked (in parallel). A dir of more than one batch is listed on while
    /// up to [`BATCHES_IN_FLIGHT`] of its batches are walked, through a second fd of it (within the
    /// fd budget; without one, batch after batch). So one huge dir neither serializes the walk nor
    /// holds its whole listing: the walk's buffers are bounded by the batch, not by the dir. Subdirs are opened relative to the dir's fd, kept open while they
    /// are walked within the [`FdBudget`]; past it a dir whose listing ended within its first batch
    /// is closed first (its subdirs then opened by path), so open fds grow only with nested dirs of
    /// more than [`BATCH_ENTRIES`] entries.
    pub(super) fn list(&self, fd: OwnedFd, at: &At<'_>, rel: Option<&Path>, depth: usize) -> Acc {
        let mut listing = match Listing::new(fd) {
            Ok(l) => Some(l),
            Err(e) => {
                self.fail(|| at.path(), "read dir", e);
                return Acc::default();
            }
        };
        let mut held = false;
        let mut acc = Acc::default();
        let mut subs = Vec::new();
        let mut relbuf = rel.map(RelBuf::new);
        let mut serial = Names::default();
        let mut batch = Names::default();
        let mut listed = 0usize;
        let mut more = true;
        while more && batch.is_empty() {
            let Some(l) = listing.as_mut() else { break };
            let read = l.read_some(|dir, name| {
                if listed < SERIAL_ENTRIES {
                    let e = Entry {
                        dir,
                        at,
                        name,
                        listed: None,
                    };
                    let keep = Keep::Copy(&mut serial);
                    self.entry(e, keep, relbuf.as_mut(), depth + 1, &mut acc, &mut subs);
                } else {
                    batch.push_listed(name, platform::listed_stat(dir, name));
                }
                listed += 1;
            });
            more = self.read_on(read, at);
        }
        self.progress.add_entries(listed.min(SERIAL_ENTRIES) as u64);
        while more && batch.len() < BATCH_ENTRIES {
            let Some(l) = listing.as_mut() else { break };
            let read = l.read_some(|dir, name| {
                batch.push_listed(name, platform::listed_stat(dir, name));
            });
            more = self.read_on(read, at);
        }
        // Named in a stall report while it is listed (a big dir is rare: one path each).
        let _busy = more.then(|| self.progress.listing(at.path()));
        // A big dir: listed on while its earlier batches are walked, with its own fd for them.
        // The listing moves into the pipeline only once that fd is had: without one (the fd budget
        // spent, e.g. by a chain of nested dirs), it stays here and the dir is walked batch after
        // batch below. (Taking it before knowing left the rest of the dir unlisted and this loop
        // spinning on `more` forever.)
        let shared = listing
            .as_ref()
            .filter(|_| more && !self.progress.is_cancelled())
            .and_then(|l| self.second_fd(l));
        if let Some(shared) = shared {
            if let Some(l) = listing.take() {
                let big = Big {
                    listing: l,
                    shared,
                    serial: &serial,
                    at,
                    rel,
                    depth,
                };
                let rest = self.list_pipelined(big, batch, subs);
                self.fds.give_back();
                return acc.merge(rest);
            }
            self.fds.give_back();
        }
        loop {
            while more && batch.len() < BATCH_ENTRIES {
                let Some(l) = listing.as_mut() else {
                    // Closed only once listed to the end (`more` false): nothing is left unlisted.
                    more = false;
                    break;
                };
                let read = l.read_some(|dir, name| {
                    batch.push_listed(name, platform::listed_stat(dir, name));
                });
                more = self.read_on(read, at);
            }
            // Subdirs in groups (the serial part, then one per chunk), walked without concatenating.
            let mut groups: Vec<Vec<Sub>> = Vec::new();
            if let (false, Some(l)) = (batch.is_empty(), listing.as_ref()) {
                let (more_acc, more_groups) = self.stat_batch(&batch, l.fd(), at, rel, depth);
                acc = acc.merge(more_acc);
                groups = more_groups;
            }
            let has_subs = !subs.is_empty() || groups.iter().any(|g| !g.is_empty());
            if has_subs && listing.is_some() && !held {
                held = self.fds.take();
                if !held && !more {
                    // Over the fd budget: close the dir before walking its subdirs.
                    listing = None;
                }
            }
            let parent = Parent {
                fd: listing.as_ref().map(Listing::fd),
                at,
                serial: &serial,
                batch: &batch,
            };
            acc = acc.merge(self.descend_all(std::mem::take(&mut subs), groups, parent, depth + 1));
            batch.clear();
            if !more || self.progress.is_cancelled() {
                break;
            }
        }
        if held {
            self.fds.give_back();
        }
        acc
    }

    /// A second fd of `listing`'s dir (within the fd budget) for its batches' walks while it is
    /// listed on; `None` (the dir is then walked batch after batch) when none is left.
    fn second_fd(&self, listing: &Listing) -> Option<OwnedFd> {
        if !self.fds.take() {
            return None;
        }
        // A failed dup is not a failure of the walk: the dir is walked batch after batch instead.
        let fd = listing.fd().try_clone_to_owned().ok();
        if fd.is_none() {
            self.fds.give_back();
        }
        fd
    }

    /// `lstat`s (and classifies) the entries of `batch`, names of the dir `dir`, in parallel
    /// chunks of [`STAT_CHUNK`]: their sum (files and items' heads) and the subdirs to walk, one
    /// group per chunk.
    pub(super) fn stat_batch(
        &self,
        batch: &Names,
        dir: BorrowedFd<'_>,
        at: &At<'_>,
        rel: Option<&Path>,
        depth: usize,
    ) -> (Acc, Vec<Vec<Sub>>) {
        let chunks: Vec<(Acc, Vec<Sub>)> = batch
            .spans()
            .par_chunks(STAT_CHUNK)
            .enumerate()
            .map(|(c, chunk)| {
                let mut acc = Acc::default();
                let mut subs = Vec::new();
                let mut relbuf = rel.map(RelBuf::new);
                for (j, &span) in chunk.iter().enumerate() {
                    let Some(name) = batch.get(span) else {
                        continue;
                    };
                    let listed = batch.listed_stat(c * STAT_CHUNK + j);
                    let e = Entry {
                        dir,
                        at,
                        name,
                        listed,
                    };
                    let keep = Keep::Batch(span);
                    self.entry(e, keep, relbuf.as_mut(), depth + 1, &mut acc, &mut subs);
                }
                self.progress.add_entries(chunk.len() as u64);
                (acc, subs)
            })
            .collect();
        let mut acc = Acc::default();
        let mut groups = Vec::with_capacity(chunks.len() + 1);
        for (more_acc, more_subs) in chunks {
            acc = acc.merge(more_acc);
            groups.push(more_subs);
        }
        (acc, groups)
    }

    /// Whether to read on after a read of the listing: reports its error (which ends it).
    pub(super) fn read_on(&self, read: io::Result<bool>, at: &At<'_>) -> bool {
        read.unwrap_or_else(|e| {
            self.fail(|| at.path(), "read dir", e);
            false
        })
    }

    /// Walks the queued subdirs `subs` and `groups` (at `depth`) of `parent`, in parallel when
    /// there are several: the sum to add to their parent.
    pub(super) fn descend_all(
        &self,
        mut subs: Vec<Sub>,
        mut groups: Vec<Vec<Sub>>,
        parent: Parent<'_>,
        depth: usize,
    ) -> Acc {
        match (subs.len(), groups.is_empty()) {
            (0, true) => Acc::default(),
            (1, true) => subs
                .first_mut()
                .map_or_else(Acc::default, |s| self.descend(s, parent, depth)),
            _ => {
                groups.push(subs);
                // By reference: a queued subdir is a few hundred bytes, not worth moving.
                groups
                    .par_iter_mut()
                    .flat_map(|g| g.par_iter_mut())
                    .map(|s| self.descend(s, parent, depth))
                    .reduce(Acc::default, Acc::merge)
            }
        }
    }

    /// Walks a queued subdir of `parent` at `depth`: the sum to add to its parent (nothing for an
    /// item).
    pub(super) fn descend(&self, sub: &mut Sub, parent: Parent<'_>, depth: usize) -> Acc {
        let cname = match sub.name {
            SubName::Serial(span) => parent.serial.get(span),
            SubName::Batch(span) => parent.batch.get(span),
        };
        let Some(cname) = cname else {
            return Acc::default();
        };
        let name = OsStr::from_bytes(cname.to_bytes());
        let at = At::child(parent.at, name);
        let open = parent.fd.map_or(Open::Path, |fd| Open::At(fd, cname));
        match std::mem::replace(&mut sub.next, Next::Plain) {
            Next::Plain => {
                // A subdir of a top-level dir whose children are grouped: its own children are
                // grouped too (two levels down), within the top-level dir's bounds.
                let own = parent
                    .at
                    .kids
                    .and_then(|k| lock_kids(k).nest())
                    .map(Mutex::new);
                let marked = own.as_ref().map(|k| at.with_kids(k));
                let inner = self.children(
                    open,
                    marked.as_ref().unwrap_or(&at),
                    sub.rel.as_deref(),
                    depth,
                );
                if let Some(kids) = parent.at.kids {
                    let m = sub.head.own.merge(inner).into_measure(sub.head.birth);
                    let below = own
                        .map(|k| k.into_inner().unwrap_or_else(|p| p.into_inner()))
                        .and_then(|k| k.finish(name));
                    let mut kids = lock_kids(kids);
                    kids.add(name, true, &m);
                    if let Some(g) = below {
                        kids.add_below(g);
                    }
                }
                inner
            }
            Next::Item(claim) => {
                self.finish(open, &at, sub.head, claim, sub.rel.as_deref(), depth);
                Acc::default()
            }
        }
    }
}

/// The grouper of a dir's children, a poisoned lock taken as is (a panic elsewhere leaves the
/// counts it had).
fn lock_kids(k: &Mutex<Nested>) -> std::sync::MutexGuard<'_, Nested> {
    k.lock().unwrap_or_else(|p| p.into_inner())
}
