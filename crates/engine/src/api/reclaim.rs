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
