//! Executing a [`ReclaimPlan`] in batches: an [`Executor`] opens and locks the plan's roots once,
//! then each batch re-reads the open-file table and re-checks and deletes its items in parallel.
//! [`execute`](super::execute) is the one-call wrapper.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use rayon::prelude::*;

use super::attempt::{attempt, Context, Outcome};
use super::measure::{add_freed_links, LinkSeen, LinkedInodes};
use super::plan::plan_id;
use super::tree::RootDir;
use super::{
    protected_paths, AuditOutcome, AuditRecord, DeletedItem, KeptItem, PlannedItem, Policy,
    ReclaimError, ReclaimPlan, ReclaimReport,
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

/// Items per batch of [`execute`](super::execute).
pub const DEFAULT_BATCH_SIZE: usize = 1024;

/// How long [`execute`](super::execute) waits for another reclaim of the same root.
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
    /// The items of the batch deleted, in plan order, with their re-measured allocated bytes
    /// (bytes of inodes hard-linked from several deleted items are settled in the report's
    /// `freed_bytes` only).
    pub deleted: Vec<DeletedItem>,
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
    policy: &'a Policy,
    plan_roots: &'a [PathBuf],
    /// The held plan's items ([`Executor::next_batch`]); empty for a streamed plan.
    items: &'a [PlannedItem],
    /// False for a streamed plan: deleted items go out in each [`BatchOutcome`] only.
    keep_deleted: bool,
    deleted_items: u64,
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
    /// Checks the plan's id, takes a process snapshot of the plan's roots (`probe.scope_to`,
    /// `probe.refresh()`), opens every root an
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
        let mut exec = Executor::streamed(
            &plan.policy,
            &plan.roots,
            plan.items.iter().map(|i| &i.root),
            catalogue,
            probe,
            now,
            opts,
        )?;
        exec.items = &plan.items;
        exec.keep_deleted = true;
        Ok(exec)
    }

    /// An executor for a plan whose items are not held in one list (a plan streamed to a spool,
    /// [`super::StreamedPlan`]): the caller hands batches to [`Executor::run_batch`] itself
    /// ([`Executor::next_batch`] gives none). `policy` and `plan_roots` are the plan's (its
    /// protected list complete, every root); `item_roots` the roots the items lie in (repeats
    /// allowed), each opened and locked as by [`Executor::new`]. The report of
    /// [`Executor::finish`] then lists no deleted items (each batch's
    /// [`BatchOutcome::deleted`] does); its `freed_bytes` is still the whole execute's.
    ///
    /// # Errors
    /// As [`Executor::new`], but no plan id is checked: the caller made the plan.
    pub fn streamed<'r>(
        policy: &'a Policy,
        plan_roots: &'a [PathBuf],
        item_roots: impl IntoIterator<Item = &'r PathBuf>,
        catalogue: &'a Catalogue,
        probe: &'a dyn ProcessProbe,
        now: SystemTime,
        opts: ExecuteOptions<'a>,
    ) -> Result<Executor<'a>, ReclaimError> {
        let mut paths: Vec<&PathBuf> = item_roots.into_iter().collect();
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
        // Only items of the plan's roots are asked about.
        probe.scope_to(plan_roots);
        probe.refresh();
        Ok(Executor {
            policy,
            plan_roots,
            items: &[],
            keep_deleted: false,
            deleted_items: 0,
            catalogue,
            probe,
            now,
            opts,
            roots,
            protected: protected_paths(&policy.protected),
            linked: LinkedInodes::default(),
            next: 0,
            report: ReclaimReport::default(),
            deleted: Vec::new(),
        })
    }

    /// The next batch of at most `opts.batch_size` items, `None` when every item was handed out.
    pub fn next_batch(&mut self) -> Option<Batch<'a>> {
        let items = self.items;
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
    /// the batch's items in parallel (rayon); see [`execute`](super::execute) for the checks.
    pub fn run_batch(&mut self, batch: Batch<'_>) -> BatchOutcome {
        let started = Instant::now();
        self.probe.refresh_open_files();
        let open_files_read = started.elapsed();
        let cx = Context {
            policy: self.policy,
            plan_roots: self.plan_roots,
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
        let mut deleted = Vec::new();
        for (k, outcome) in outcomes.into_iter().enumerate() {
            let item = &batch.items[k];
            let outcome = self.note(batch.first + k, item, outcome, &mut deleted);
            records.push(AuditRecord {
                time: self.now,
                path: item.path.clone(),
                producer: item.producer.clone(),
                allocated_bytes: item.allocated_bytes,
                outcome,
            });
        }
        BatchOutcome {
            records,
            deleted,
            open_files_read,
        }
    }

    /// Adds one outcome to the report; returns its audit outcome.
    fn note(
        &mut self,
        index: usize,
        item: &PlannedItem,
        outcome: Outcome,
        batch_deleted: &mut Vec<DeletedItem>,
    ) -> AuditOutcome {
        let report = &mut self.report;
        match outcome {
            Outcome::Deleted(m) => {
                let d = DeletedItem {
                    path: item.path.clone(),
                    producer: item.producer.clone(),
                    allocated_bytes: m.single_link_bytes,
                };
                self.deleted_items += 1;
                if self.keep_deleted {
                    self.deleted.push((index, d.clone(), m.multi_link));
                } else {
                    // Only what settling hard links at the end needs: its path stays out.
                    report.freed_bytes += m.single_link_bytes;
                    if !m.multi_link.is_empty() {
                        let stub = DeletedItem {
                            path: PathBuf::new(),
                            producer: String::new(),
                            allocated_bytes: 0,
                        };
                        self.deleted.push((index, stub, m.multi_link));
                    }
                }
                batch_deleted.push(d);
                AuditOutcome::Deleted
            }
            Outcome::Kept(reason) => {
                let text = AuditOutcome::Skipped(reason.to_string());
                report.kept.push(KeptItem {
                    path: item.path.clone(),
                    producer: item.producer.clone(),
                    reason,
                });
                text
            }
            Outcome::AlreadyGone => {
                report.already_gone.push(item.path.clone());
                AuditOutcome::AlreadyGone
            }
            Outcome::Failed(e) => {
                report.errors.push(e.entry(&item.path));
                AuditOutcome::Error(e.to_string())
            }
        }
    }

    /// Items deleted so far (a count).
    pub fn deleted_items(&self) -> u64 {
        self.deleted_items
    }

    /// The report of every batch run (freed bytes with hard links settled across batches).
    pub fn finish(mut self) -> ReclaimReport {
        let mut deleted = std::mem::take(&mut self.deleted);
        deleted.sort_by_key(|(i, _, _)| *i);
        add_freed_links(&mut deleted);
        let mut report = std::mem::take(&mut self.report);
        let settled: u64 = deleted.iter().map(|(_, d, _)| d.allocated_bytes).sum();
        if self.keep_deleted {
            report.freed_bytes = settled;
            report.deleted = deleted.into_iter().map(|(_, d, _)| d).collect();
        } else {
            report.freed_bytes += settled;
        }
        report.kept.sort_by(|a, b| a.path.cmp(&b.path));
        report.already_gone.sort();
        report.errors.sort_by(|a, b| a.path.cmp(&b.path));
        report
    }
}
