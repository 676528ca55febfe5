//! Executing a [`ReclaimPlan`] in batches: an [`Executor`] opens and locks the plan's roots once,
//! then each batch re-reads the open-file table and re-checks and deletes its items in parallel.
//! [`execute`] is the one-call wrapper.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use rayon::prelude::*;

use super::attempt::{attempt, Context, Outcome};
use super::measure::{LinkSeen, LinkedInodes};
use super::plan::plan_id;
use super::tree::RootDir;
use super::{
    protected_paths, AuditRecord, DeletedItem, KeptItem, PlannedItem, ReclaimError, ReclaimPlan,
    ReclaimReport,
};
use crate::catalogue::Catalogue;
use crate::process::ProcessProbe;

/// Points in one item's attempt where [`ExecuteOptions::checkpoint`] is called (on the worker
/// thread, with the item): tests use them to change the tree at the worst moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checkpoint {
    /// The item was reached through fds and passed the identity, owner and in-use checks; its
    /// subtree is not yet walked.
    Rechecked,
    /// Every check passed, the item was re-measured; nothing of it is deleted yet.
    BeforeDelete,
}

/// The checkpoint callback of [`ExecuteOptions`].
pub type CheckpointFn<'a> = dyn Fn(Checkpoint, &PlannedItem) + Sync + 'a;

/// How [`Executor`] runs.
#[derive(Clone, Copy)]
pub struct ExecuteOptions<'a> {
    /// Items per batch (at least 1): the open-file table is re-read before each batch.
    pub batch_size: usize,
    /// How long to wait for another reclaim holding a root's lock before refusing with
    /// [`ReclaimError::Busy`].
    pub lock_wait: Duration,
    /// Called at each [`Checkpoint`] of each item, from worker threads.
    pub checkpoint: Option<&'a CheckpointFn<'a>>,
}

/// Items per batch of [`execute`].
pub const DEFAULT_BATCH_SIZE: usize = 1024;

/// How long [`execute`] waits for another reclaim of the same root.
pub const DEFAULT_LOCK_WAIT: Duration = Duration::from_secs(10);

impl Default for ExecuteOptions<'_> {
    fn default() -> Self {
        ExecuteOptions {
            batch_size: DEFAULT_BATCH_SIZE,
            lock_wait: DEFAULT_LOCK_WAIT,
            checkpoint: None,
        }
    }
}

impl std::fmt::Debug for ExecuteOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecuteOptions")
            .field("batch_size", &self.batch_size)
            .field("lock_wait", &self.lock_wait)
            .field("checkpoint", &self.checkpoint.is_some())
            .finish()
    }
}

/// The next items to attempt: `items` are `plan.items[first..first + items.len()]`.
#[derive(Debug, Clone, Copy)]
pub struct Batch<'a> {
    /// Index of the first item in the plan.
    pub first: usize,
    /// The items, in plan order.
    pub items: &'a [PlannedItem],
}

/// What one batch did.
#[derive(Debug, Clone)]
pub struct BatchOutcome {
    /// One audit record per item of the batch, in plan order, outcome filled (`deleted`,
    /// `already-gone`, `skipped: <reason>`, `error: <message>`).
    pub records: Vec<AuditRecord>,
    /// Time spent re-reading the open-file table before the batch.
    pub open_files_read: Duration,
}

/// A plan being executed batch by batch, so a caller can write the audit rows of a batch before
/// deleting it and report progress:
///
/// ```no_run
/// # use cachewatch_core::reclaim::*;
/// # fn f(plan: &ReclaimPlan, cat: &cachewatch_core::Catalogue,
/// #      probe: &dyn cachewatch_core::process::ProcessProbe) -> Result<(), ReclaimError> {
/// let mut exec = Executor::new(plan, cat, probe, std::time::SystemTime::now(), ExecuteOptions::default())?;
/// while let Some(batch) = exec.next_batch() {
///     // write the batch's audit rows (outcome "attempt") here
///     let done = exec.run_batch(batch);
///     // record done.records' outcomes here
/// }
/// let report = exec.finish();
/// # Ok(()) }
/// ```
///
/// The roots stay open (and locked with `flock`) until the executor is dropped.
pub struct Executor<'a> {
    plan: &'a ReclaimPlan,
    catalogue: &'a Catalogue,
    probe: &'a dyn ProcessProbe,
    now: SystemTime,
    opts: ExecuteOptions<'a>,
    roots: HashMap<PathBuf, Option<RootDir>>,
    protected: Vec<PathBuf>,
    linked: LinkedInodes,
    next: usize,
    report: ReclaimReport,
    deleted: Vec<(usize, DeletedItem, Vec<LinkSeen>)>,
}

impl<'a> Executor<'a> {
    /// Checks the plan's id, takes a process snapshot (`probe.refresh()`), opens every root an
    /// item lies in (by its canonical path, last component not followed) and locks each (sorted
    /// by path, so two executes never wait on each other in a cycle).
    ///
    /// # Errors
    /// [`ReclaimError::PlanMismatch`] when the plan's id does not match its contents (edited or
    /// corrupted); [`ReclaimError::OpenRoot`] when a root exists but is not a dir (or is a
    /// symlink); [`ReclaimError::Busy`] when another reclaim holds a root longer than
    /// `opts.lock_wait`; [`ReclaimError::Lock`] when locking fails otherwise. Nothing is deleted.
    pub fn new(
        plan: &'a ReclaimPlan,
        catalogue: &'a Catalogue,
        probe: &'a dyn ProcessProbe,
        now: SystemTime,
        opts: ExecuteOptions<'a>,
    ) -> Result<Executor<'a>, ReclaimError> {
        let expected = plan_id(&plan.policy, &plan.roots, &plan.items);
        if expected != plan.id {
            return Err(ReclaimError::PlanMismatch {
                found: plan.id.clone(),
                expected,
            });
        }
        let mut paths: Vec<&PathBuf> = plan.items.iter().map(|i| &i.root).collect();
        paths.sort();
        paths.dedup();
        let mut roots = HashMap::new();
        for path in paths {
            let root = RootDir::open(path)?;
            if let Some(r) = &root {
                r.lock(opts.lock_wait)?;
            }
            roots.insert(path.clone(), root);
        }
        probe.refresh();
        Ok(Executor {
            plan,
            catalogue,
            probe,
            now,
            opts,
            roots,
            protected: protected_paths(&plan.policy.protected),
            linked: LinkedInodes::default(),
            next: 0,
            report: ReclaimReport::default(),
            deleted: Vec::new(),
        })
    }

    /// The next batch of at most `opts.batch_size` items, `None` when every item was handed out.
    pub fn next_batch(&mut self) -> Option<Batch<'a>> {
        let items = &self.plan.items;
        if self.next >= items.len() {
            return None;
        }
        let end = (self.next + self.opts.batch_size.max(1)).min(items.len());
        let batch = Batch {
            first: self.next,
            items: &items[self.next..end],
        };
        self.next = end;
        Some(batch)
    }

    /// Re-reads the open-file table (`probe.refresh_open_files()`), then re-checks and deletes
    /// the batch's items in parallel (rayon); see [`execute`] for the checks.
    pub fn run_batch(&mut self, batch: Batch<'a>) -> BatchOutcome {
        let started = Instant::now();
        self.probe.refresh_open_files();
        let open_files_read = started.elapsed();
        let cx = Context {
            plan: self.plan,
            protected: &self.protected,
            catalogue: self.catalogue,
            probe: self.probe,
            linked: &self.linked,
            now: self.now,
            roots: &self.roots,
            checkpoint: self.opts.checkpoint,
        };
        let outcomes: Vec<Outcome> = batch.items.par_iter().map(|i| attempt(i, &cx)).collect();
        let mut records = Vec::with_capacity(outcomes.len());
        for (k, outcome) in outcomes.into_iter().enumerate() {
            let item = &batch.items[k];
            records.push(AuditRecord {
                time: self.now,
                path: item.path.clone(),
                producer: item.producer.clone(),
                allocated_bytes: item.allocated_bytes,
                outcome: self.note(batch.first + k, item, outcome),
            });
        }
        BatchOutcome {
            records,
            open_files_read,
        }
    }

    /// Adds one outcome to the report; returns its audit text.
    fn note(&mut self, index: usize, item: &PlannedItem, outcome: Outcome) -> String {
        let report = &mut self.report;
        match outcome {
            Outcome::Deleted(m) => {
                let d = DeletedItem {
                    path: item.path.clone(),
                    producer: item.producer.clone(),
                    allocated_bytes: m.single_link_bytes,
                };
                self.deleted.push((index, d, m.multi_link));
                "deleted".to_owned()
            }
            Outcome::Kept(reason) => {
                let text = format!("skipped: {reason}");
                report.kept.push(KeptItem {
                    path: item.path.clone(),
                    producer: item.producer.clone(),
                    reason,
                });
                text
            }
            Outcome::AlreadyGone => {
                report.already_gone.push(item.path.clone());
                "already-gone".to_owned()
            }
            Outcome::Failed(e) => {
                report.errors.push(e.entry(&item.path));
                format!("error: {e}")
            }
        }
    }

    /// The report of every batch run (freed bytes with hard links settled across batches).
    pub fn finish(mut self) -> ReclaimReport {
        let mut deleted = std::mem::take(&mut self.deleted);
        deleted.sort_by_key(|(i, _, _)| *i);
        add_freed_links(&mut deleted);
        let mut report = std::mem::take(&mut self.report);
        report.freed_bytes = deleted.iter().map(|(_, d, _)| d.allocated_bytes).sum();
        report.deleted = deleted.into_iter().map(|(_, d, _)| d).collect();
        report.kept.sort_by(|a, b| a.path.cmp(&b.path));
        report.already_gone.sort();
        report.errors.sort_by(|a, b| a.path.cmp(&b.path));
        report
    }
}

/// Executes `plan` with [`ExecuteOptions::default`]: batches of [`DEFAULT_BATCH_SIZE`] items,
/// `audit` called once per item attempted (on the calling thread, in plan order, after its batch).
///
/// The re-check, per item: the path is absolute, plain and strictly inside its root; it is not
/// and does not hold any of the plan's roots nor any protected path (the plan's
/// `policy.protected` and the user's home dir read again now); the rule still exists and allows
/// deletion. The item is then reached from its root's fd (opened once, never through a symlink)
/// one dir at a time, never following a symlink nor crossing a mount; its `lstat` through its
/// parent's fd gives the planned device, inode, birth time and symlink-ness; the owner pid is
/// still not a live owner, the rule's processes still do not run, and no open or mapped file lies
/// under it (the open files re-read before each batch). One walk through the item's own fd finds
/// no mount inside (else [`KeepReason::HoldsMount`](super::KeepReason::HoldsMount)), nothing
/// modified after the plan's newest mtime, and an age still at least max(threshold, rule floor).
/// Then its contents go with `unlinkat` relative to each parent fd, and the item itself relative
/// to its parent's fd once its name still names the same inode (a symlink: the link goes, the
/// target stays). `NotFound` at any step means already gone (`already_gone`, audit outcome
/// `already-gone`, never `deleted`).
///
/// Freed bytes are the re-measured allocated bytes of what was deleted. An inode with several
/// links counts only when all its links were deleted within this execute (the links met in
/// deleted items reach the highest `st_nlink` seen), and then once, in the first deleted item
/// (plan order) that held one of them; a file hard-linked from outside the deleted items frees
/// nothing.
///
/// A plan refused whole ([`Executor::new`]'s errors: id mismatch, a root that cannot be opened,
/// another reclaim holding a root) deletes nothing: the report carries that one error with an
/// empty path (the root's path for a root error) and no audit call is made.
pub fn execute(
    plan: &ReclaimPlan,
    catalogue: &Catalogue,
    probe: &dyn ProcessProbe,
    now: SystemTime,
    audit: &mut dyn FnMut(&AuditRecord),
) -> ReclaimReport {
    let mut exec = match Executor::new(plan, catalogue, probe, now, ExecuteOptions::default()) {
        Ok(exec) => exec,
        Err(e) => {
            let path = match &e {
                ReclaimError::OpenRoot { root, .. }
                | ReclaimError::Busy { root, .. }
                | ReclaimError::Lock { root, .. } => root.clone(),
                _ => PathBuf::new(),
            };
            let mut report = ReclaimReport::default();
            report.errors.push(e.entry(Path::new(&path)));
            return report;
        }
    };
    while let Some(batch) = exec.next_batch() {
        for rec in exec.run_batch(batch).records {
            audit(&rec);
        }
    }
    exec.finish()
}

/// Adds to each deleted item the bytes of the multi-link inodes it freed: an inode whose links
/// met in deleted items number at least the highest `st_nlink` any walk saw (the first walk of it
/// ran before any of those links went), counted in the first item (in `deleted`'s order) holding
/// one of its links.
fn add_freed_links(deleted: &mut [(usize, DeletedItem, Vec<LinkSeen>)]) {
    // (dev, ino) -> (links met, highest nlink seen)
    let mut links: HashMap<(u64, u64), (u64, u64)> = HashMap::new();
    for l in deleted.iter().flat_map(|(_, _, ls)| ls) {
        let e = links.entry((l.dev, l.ino)).or_insert((0, 0));
        e.0 += 1;
        e.1 = e.1.max(l.nlink);
    }
    let mut counted: HashSet<(u64, u64)> = HashSet::new();
    for (_, d, ls) in deleted.iter_mut() {
        for l in ls.iter() {
            let key = (l.dev, l.ino);
            let all_met = links.get(&key).is_some_and(|(met, nlink)| met >= nlink);
            if all_met && counted.insert(key) {
                d.allocated_bytes += l.allocated_bytes;
            }
        }
    }
}
