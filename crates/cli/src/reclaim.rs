//! `cachewatch reclaim`: scan, plan, show the plan, and delete only when told to.

use std::io::{BufRead, IsTerminal, Write};
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use cachewatch::api::reclaim::AuditedReport;
use cachewatch::api::reclaim::{self, DeletedItem, ReclaimErrorEntry, Spool, StreamedPlan};
use cachewatch::api::Session;
use indicatif::{ProgressBar, ProgressStyle};

use super::format::bytes;
use super::{Context, Outcome, RootArgs};

mod json;
mod listing;
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
    /// Print JSON (shape documented in docs/json.md) instead of tables
    #[arg(long)]
    pub json: bool,
    /// List every item (default: one row per producer and the kept items counted by reason when
    /// there are more than 40)
    #[arg(long)]
    pub list: bool,
}

/// Runs `cachewatch reclaim`: the roots scanned and planned as the items stream past (the plan's
/// items spooled, its summary summed), then executed in audited batches read back from the spool,
/// so memory stays flat in the number of items.
///
/// # Errors
/// Bad roots or config, an unknown producer id, the plan's temp file cannot be written, the
/// history database cannot be opened or the audit rows cannot be written to it before deleting
/// (then nothing is deleted), or a failed write to stdout.
pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<Outcome> {
    if args.rules {
        return rules::run(ctx, args);
    }
    let roots = args.roots.resolve(ctx)?;
    let catalogue = ctx.catalogue()?;
    Session::check_producers(&catalogue, &args.producers)?;
    let older_than = args.older_than.unwrap_or(ctx.default_threshold());
    let planned = ctx
        .plan_reclaim(&roots, &catalogue, args.producers.clone(), older_than)
        .context("planning: writing the plan's temp file")?;
    let plan = &planned.plan;

    let mut out = std::io::stdout().lock();
    if !args.json {
        print::plan(plan, args.list, &mut out).context("writing to stdout")?;
        print::managed(plan, &catalogue, &mut out).context("writing to stdout")?;
    }

    let planned_items = plan.summary.planned_items;
    let mut done = Done::default();
    let mut interrupted = false;
    let execute = planned_items > 0 && !args.dry_run && (args.yes || confirm(plan)?);
    if execute {
        let stop = stop_on_ctrl_c();
        let bar = progress_bar(planned_items, args.json);
        let keep_list = args.json;
        let mut spool_error = None;
        let audited = ctx.execute_reclaim(
            &planned,
            &catalogue,
            reclaim::DEFAULT_BATCH_SIZE,
            &mut |p, batch| {
                bar.set_position(p.items_done);
                done.deleted_items = p.deleted_items;
                if keep_list && spool_error.is_none() {
                    for d in &batch.deleted {
                        if let Err(e) = done.deleted.push(d.clone()) {
                            spool_error = Some(e);
                            break;
                        }
                    }
                }
                if stop.load(Ordering::SeqCst) {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            },
        )?;
        bar.finish_and_clear();
        interrupted = stop.load(Ordering::SeqCst);
        done.audited = audited;
        if let Some(e) = spool_error {
            done.audited.audit_errors.push(ReclaimErrorEntry {
                path: PathBuf::new(),
                message: format!("the list of deleted items is incomplete: {e}"),
            });
        }
        done.deleted
            .flush()
            .context("writing the deleted items' temp file")?;
    }
    let report = &done.audited.report;
    let problems = done.audited.errors().next().is_some() || interrupted;

    if args.json {
        let doc = json::ReclaimJson {
            dry_run: args.dry_run,
            executed: execute,
            older_than_secs: older_than.as_secs(),
            planned: json::Planned(plan),
            managed_by: print::managed_by(plan, &catalogue),
            deleted: json::Deleted(&done.deleted),
            kept: json::Kept(plan, &report.kept),
            already_gone: &report.already_gone,
            already_gone_bytes: crate::path_bytes::of_list(&report.already_gone),
            freed_bytes: report.freed_bytes,
            errors: done.audited.errors().cloned().collect(),
        };
        serde_json::to_writer_pretty(&mut out, &doc).context("writing JSON to stdout")?;
        writeln!(out).context("writing to stdout")?;
    } else if execute {
        print::report(&done, args.list, interrupted, &mut out).context("writing to stdout")?;
    } else if planned_items > 0 {
        let how = if args.dry_run {
            "Dry run: nothing deleted."
        } else {
            "Nothing deleted: run again with --yes to delete these items (or in a terminal, to be asked)."
        };
        writeln!(out, "\n{how}").context("writing to stdout")?;
    }
    Ok(Outcome::from_problems(problems))
}

/// What an execute did, as the CLI prints it: the report with the audit problems (no deleted
/// items listed), the deleted items spooled (only with `--json`) and their count.
#[derive(Default)]
pub struct Done {
    /// The engine's report and the audit problems.
    pub audited: AuditedReport,
    /// Items deleted (a count).
    pub deleted_items: u64,
    /// The deleted items, when they are to be listed.
    pub deleted: Spool<DeletedItem>,
}

/// Asks on the terminal; `false` without one (stdin or stderr not a terminal).
fn confirm(plan: &StreamedPlan) -> anyhow::Result<bool> {
    confirm_text(&format!(
        "Delete {} item(s), {}?",
        super::format::count(plan.summary.planned_items),
        bytes(plan.summary.planned_bytes)
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
