//! Reclaim as every front end runs it: a plan with the session's protected paths, then an execute
//! whose audit rows are in the history database before anything is deleted (safety rule 7).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::catalogue::Catalogue;
use crate::history::{History, ATTEMPT};
use crate::inventory::Inventory;
use crate::process::ProcessProbe;
use crate::reclaim::{self, AuditRecord, Policy, ReclaimErrorEntry, ReclaimPlan, ReclaimReport};

use super::ApiError;

/// The outcome written for a planned item that execute never reached (it refused the plan whole).
pub const NOT_ATTEMPTED: &str = "not-attempted";

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
    /// Outcomes that could not be written after the deletions (their rows read `interrupted`).
    pub audit_errors: Vec<ReclaimErrorEntry>,
}

/// Executes `plan` with its audit trail in `history` (the file `db_path`, named in messages):
/// first one `attempt` row per planned item, then the deletions (each item re-checked just before
/// it goes), then every row's outcome (`deleted`, `already-gone`, `skipped: …`, `failed: …`, or
/// `not-attempted` for an item never reached). A process killed in between leaves `attempt` rows,
/// which read as `interrupted`: no deletion is ever without its row.
///
/// # Errors
/// [`ApiError::AuditNotWritten`] when the attempt rows cannot be written: then nothing is deleted.
pub fn execute_audited(
    plan: &ReclaimPlan,
    catalogue: &Catalogue,
    probe: &dyn ProcessProbe,
    history: &mut History,
    db_path: &Path,
    now: SystemTime,
) -> Result<AuditedReport, ApiError> {
    if plan.items.is_empty() {
        return Ok(AuditedReport::default());
    }
    let attempts: Vec<AuditRecord> = plan
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
    let ids = history
        .begin_reclaims(&attempts)
        .map_err(|source| ApiError::AuditNotWritten {
            path: db_path.to_path_buf(),
            source: Box::new(source),
        })?;
    let row_of: HashMap<&Path, i64> = plan
        .items
        .iter()
        .map(|i| i.path.as_path())
        .zip(ids.iter().copied())
        .collect();
    let mut outcomes: Vec<(i64, String)> = Vec::with_capacity(ids.len());
    let mut audit = |rec: &AuditRecord| {
        if let Some(id) = row_of.get(rec.path.as_path()) {
            outcomes.push((*id, rec.outcome.clone()));
        }
    };
    let report = reclaim::execute(plan, catalogue, probe, now, &mut audit);
    let reached: HashSet<i64> = outcomes.iter().map(|(id, _)| *id).collect();
    outcomes.extend(
        ids.iter()
            .filter(|id| !reached.contains(id))
            .map(|id| (*id, NOT_ATTEMPTED.to_owned())),
    );
    let mut audit_errors = Vec::new();
    if let Err(e) = history.finish_reclaims(&outcomes) {
        audit_errors.push(ReclaimErrorEntry {
            path: PathBuf::new(),
            message: format!(
                "outcomes not written to {} (the rows read as interrupted): {e}",
                db_path.display()
            ),
        });
    }
    Ok(AuditedReport {
        report,
        audit_errors,
    })
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

/// Executes `plan` batch by batch with core's [`reclaim::Executor`] (batches of `batch_size`
/// items): for each batch, its `attempt` rows are written to `history` (locked for that write
/// only), then its items are re-checked and deleted, then their outcomes are written. After each
/// batch `on_batch` is called with the progress; [`ControlFlow::Break`] stops before the next
/// batch (a pause): the items not reached get no row and are not deleted.
///
/// # Errors
/// [`ApiError::AuditNotWritten`] when the first batch's rows cannot be written: nothing is
/// deleted. A later batch whose rows cannot be written stops the run; that error is in the
/// report's `audit_errors`. A plan refused whole (a root busy or not openable, an edited plan)
/// deletes nothing and is the report's one error.
#[allow(clippy::too_many_arguments)]
pub fn execute_audited_batches(
    plan: &ReclaimPlan,
    catalogue: &Catalogue,
    probe: &dyn ProcessProbe,
    history: &std::sync::Mutex<History>,
    db_path: &Path,
    now: SystemTime,
    batch_size: usize,
    on_batch: &mut dyn FnMut(&BatchProgress) -> std::ops::ControlFlow<()>,
) -> Result<AuditedReport, ApiError> {
    let lock = || history.lock().unwrap_or_else(|e| e.into_inner());
    let opts = reclaim::ExecuteOptions {
        batch_size: batch_size.max(1),
        ..reclaim::ExecuteOptions::default()
    };
    let mut exec = match reclaim::Executor::new(plan, catalogue, probe, now, opts) {
        Ok(exec) => exec,
        Err(e) => {
            let report = ReclaimReport {
                errors: vec![ReclaimErrorEntry {
                    path: PathBuf::new(),
                    message: e.to_string(),
                }],
                ..ReclaimReport::default()
            };
            return Ok(AuditedReport {
                report,
                audit_errors: Vec::new(),
            });
        }
    };
    let mut progress = BatchProgress {
        items_total: plan.items.len() as u64,
        ..BatchProgress::default()
    };
    let mut audit_errors = Vec::new();
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
        let ids = match lock().begin_reclaims(&attempts) {
            Ok(ids) => ids,
            Err(source) if progress.items_done == 0 => {
                return Err(ApiError::AuditNotWritten {
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
        let done = exec.run_batch(batch);
        let outcomes: Vec<(i64, String)> = ids
            .iter()
            .copied()
            .zip(done.records.iter().map(|r| r.outcome.clone()))
            .collect();
        if let Err(e) = lock().finish_reclaims(&outcomes) {
            audit_errors.push(ReclaimErrorEntry {
                path: PathBuf::new(),
                message: format!(
                    "outcomes not written to {} (the rows read as interrupted): {e}",
                    db_path.display()
                ),
            });
        }
        progress.items_done += done.records.len() as u64;
        for r in done.records.iter().filter(|r| r.outcome == "deleted") {
            progress.deleted_items += 1;
            progress.deleted_bytes += r.allocated_bytes;
        }
        if on_batch(&progress).is_break() {
            break;
        }
    }
    Ok(AuditedReport {
        report: exec.finish(),
        audit_errors,
    })
}
