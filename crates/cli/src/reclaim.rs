//! `cachewatch reclaim`: scan, plan, show the plan, and delete only when told to.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use anyhow::Context as _;
use cachewatch::api::{self, Session};
use cachewatch::history::History;
use cachewatch::process::SystemProbe;
use cachewatch::reclaim::{
    self, DeletedItem, KeptItem, PlannedItem, ReclaimErrorEntry, ReclaimPlan, ReclaimReport,
};
use serde::Serialize;

use super::format::{age, bytes, Align, Table};
use super::{Context, Outcome, RootArgs};

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
    /// Run every [[auto_reclaim]] rule of the config once now (for cron, or to try a rule),
    /// through the same audited execute as the monitor; with --dry-run, show what each would do
    #[arg(long, conflicts_with_all = ["older_than", "producers", "yes"])]
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
        print_plan(&plan, &mut out).context("writing to stdout")?;
    }

    let mut report = ReclaimReport::default();
    let mut audit_errors = Vec::new();
    let execute = !plan.items.is_empty() && !args.dry_run && (args.yes || confirm(&plan)?);
    if execute {
        let db = ctx.db_path()?;
        let mut history = History::open(&db)
            .with_context(|| format!("opening the history database {}", db.display()))?;
        let audited = api::reclaim::execute_audited(
            &plan,
            &catalogue,
            &probe,
            &mut history,
            &db,
            SystemTime::now(),
        )?;
        report = audited.report;
        audit_errors = audited.audit_errors;
    }
    let problems = !report.errors.is_empty() || !audit_errors.is_empty();

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
        print_report(&report, &audit_errors, &mut out).context("writing to stdout")?;
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
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return Ok(false);
    }
    eprint!(
        "Delete {} item(s), {}? [y/N] ",
        plan.items.len(),
        bytes(plan.planned_bytes)
    );
    std::io::stderr().flush().context("writing to stderr")?;
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .context("reading the answer from stdin")?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "Yes"))
}

fn print_plan(plan: &ReclaimPlan, out: &mut dyn Write) -> std::io::Result<()> {
    if plan.items.is_empty() {
        writeln!(out, "Nothing to reclaim.")?;
    } else {
        let mut t = Table::new(&[
            ("DELETE", Align::Left),
            ("PRODUCER", Align::Left),
            ("AGE", Align::Right),
            ("ALLOCATED", Align::Right),
        ]);
        for i in &plan.items {
            t.row(vec![
                i.path.display().to_string(),
                i.producer.clone(),
                age(i.age_secs),
                bytes(i.allocated_bytes),
            ]);
        }
        t.write(out)?;
        writeln!(
            out,
            "{} item(s), {} allocated.",
            plan.items.len(),
            bytes(plan.planned_bytes)
        )?;
    }
    if !plan.kept.is_empty() {
        writeln!(out)?;
        let mut t = Table::new(&[
            ("KEEP", Align::Left),
            ("PRODUCER", Align::Left),
            ("WHY", Align::Left),
        ]);
        for k in &plan.kept {
            t.row(vec![
                k.path.display().to_string(),
                k.producer.clone(),
                k.reason.to_string(),
            ]);
        }
        t.write(out)?;
    }
    Ok(())
}

fn print_report(
    r: &ReclaimReport,
    audit_errors: &[ReclaimErrorEntry],
    out: &mut dyn Write,
) -> std::io::Result<()> {
    writeln!(
        out,
        "\nDeleted {} item(s), freed {}.",
        r.deleted.len(),
        bytes(r.freed_bytes)
    )?;
    if !r.already_gone.is_empty() {
        writeln!(out, "{} item(s) were already gone.", r.already_gone.len())?;
    }
    for k in &r.kept {
        writeln!(out, "kept {}: {}", super::format::path(&k.path), k.reason)?;
    }
    for e in r.errors.iter().chain(audit_errors) {
        writeln!(
            out,
            "failed {}: {}",
            super::format::path(&e.path),
            e.message
        )?;
    }
    Ok(())
}
