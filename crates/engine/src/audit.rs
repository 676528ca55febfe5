//! Reclaim as every front end runs it: a plan with the session's protected paths, then an execute
//! whose audit rows are in the history database before anything is deleted (safety rule 7).
//!
//! A service under the monitor and the auto-reclaim rules, over core's `reclaim` and the
//! [`History`]; the API re-exports it as `api::reclaim` for the CLI.

use std::borrow::Cow;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use crate::catalogue::Catalogue;
use crate::history::{History, HistoryError};
use crate::process::ProcessProbe;
use crate::reclaim::{
    self, AuditOutcome, AuditRecord, DeletedItem, Policy, ReclaimError, ReclaimErrorEntry,
    ReclaimReport,
};

/// The audit rows could not be written before deleting, so nothing was deleted (rule 7).
#[derive(Debug, thiserror::Error)]
#[error("nothing deleted: the audit rows could not be written to the history database {path:?}: {source}")]
pub struct AuditNotWritten {
    /// The database file.
    pub path: PathBuf,
    /// Why (boxed: the history's errors are large).
    pub source: Box<HistoryError>,
}

/// A reclaim plan of `producers` (empty: every `reclaim = "auto"` producer) for items older than
/// `older_than`, keeping anything that is or holds one of `protected` (and the home dir), made
/// while `roots` are scanned ([`reclaim::plan_streamed`]): the items go to the plan's spools and
/// only the summary is held, so memory stays flat in the number of items.
/// `progress` is the scan's (entries so far, cancel). Blocking.
///
/// # Errors
/// Creating, writing or reading the plan's temp file (in the temp dir).
#[allow(clippy::too_many_arguments)]
pub fn plan_streamed(
    roots: &[crate::roots::Root],
    catalogue: &Catalogue,
    producers: Vec<String>,
    older_than: Duration,
    protected: Vec<PathBuf>,
    probe: &dyn ProcessProbe,
    now: SystemTime,
    progress: &crate::scan::ScanProgress,
) -> std::io::Result<reclaim::StreamedPlan> {
    let policy = Policy {
        older_than,
        producers,
        protected,
    };
    reclaim::plan_streamed(roots, catalogue, &policy, probe, now, progress)
}

/// What an audited execute did.
#[derive(Debug, Clone, Default)]
pub struct AuditedReport {
    /// The engine's report: deleted, kept at the re-check, already gone, errors.
    pub report: ReclaimReport,
    /// Audit problems after deleting began: outcomes that could not be written (those rows read
    /// `interrupted`), or a batch whose rows could not be written (that batch and the rest were not
    /// deleted).
    pub audit_errors: Vec<ReclaimErrorEntry>,
}

impl AuditedReport {
    /// Every error of the execute, as every front end counts and shows them: the report's, then
    /// the audit problems.
    pub fn errors(&self) -> impl Iterator<Item = &ReclaimErrorEntry> {
        self.report.errors.iter().chain(&self.audit_errors)
    }

    /// What the execute did, as the window and the tray show it: the counts of the whole execute
    /// and the first [`RESULT_ITEMS`](crate::dto::RESULT_ITEMS) items of each kind.
    /// `deleted_items` and `deleted` (its first items, in plan order) come from the batches, since
    /// a streamed execute's report lists no deleted item.
    pub fn into_result(
        self,
        deleted_items: u64,
        mut deleted: Vec<DeletedItem>,
    ) -> crate::dto::ReclaimResult {
        use crate::dto::{ReclaimResult, RESULT_ITEMS};
        deleted.truncate(RESULT_ITEMS);
        let errors: Vec<ReclaimErrorEntry> = self.errors().cloned().collect();
        let report = self.report;
        ReclaimResult {
            deleted_items,
            freed_bytes: report.freed_bytes,
            kept_items: report.kept.len() as u64,
            already_gone_items: report.already_gone.len() as u64,
            error_count: errors.len() as u64,
            deleted,
            kept: report.kept.into_iter().take(RESULT_ITEMS).collect(),
            errors: errors.into_iter().take(RESULT_ITEMS).collect(),
        }
    }
}

/// Where a batched execute is, after each batch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BatchProgress {
    /// Planned items attempted so far.
    pub items_done: u64,
    /// Planned items in all.
    pub items_total: u64,
    /// Items deleted so far.
    pub deleted_items: u64,
    /// Allocated bytes of the items deleted so far, as planned (the report's `freed_bytes` is
    /// the re-measured figure).
    pub deleted_bytes: u64,
}

/// Executes a plan made while scanning ([`reclaim::plan_streamed`]) batch by batch with core's
/// [`reclaim::Executor`] (batches of `batch_size` items, read back from the plan's spool, so
/// memory stays flat however many items there are): for each batch, its `attempt` rows are
/// written to `history` (locked for that write only), then its items are re-checked and deleted,
/// then their outcomes are written ([`run_batches`]). After each batch `on_batch` is called with
/// the progress and the batch's outcome (its deleted items, its audit records, since the report
/// lists no deleted item: see [`reclaim::Executor::streamed`]); [`ControlFlow::Break`] stops
/// before the next batch (a pause): the items not reached get no row and are not deleted. A spool
/// that cannot be read back stops the run before the batch it could not read (an `audit_errors`
/// entry says so).
///
/// # Errors
/// [`AuditNotWritten`] when the first batch's rows cannot be written: nothing is deleted. A later
/// batch whose rows cannot be written stops the run; that error is in the report's
/// `audit_errors`. A plan refused whole (a root busy or not openable, an edited plan) deletes
/// nothing and is the report's one error.
#[allow(clippy::too_many_arguments)]
pub fn execute_streamed_batches(
    plan: &reclaim::StreamedPlan,
    catalogue: &Catalogue,
    probe: &dyn ProcessProbe,
    history: &Mutex<History>,
    db_path: &Path,
    now: SystemTime,
    batch_size: usize,
    on_batch: &mut dyn FnMut(&BatchProgress, &reclaim::BatchOutcome) -> ControlFlow<()>,
) -> Result<AuditedReport, AuditNotWritten> {
    let opts = reclaim::ExecuteOptions {
        batch_size: batch_size.max(1),
        ..reclaim::ExecuteOptions::default()
    };
    let exec = reclaim::Executor::streamed(
        &plan.policy,
        &plan.roots,
        &plan.item_roots,
        catalogue,
        probe,
        now,
        opts,
    );
    let mut exec = match exec {
        Ok(exec) => exec,
        Err(e) => return Ok(AuditedReport::refused(e)),
    };
    let mut items = plan.planned();
    let mut first = 0;
    let mut next = |_: &mut reclaim::Executor<'_>| {
        let mut batch = Vec::with_capacity(batch_size.max(1));
        for item in items.by_ref().take(batch_size.max(1)) {
            match item {
                Ok(i) => batch.push(i),
                Err(e) => return Some(Err(e)),
            }
        }
        if batch.is_empty() {
            return None;
        }
        let at = first;
        first += batch.len();
        Some(Ok((at, Cow::Owned(batch))))
    };
    let audit_errors = run_batches(
        &mut exec,
        &mut next,
        plan.summary.planned_items,
        history,
        db_path,
        now,
        on_batch,
    )?;
    Ok(AuditedReport {
        report: exec.finish(),
        audit_errors,
    })
}

/// The next batch of an execute: the index of its first item and its items (`None` after the
/// last).
pub type NextBatch<'a> = dyn FnMut(
        &mut reclaim::Executor<'a>,
    ) -> Option<std::io::Result<(usize, Cow<'a, [reclaim::PlannedItem]>)>>
    + 'a;

impl AuditedReport {
    /// A plan refused whole (a root busy or not openable, an edited plan): nothing deleted, the
    /// error (with the root's path for a root error) the report's one error.
    pub fn refused(e: ReclaimError) -> AuditedReport {
        let path = match &e {
            ReclaimError::OpenRoot { root, .. }
            | ReclaimError::Busy { root, .. }
            | ReclaimError::Lock { root, .. } => root.clone(),
            _ => PathBuf::new(),
        };
        AuditedReport {
            report: ReclaimReport {
                errors: vec![e.entry(&path)],
                ..ReclaimReport::default()
            },
            audit_errors: Vec::new(),
        }
    }
}

/// Tries to write a batch's outcomes this many times: each try waits up to the history's busy
/// timeout for another writer (another cachewatch, a `sqlite3` shell) to let go, so a lock held
/// for up to about 15 s does not leave deleted items reading `interrupted`.
const OUTCOME_TRIES: u32 = 10;

/// Writes `outcomes` ([`History::finish_reclaims`]), trying again [`OUTCOME_TRIES`] times
/// ~100 ms apart (the history released in between); the last error when every try failed.
fn finish_with_retries<'h>(
    lock: &dyn Fn() -> std::sync::MutexGuard<'h, History>,
    outcomes: &[(i64, AuditOutcome)],
) -> Result<(), HistoryError> {
    let mut tries = 1;
    loop {
        match lock().finish_reclaims(outcomes) {
            Ok(()) => return Ok(()),
            Err(e) if tries >= OUTCOME_TRIES => return Err(e),
            Err(e) => {
                tracing::debug!(error = %e, tries, "audit outcomes not written yet; trying again");
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        }
    }
}

/// The audited batch loop of an execute: for each batch from `next`, its `attempt` rows, then its
/// deletions by `exec`, then its outcomes; `on_batch` after each. Returns the audit problems met
/// after deleting began (the caller's report is `exec.finish()`).
///
/// # Errors
/// [`AuditNotWritten`] when the first batch's rows cannot be written: nothing is deleted.
pub fn run_batches<'a>(
    exec: &mut reclaim::Executor<'a>,
    next: &mut NextBatch<'a>,
    items_total: u64,
    history: &Mutex<History>,
    db_path: &Path,
    now: SystemTime,
    on_batch: &mut dyn FnMut(&BatchProgress, &reclaim::BatchOutcome) -> ControlFlow<()>,
) -> Result<Vec<ReclaimErrorEntry>, AuditNotWritten> {
    let lock = || history.lock().unwrap_or_else(|e| e.into_inner());
    let mut progress = BatchProgress {
        items_total,
        ..BatchProgress::default()
    };
    let mut audit_errors = Vec::new();
    while let Some(batch) = next(exec) {
        let (first, items) = match batch {
            Ok(b) => b,
            Err(e) => {
                audit_errors.push(ReclaimErrorEntry {
                    path: PathBuf::new(),
                    message: format!("stopped: the plan's next items could not be read back: {e}"),
                });
                break;
            }
        };
        let attempts: Vec<AuditRecord> = items
            .iter()
            .map(|i| AuditRecord {
                time: now,
                path: i.path.clone(),
                producer: i.producer.clone(),
                allocated_bytes: i.allocated_bytes,
                outcome: AuditOutcome::Attempt,
            })
            .collect();
        let ids = match lock().begin_reclaims(&attempts) {
            Ok(ids) => ids,
            Err(source) if progress.items_done == 0 => {
                return Err(AuditNotWritten {
                    path: db_path.to_path_buf(),
                    source: Box::new(source),
                })
            }
            Err(e) => {
                audit_errors.push(ReclaimErrorEntry {
                    path: PathBuf::new(),
                    message: format!(
                        "stopped: the audit rows of the next batch could not be written to {}: {e}",
                        db_path.display()
                    ),
                });
                break;
            }
        };
        drop(attempts);
        let done = exec.run_batch(reclaim::Batch {
            first,
            items: &items,
        });
        let outcomes: Vec<(i64, AuditOutcome)> = ids
            .iter()
            .copied()
            .zip(done.records.iter().map(|r| r.outcome.clone()))
            .collect();
        if let Err(e) = finish_with_retries(&lock, &outcomes) {
            audit_errors.push(ReclaimErrorEntry {
                path: PathBuf::new(),
                message: format!(
                    "outcomes not written to {} (the rows read as interrupted): {e}",
                    db_path.display()
                ),
            });
        }
        progress.items_done += done.records.len() as u64;
        for r in done
            .records
            .iter()
            .filter(|r| r.outcome == AuditOutcome::Deleted)
        {
            progress.deleted_items += 1;
            progress.deleted_bytes += r.allocated_bytes;
        }
        if on_batch(&progress, &done).is_break() {
            break;
        }
    }
    Ok(audit_errors)
}
