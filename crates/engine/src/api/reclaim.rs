//! Reclaim as every front end runs it: a plan with the session's protected paths, then an execute
//! whose audit rows are in the history database before anything is deleted (safety rule 7).

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::catalogue::Catalogue;
use crate::history::{History, ATTEMPT};
use crate::inventory::Inventory;
use crate::process::ProcessProbe;
use crate::reclaim::{
    self, AuditRecord, ExecuteOptions, Executor, Policy, ReclaimError, ReclaimErrorEntry,
    ReclaimPlan, ReclaimReport,
};

use super::ApiError;

/// The audit outcome of a deleted item.
const DELETED: &str = "deleted";

/// A reclaim plan of `producers` (empty: every `reclaim = "auto"` producer) for items older than
/// `older_than`, keeping anything that is or holds one of `protected` (and the home dir).
/// Blocking: reads the inventory and the process table through `probe`.
pub fn plan(
    inv: &Inventory,
    catalogue: &Catalogue,
    producers: Vec<String>,
    older_than: Duration,
    protected: Vec<PathBuf>,
    probe: &dyn ProcessProbe,
    now: SystemTime,
) -> ReclaimPlan {
    let policy = Policy {
        older_than,
        producers,
        protected,
    };
    reclaim::plan(inv, catalogue, &policy, probe, now)
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

/// Progress of an audited execute, after each batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Items attempted so far.
    pub done: usize,
    /// Items in the plan.
    pub total: usize,
    /// Items deleted so far.
    pub deleted: usize,
}

/// Executes `plan` with its audit trail in `history` (the file `db_path`, named in messages),
/// batch by batch (core's [`Executor`]): before each batch, one `attempt` row per item of the
/// batch; then the batch's deletions (each item re-checked just before it goes, the open-file
/// table re-read per batch); then the batch's outcomes (`deleted`, `already-gone`, `skipped: …`,
/// `error: …`). A process killed in between leaves `attempt` rows, which read as `interrupted`:
/// no deletion is ever without its row. Memory stays bounded by the batch, not the plan.
///
/// # Errors
/// [`ApiError::AuditNotWritten`] when the first batch's rows cannot be written: then nothing is
/// deleted. A later batch whose rows cannot be written stops the execute there (reported in
/// [`AuditedReport::audit_errors`]). A plan the executor refuses whole (edited plan, a root
/// another reclaim holds) deletes nothing and is reported in the report's errors, with no rows.
pub fn execute_audited(
    plan: &ReclaimPlan,
    catalogue: &Catalogue,
    probe: &dyn ProcessProbe,
    history: &mut History,
    db_path: &Path,
    now: SystemTime,
) -> Result<AuditedReport, ApiError> {
    execute_audited_with(plan, catalogue, probe, history, db_path, now, &mut |_| true)
}

/// [`execute_audited`], calling `on_batch` after each batch with the progress; it returns `false`
/// to stop before the next batch (a cancelled reclaim: what was done is reported).
///
/// # Errors
/// As [`execute_audited`].
pub fn execute_audited_with(
    plan: &ReclaimPlan,
    catalogue: &Catalogue,
    probe: &dyn ProcessProbe,
    history: &mut History,
    db_path: &Path,
    now: SystemTime,
    on_batch: &mut dyn FnMut(Progress) -> bool,
) -> Result<AuditedReport, ApiError> {
    if plan.items.is_empty() {
        return Ok(AuditedReport::default());
    }
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
            report.errors.push(e.entry(&path));
            return Ok(AuditedReport {
                report,
                audit_errors: Vec::new(),
            });
        }
    };
    let mut audit_errors = Vec::new();
    let mut progress = Progress {
        done: 0,
        total: plan.items.len(),
        deleted: 0,
    };
    while let Some(batch) = exec.next_batch() {
        let attempts: Vec<AuditRecord> = batch
            .items
            .iter()
            .map(|i| AuditRecord {
                time: now,
                path: i.path.clone(),
                producer: i.producer.clone(),
                allocated_bytes: i.allocated_bytes,
                outcome: ATTEMPT.to_owned(),
            })
            .collect();
        let ids = match history.begin_reclaims(&attempts) {
            Ok(ids) => ids,
            Err(source) if progress.done == 0 => {
                return Err(ApiError::AuditNotWritten {
                    path: db_path.to_path_buf(),
                    source: Box::new(source),
                })
            }
            Err(e) => {
                audit_errors.push(ReclaimErrorEntry {
                    path: PathBuf::new(),
                    message: format!(
                        "stopped after {} of {} items: the audit rows of the next batch could not be written to {}: {e}",
                        progress.done,
                        progress.total,
                        db_path.display()
                    ),
                });
                break;
            }
        };
        let done = exec.run_batch(batch);
        progress.done += done.records.len();
        progress.deleted += done.records.iter().filter(|r| r.outcome == DELETED).count();
        let outcomes: Vec<(i64, String)> = ids
            .into_iter()
            .zip(done.records)
            .map(|(id, rec)| (id, rec.outcome))
            .collect();
        if let Err(e) = history.finish_reclaims(&outcomes) {
            audit_errors.push(ReclaimErrorEntry {
                path: PathBuf::new(),
                message: format!(
                    "outcomes of {} items not written to {} (their rows read as interrupted): {e}",
                    outcomes.len(),
                    db_path.display()
                ),
            });
        }
        if !on_batch(progress) {
            break;
        }
    }
    Ok(AuditedReport {
        report: exec.finish(),
        audit_errors,
    })
}
