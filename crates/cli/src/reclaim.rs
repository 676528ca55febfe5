//! `cachewatch reclaim`: scan, plan, show the plan, and delete only when told to.

use std::io::{BufRead, IsTerminal, Write};
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use anyhow::Context as _;
use cachewatch::api::{self, Session};
use cachewatch::history::History;
use cachewatch::process::SystemProbe;
use cachewatch::reclaim::{
    self, DeletedItem, KeptItem, PlannedItem, ReclaimErrorEntry, ReclaimPlan, ReclaimReport,
};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use super::format::bytes;
use super::{Context, Outcome, RootArgs};

mod print;
mod rules;

/// Options of `cachewatch reclaim`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only items older than this (humantime: 30m, 12h, 3d, 0s) [default: the config's
    /// [reclaim] older_than, else 3d]. A rule's own age floor may raise it
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub older_than: Option<Duration>,
    /// Only this producer (repeatable); without it, every producer with reclaim = "auto".
    /// Naming a "manual" producer includes it
    #[arg(long = "producer", value_name = "ID")]
    pub producers: Vec<String>,
    /// Roots to look at.
    #[command(flatten)]
    pub roots: RootArgs,
    /// Run every [[auto_reclaim]] rule of the config once now, whatever its triggers (for cron:
    /// with --yes; or to try a rule: with --dry-run), through the same audited execute as the
    /// monitor; like a reclaim, it asks on a terminal and deletes nothing without --yes elsewhere
    #[arg(long, conflicts_with_all = ["older_than", "producers"])]
    pub rules: bool,
    /// Show the plan and delete nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Delete without asking
    #[arg(long, conflicts_with = "dry_run")]
    pub yes: bool,
    /// Print JSON (shape documented in the README) instead of tables
    #[arg(long)]
    pub json: bool,
    /// List every item (default: one row per producer and the kept items counted by reason when
    /// there are more than 40)
    #[arg(long)]
    pub list: bool,
}

/// The JSON document of `cachewatch reclaim --json`.
#[derive(Debug, Serialize)]
pub struct ReclaimJson<'a> {
    /// True when asked for a dry run.
    pub dry_run: bool,
    /// True when the plan was executed (`--yes` or a "y" answer).
    pub executed: bool,
    /// The age threshold used, seconds.
    pub older_than_secs: u64,
    /// What the plan would delete.
    pub planned: &'a [PlannedItem],
    /// Deleted items (empty unless executed).
    pub deleted: &'a [DeletedItem],
    /// Kept items with the reason: at planning, then at the re-check before deleting.
    pub kept: Vec<&'a KeptItem>,
    /// Items gone before they could be deleted (not an error).
    #[serde(serialize_with = "reclaim::path_text::many::serialize")]
    pub already_gone: &'a [PathBuf],
    /// Allocated bytes freed.
    pub freed_bytes: u64,
    /// Items that could not be deleted, and audit rows that could not be written.
    pub errors: Vec<ReclaimErrorEntry>,
}

/// Runs `cachewatch reclaim`.
///
/// # Errors
/// Bad roots or config, an unknown producer id, the history database cannot be opened or the
/// audit rows cannot be written to it before deleting (then nothing is deleted), or a failed
/// write to stdout.
pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<Outcome> {
    if args.rules {
        return rules::run(ctx, args);
    }
    let roots = args.roots.resolve(ctx)?;
    let catalogue = ctx.catalogue()?;
    Session::check_producers(&catalogue, &args.producers)?;
    let older_than = args.older_than.unwrap_or(ctx.default_threshold());
    let now = SystemTime::now();
    let inv = cachewatch::scan::scan(&roots, &catalogue, now);
    let probe = SystemProbe::snapshot();
    let plan = api::reclaim::plan(
        &inv,
        &catalogue,
        args.producers.clone(),
        older_than,
        ctx.protected_paths(),
        &probe,
        now,
    );

    let mut out = std::io::stdout().lock();
    if !args.json {
        print::plan(&plan, args.list, &mut out).context("writing to stdout")?;
    }

    let mut report = ReclaimReport::default();
    let mut audit_errors = Vec::new();
    let mut interrupted = false;
    let execute = !plan.items.is_empty() && !args.dry_run && (args.yes || confirm(&plan)?);
    if execute {
        let db = ctx.db_path()?;
        let history = Mutex::new(
            History::open(&db)
                .with_context(|| format!("opening the history database {}", db.display()))?,
        );
        let stop = stop_on_ctrl_c();
        let bar = progress_bar(plan.items.len() as u64, args.json);
        let audited = api::reclaim::execute_audited_batches(
            &plan,
            &catalogue,
            &probe,
            &history,
            &db,
            SystemTime::now(),
            reclaim::DEFAULT_BATCH_SIZE,
            &mut |p| {
                bar.set_position(p.items_done);
                if stop.load(Ordering::SeqCst) {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            },
        )?;
        bar.finish_and_clear();
        interrupted = stop.load(Ordering::SeqCst);
        report = audited.report;
        audit_errors = audited.audit_errors;
    }
    let problems = !report.errors.is_empty() || !audit_errors.is_empty() || interrupted;

    if args.json {
        let doc = ReclaimJson {
            dry_run: args.dry_run,
            executed: execute,
            older_than_secs: older_than.as_secs(),
            planned: &plan.items,
            deleted: &report.deleted,
            kept: plan.kept.iter().chain(&report.kept).collect(),
            already_gone: &report.already_gone,
            freed_bytes: report.freed_bytes,
            errors: report.errors.iter().chain(&audit_errors).cloned().collect(),
        };
        serde_json::to_writer_pretty(&mut out, &doc).context("writing JSON to stdout")?;
        writeln!(out).context("writing to stdout")?;
    } else if execute {
        print::report(&report, &audit_errors, args.list, interrupted, &mut out)
            .context("writing to stdout")?;
    } else if !plan.items.is_empty() {
        let how = if args.dry_run {
            "Dry run: nothing deleted."
        } else {
            "Nothing deleted: run again with --yes to delete these items (or in a terminal, to be asked)."
        };
        writeln!(out, "\n{how}").context("writing to stdout")?;
    }
    Ok(Outcome::from_problems(problems))
}

/// Asks on the terminal; `false` without one (stdin or stderr not a terminal).
fn confirm(plan: &ReclaimPlan) -> anyhow::Result<bool> {
    confirm_text(&format!(
        "Delete {} item(s), {}?",
        super::format::count(plan.items.len() as u64),
        bytes(plan.planned_bytes)
    ))
}

/// Asks `question [y/N]` on the terminal; `false` without one (stdin or stderr not a terminal).
fn confirm_text(question: &str) -> anyhow::Result<bool> {
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return Ok(false);
    }
    eprint!("{question} [y/N] ");
    std::io::stderr().flush().context("writing to stderr")?;
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .context("reading the answer from stdin")?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "Yes"))
}

/// A flag set by Ctrl-C (SIGINT): the reclaim stops between batches and reports what it did.
/// Without a handler (another one is installed), Ctrl-C ends the process as usual; the audit rows
/// of a batch are written before it, so nothing is deleted unaudited either way.
fn stop_on_ctrl_c() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    if let Err(e) = ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst)) {
        tracing::debug!("no Ctrl-C handler: {e}");
    }
    stop
}

/// A progress bar of items attempted on stderr, hidden when stderr is not a terminal or with
/// `--json`.
fn progress_bar(total: u64, json: bool) -> ProgressBar {
    if json || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total);
    if let Ok(style) = ProgressStyle::with_template(
        "{spinner} deleting {pos}/{len} items [{bar:30}] {eta} left (Ctrl-C stops between batches)",
    ) {
        bar.set_style(style);
    }
    bar
}
