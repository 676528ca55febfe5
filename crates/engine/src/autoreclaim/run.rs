//! One run of a rule, blocking: a plan of the rule's producers and threshold, executed batch by
//! batch with each batch's audit rows written first, then the run stored in the history. The plan
//! is spooled, never held: the CLI plans while it scans the roots ([`run_rule`], [`plan_rule`]),
//! the monitor from its compact state; both run it through [`run_streamed`], its items read back
//! batch by batch through [`crate::audit::execute_streamed_batches`], so a drain of 700k
//! items keeps memory flat.

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::SystemTime;

use crate::audit::{execute_streamed_batches, AuditNotWritten, AuditedReport, BatchProgress};
use crate::catalogue::Catalogue;
use crate::history::History;
use crate::process::ProcessProbe;
use crate::reclaim::{DeletedItem, StreamedPlan};
use crate::roots::Root;
use crate::scan::ScanProgress;

use super::text::{count_reasons, kept_by_code};
use super::{AutoRule, AutoRun, ProducerFreed, RunStatus, Trigger};

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

/// A streamed run lists at most this many deleted paths ([`RunOutcome::deleted`]); past it the
/// paths are dropped and [`RunOutcome::unlisted`] is set (a caller rescans instead).
pub const LISTED_MAX: usize = 16_384;

/// What a run did: its record and the paths it deleted.
#[derive(Debug, Clone, Default)]
pub struct RunOutcome {
    /// The run as stored.
    pub run: AutoRun,
    /// The items deleted (none listed when [`RunOutcome::unlisted`]).
    pub deleted: Vec<PathBuf>,
    /// More than [`LISTED_MAX`] items were deleted by a streamed run: their paths are not listed.
    pub unlisted: bool,
}

/// The plan of `rule` (its producers and threshold) on `roots`, scanned now: each item is decided
/// while the scan streams it and goes to the plan's spools, so only the summary is held and memory
/// stays flat in the number of items. Blocking.
///
/// # Errors
/// Creating or writing the plan's temp file (in the temp dir).
pub fn plan_rule(
    rule: &AutoRule,
    roots: &[Root],
    catalogue: &Catalogue,
    protected: Vec<PathBuf>,
    probe: &dyn ProcessProbe,
    now: SystemTime,
) -> std::io::Result<StreamedPlan> {
    crate::audit::plan_streamed(
        roots,
        catalogue,
        rule.producers.clone(),
        rule.older_than,
        protected,
        probe,
        now,
        &ScanProgress::new(),
    )
}

/// Runs `rule` once on `roots`, scanned now ([`plan_rule`], so memory stays flat in the number of
/// items), then as [`run_streamed`]: executes in batches of `cx.batch_size` with the audit rows of
/// each batch written before it is deleted, calls `progress` after each batch, stops early when
/// `cx.cancel` is set (status `paused`), and stores the run in `cx.history` (a failed store is in
/// the run's errors). A plan that could not be spooled fails the run, deleting nothing. For the
/// CLI (the monitor plans from its state); each call scans the roots.
pub fn run_rule(
    rule: &AutoRule,
    trigger: Trigger,
    roots: &[Root],
    cx: &RunContext<'_>,
    progress: &mut dyn FnMut(&BatchProgress),
) -> RunOutcome {
    let started = (cx.now)();
    let plan = plan_rule(
        rule,
        roots,
        cx.catalogue,
        cx.protected.clone(),
        cx.probe,
        started,
    );
    run_streamed(rule, trigger, plan, started, cx, progress)
}

/// Runs `rule` once on a plan made from the monitor's state at `started` (with the rule's
/// producers and threshold; `Err`: it could not be spooled, the run fails and deletes nothing),
/// as [`run_rule`] does: the planned items are read back from the plan's spool `cx.batch_size`
/// at a time, each batch's audit rows written before it is deleted, each item re-checked; the
/// kept counts are the plan's summary's plus those kept at the re-check. At most
/// [`LISTED_MAX`] deleted paths are kept.
pub fn run_streamed(
    rule: &AutoRule,
    trigger: Trigger,
    plan: std::io::Result<StreamedPlan>,
    started: SystemTime,
    cx: &RunContext<'_>,
    progress: &mut dyn FnMut(&BatchProgress),
) -> RunOutcome {
    let mut out = RunOutcome::default();
    let plan = match plan {
        Ok(plan) => plan,
        Err(e) => {
            out.run = begin(rule, trigger, started, 0, BTreeMap::new());
            out.run.status = RunStatus::Failed;
            out.run.errors = 1;
            out.run.first_error = Some(format!(
                "the plan could not be written to its temp file in {}: {e}",
                std::env::temp_dir().display()
            ));
            record(&mut out.run, cx);
            return out;
        }
    };
    let kept = kept_by_code(&plan.summary);
    out.run = begin(rule, trigger, started, plan.summary.planned_items, kept);
    let run = &mut out.run;
    let (deleted, unlisted) = (&mut out.deleted, &mut out.unlisted);
    let audited = execute_streamed_batches(
        &plan,
        cx.catalogue,
        cx.probe,
        cx.history,
        cx.db_path,
        started,
        cx.batch_size,
        &mut |p, batch| {
            for d in &batch.deleted {
                tally(run, d);
                if !*unlisted {
                    deleted.push(d.path.clone());
                }
            }
            if deleted.len() > LISTED_MAX {
                *unlisted = true;
                *deleted = Vec::new();
            }
            progress(p);
            stop_if(cx.cancel)
        },
    );
    drop(plan);
    settle(&mut out.run, audited);
    record(&mut out.run, cx);
    out
}

/// The record of a run of `rule` planned at `started`, before it executes.
fn begin(
    rule: &AutoRule,
    trigger: Trigger,
    started: SystemTime,
    planned_items: u64,
    kept: BTreeMap<String, u64>,
) -> AutoRun {
    AutoRun {
        rule: rule.name.clone(),
        trigger,
        status: RunStatus::Done,
        producers: rule.producers.clone(),
        older_than_secs: rule.older_than.as_secs(),
        started_unix_secs: crate::units::unix_secs(started),
        planned_items,
        kept,
        ..AutoRun::default()
    }
}

/// Stop before the next batch once `cancel` is set.
fn stop_if(cancel: &AtomicBool) -> ControlFlow<()> {
    if cancel.load(Ordering::Relaxed) {
        ControlFlow::Break(())
    } else {
        ControlFlow::Continue(())
    }
}

/// Counts one deleted item in the run (its producer's items and bytes).
fn tally(run: &mut AutoRun, d: &DeletedItem) {
    let e: &mut ProducerFreed = run.by_producer.entry(d.producer.clone()).or_default();
    e.items += 1;
    e.bytes += d.allocated_bytes;
    run.deleted_items += 1;
}

/// Fills the run's status, kept-at-re-check counts, freed bytes and errors from the execute's
/// report (its deleted items already counted by [`tally`]).
fn settle(run: &mut AutoRun, audited: Result<AuditedReport, AuditNotWritten>) {
    match audited {
        Ok(audited) => {
            let r = &audited.report;
            let attempted =
                run.deleted_items + (r.kept.len() + r.already_gone.len() + r.errors.len()) as u64;
            if attempted < run.planned_items && r.errors.is_empty() {
                run.status = RunStatus::Paused;
            }
            for (code, n) in count_reasons(r.kept.iter().map(|k| &k.reason)) {
                *run.kept.entry(code).or_insert(0) += n;
            }
            run.freed_bytes = r.freed_bytes;
            run.already_gone = r.already_gone.len() as u64;
            run.errors = audited.errors().count() as u64;
            run.first_error = audited
                .errors()
                .next()
                .map(|e| format!("{}: {}", e.path.display(), e.message));
            if run.deleted_items == 0 && !r.errors.is_empty() && r.kept.is_empty() {
                run.status = RunStatus::Failed;
            }
        }
        Err(e) => {
            run.status = RunStatus::Failed;
            run.errors = 1;
            run.first_error = Some(e.to_string());
        }
    }
}

/// Stamps the run's end and stores it in the history (a failed store is in its errors).
fn record(run: &mut AutoRun, cx: &RunContext<'_>) {
    run.finished_unix_secs = crate::units::unix_secs((cx.now)());
    let stored = cx
        .history
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .record_auto_run(run);
    if let Err(e) = stored {
        run.errors += 1;
        run.first_error
            .get_or_insert_with(|| format!("the run was not recorded: {e}"));
    }
}
