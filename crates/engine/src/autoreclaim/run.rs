//! One run of a rule, blocking: plan on an inventory with the rule's producers and threshold,
//! execute the plan batch by batch with each batch's audit rows written first
//! ([`crate::api::reclaim::execute_audited_batches`]), then store the run in the history.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::SystemTime;

use crate::api::reclaim::{execute_audited_batches, BatchProgress};
use crate::catalogue::Catalogue;
use crate::history::History;
use crate::inventory::Inventory;
use crate::process::ProcessProbe;

use super::text::count_reasons;
use super::{AutoRule, AutoRun, ProducerFreed, Trigger};

/// What a run needs besides its rule and inventory.
pub struct RunContext<'a> {
    /// The producer rules.
    pub catalogue: &'a Catalogue,
    /// Paths no deletion may reach besides the home dir (data dir, config dir).
    pub protected: Vec<PathBuf>,
    /// The history database: audit rows, then the run's row.
    pub history: &'a Mutex<History>,
    /// The database file, named in errors.
    pub db_path: &'a Path,
    /// The process table and open files (re-read before each batch).
    pub probe: &'a dyn ProcessProbe,
    /// Items per batch.
    pub batch_size: usize,
    /// Set to stop before the next batch (a pause, a shutdown).
    pub cancel: &'a AtomicBool,
    /// The current time, read at the start and at the end of the run.
    pub now: &'a (dyn Fn() -> SystemTime + Sync),
}

/// What a run did: its record and the paths it deleted.
#[derive(Debug, Clone, Default)]
pub struct RunOutcome {
    /// The run as stored.
    pub run: AutoRun,
    /// The items deleted.
    pub deleted: Vec<PathBuf>,
}

/// Runs `rule` once on `inv`: plans (items kept with their reasons), executes in batches of
/// `cx.batch_size` with the audit rows of each batch written before it is deleted, calls
/// `progress` after each batch, stops early when `cx.cancel` is set (status `paused`), and stores
/// the run in `cx.history` (a failed store is in the run's errors).
pub fn run_rule(
    rule: &AutoRule,
    trigger: Trigger,
    inv: &Inventory,
    cx: &RunContext<'_>,
    progress: &mut dyn FnMut(&BatchProgress),
) -> RunOutcome {
    let started = (cx.now)();
    let plan = crate::api::reclaim::plan(
        inv,
        cx.catalogue,
        rule.producers.clone(),
        rule.older_than,
        cx.protected.clone(),
        cx.probe,
        started,
    );
    let mut run = AutoRun {
        rule: rule.name.clone(),
        trigger: trigger.as_str().to_owned(),
        status: "done".into(),
        producers: rule.producers.clone(),
        older_than_secs: rule.older_than.as_secs(),
        started_unix_secs: crate::history::unix_secs_u64(started),
        planned_items: plan.items.len() as u64,
        kept: count_reasons(plan.kept.iter().map(|k| &k.reason)),
        ..AutoRun::default()
    };
    let mut on_batch = |p: &BatchProgress| {
        progress(p);
        if cx.cancel.load(Ordering::Relaxed) {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    };
    let mut deleted = Vec::new();
    match execute_audited_batches(
        &plan,
        cx.catalogue,
        cx.probe,
        cx.history,
        cx.db_path,
        started,
        cx.batch_size,
        &mut on_batch,
    ) {
        Ok(audited) => {
            let r = audited.report;
            let attempted = r.deleted.len() + r.kept.len() + r.already_gone.len() + r.errors.len();
            if (attempted as u64) < run.planned_items && r.errors.is_empty() {
                run.status = "paused".into();
            }
            for (code, n) in count_reasons(r.kept.iter().map(|k| &k.reason)) {
                *run.kept.entry(code).or_insert(0) += n;
            }
            for d in &r.deleted {
                let e: &mut ProducerFreed = run.by_producer.entry(d.producer.clone()).or_default();
                e.items += 1;
                e.bytes += d.allocated_bytes;
            }
            run.deleted_items = r.deleted.len() as u64;
            run.freed_bytes = r.freed_bytes;
            run.already_gone = r.already_gone.len() as u64;
            let errors: Vec<_> = r.errors.iter().chain(&audited.audit_errors).collect();
            run.errors = errors.len() as u64;
            run.first_error = errors
                .first()
                .map(|e| format!("{}: {}", e.path.display(), e.message));
            if run.deleted_items == 0 && !r.errors.is_empty() && r.kept.is_empty() {
                run.status = "failed".into();
            }
            deleted = r.deleted.into_iter().map(|d| d.path).collect();
        }
        Err(e) => {
            run.status = "failed".into();
            run.errors = 1;
            run.first_error = Some(e.to_string());
        }
    }
    run.finished_unix_secs = crate::history::unix_secs_u64((cx.now)());
    let stored = cx
        .history
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .record_auto_run(&run);
    if let Err(e) = stored {
        run.errors += 1;
        run.first_error
            .get_or_insert_with(|| format!("the run was not recorded: {e}"));
    }
    RunOutcome { run, deleted }
}
