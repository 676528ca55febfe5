//! `cachewatch reclaim --rules [--dry-run]`: every `[[auto_reclaim]]` rule of the config once
//! now, through the engine's rule run (each batch's audit rows written before it is deleted, the
//! run stored in the history); with `--dry-run`, each rule's plan. Each rule plans while it scans
//! the roots (the plan spooled, only its summary held), so memory stays flat in the number of
//! items; the roots are scanned once per rule.

use std::io::Write;
use std::sync::atomic::AtomicBool;
use std::time::SystemTime;

use anyhow::Context as _;
use cachewatch::api::autoreclaim;
use cachewatch::api::autoreclaim::{plan_rule, run_rule, RunContext};
use cachewatch::api::history::AutoRun;
use cachewatch::api::reclaim::probe_under;
use cachewatch::dto::Trigger;
use serde::Serialize;

use super::super::format::{bytes, escape};
use super::{Args, Context, Outcome};

/// One rule's plan in `--rules --dry-run --json`.
#[derive(Debug, Serialize)]
struct DryRun {
    rule: String,
    producers: Vec<String>,
    older_than_secs: u64,
    planned_items: u64,
    planned_bytes: u64,
    /// Items kept, by reason code.
    kept: std::collections::BTreeMap<String, u64>,
}

/// Runs (or with `--dry-run` plans) every rule once.
///
/// # Errors
/// Bad roots or config (an `[[auto_reclaim]]` rule with an unknown producer names the file and the
/// line); with `--dry-run`, a rule's plan cannot be written to its temp file (without it, that
/// rule's run fails, deleting nothing, and says so); the history database cannot be opened (then
/// nothing is deleted); stdout fails.
pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<Outcome> {
    let catalogue = ctx.catalogue()?;
    let rules = ctx.config.auto_reclaim(&catalogue)?;
    let mut out = std::io::stdout().lock();
    if rules.is_empty() {
        writeln!(
            out,
            "No [[auto_reclaim]] rules in {}: nothing to run.",
            ctx.config.path.display()
        )?;
        return Ok(Outcome::Success);
    }
    let roots = args.roots.resolve(ctx)?;
    // Open files are read under the roots only (and when each plan starts).
    let probe = probe_under(&roots);
    if args.dry_run {
        let mut plans = Vec::with_capacity(rules.len());
        for r in &rules {
            // Spooled while the roots are scanned: only the plan's summary is held.
            let plan = plan_rule(
                r,
                &roots,
                &catalogue,
                ctx.protected_paths(),
                &probe,
                SystemTime::now(),
            )
            .with_context(|| {
                format!(
                    "planning rule {:?}: writing the plan's temp file in {}",
                    r.name,
                    std::env::temp_dir().display()
                )
            })?;
            plans.push(DryRun {
                rule: r.name.clone(),
                producers: r.producers.clone(),
                older_than_secs: r.older_than.as_secs(),
                planned_items: plan.summary.planned_items,
                planned_bytes: plan.summary.planned_bytes,
                kept: autoreclaim::kept_by_code(&plan.summary),
            });
        }
        if args.json {
            serde_json::to_writer_pretty(&mut out, &plans)?;
            writeln!(out)?;
        } else {
            for p in &plans {
                writeln!(
                    out,
                    "rule {}: would delete {} item(s), {}; keep {}",
                    escape(&p.rule),
                    p.planned_items,
                    bytes(p.planned_bytes),
                    kept_text(&p.kept)
                )?;
            }
            writeln!(out, "Dry run: nothing deleted.")?;
        }
        return Ok(Outcome::Success);
    }
    if !args.yes
        && !super::confirm_text(&format!(
            "Run {} auto-reclaim rule(s) now, deleting what they plan?",
            rules.len()
        ))?
    {
        writeln!(
            out,
            "Nothing deleted: run again with --yes to run the rules (or in a terminal, to be asked); --dry-run shows what they would delete."
        )?;
        return Ok(Outcome::Success);
    }
    let db = ctx.open_history()?;
    let cancel = AtomicBool::new(false);
    let clock = SystemTime::now;
    let cx = RunContext {
        catalogue: &catalogue,
        protected: ctx.protected_paths(),
        history: &db.history,
        db_path: &db.path,
        probe: &probe,
        batch_size: autoreclaim::BATCH_SIZE,
        cancel: &cancel,
        now: &clock,
    };
    let runs: Vec<AutoRun> = rules
        .iter()
        .map(|r| run_rule(r, Trigger::Manual, &roots, &cx, &mut |_| {}).run)
        .collect();
    let problems = runs.iter().any(|r| r.errors > 0);
    if args.json {
        serde_json::to_writer_pretty(&mut out, &runs)?;
        writeln!(out)?;
    } else {
        for r in &runs {
            writeln!(
                out,
                "rule {}: deleted {} item(s), freed {}; kept {}{}",
                escape(&r.rule),
                r.deleted_items,
                bytes(r.freed_bytes),
                kept_text(&r.kept),
                r.first_error
                    .as_ref()
                    .map(|e| format!("; {} error(s), first: {}", r.errors, escape(e)))
                    .unwrap_or_default()
            )?;
        }
    }
    Ok(Outcome::from_problems(problems))
}

fn kept_text(kept: &std::collections::BTreeMap<String, u64>) -> String {
    if kept.is_empty() {
        return "none".into();
    }
    let parts: Vec<String> = kept.iter().map(|(k, n)| format!("{n} {k}")).collect();
    parts.join(", ")
}
