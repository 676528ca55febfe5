//! `cachewatch history`: what grew since a time, per producer and root (bytes, items), and the
//! reclaims and the auto-reclaim runs in that window; read-only from `<data-dir>/cachewatch.db`.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use cachewatch::api::history::{AutoRun, Growth, History, Series};
use cachewatch::api::reclaim::AuditRecord;
use serde::Serialize;

use cachewatch::api::units::unix_secs;

use super::format::{bytes, Align, Table};
use super::{Context, Outcome};

/// Options of `cachewatch history`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// How far back to look, e.g. 1h, 24h, 7d
    #[arg(long, default_value = "24h", value_parser = humantime::parse_duration)]
    pub since: Duration,
    /// Only this producer (rule id): its growth, its regrowth since its last reclaim, its reclaims
    #[arg(long, value_name = "ID")]
    pub producer: Option<String>,
    /// Print JSON instead of tables
    #[arg(long)]
    pub json: bool,
}

/// The JSON shape of `cachewatch history --json`.
#[derive(Debug, Serialize)]
struct Report {
    since_unix_secs: u64,
    now_unix_secs: u64,
    /// Largest byte growth first.
    growth: Vec<GrowthRow>,
    /// `--producer` only: growth since the producer's last reclaim.
    regrowth_after_reclaim: Option<GrowthRow>,
    /// Oldest first.
    reclaims: Vec<ReclaimRow>,
    /// Sum of `allocated_bytes` of the reclaims with outcome `deleted`.
    reclaimed_bytes: u64,
    /// Runs of the `[[auto_reclaim]]` rules, oldest first (with `--producer`, the rules naming it).
    auto_runs: Vec<AutoRun>,
}

#[derive(Debug, Serialize)]
struct GrowthRow {
    /// `producer`, `root` or `total`.
    series: &'static str,
    /// Producer id or root kind (absent for the total).
    id: Option<String>,
    /// Root path.
    path: Option<String>,
    growth_bytes: i64,
    growth_items: i64,
    from_unix_secs: u64,
    to_unix_secs: u64,
}

#[derive(Debug, Serialize)]
struct ReclaimRow {
    time_unix_secs: u64,
    path: String,
    producer: String,
    allocated_bytes: u64,
    outcome: String,
}

fn growth_row(series: &Series, g: &Growth) -> GrowthRow {
    let (kind, id, path) = match series {
        Series::Producer(id) => ("producer", Some(id.clone()), None),
        Series::Root { kind, path } => (
            "root",
            Some(kind.to_string()),
            Some(path.to_string_lossy().into_owned()),
        ),
        Series::Total => ("total", None, None),
        Series::VolumeFree { mount } => (
            "volume-free",
            None,
            Some(mount.to_string_lossy().into_owned()),
        ),
    };
    GrowthRow {
        series: kind,
        id,
        path,
        growth_bytes: g.bytes,
        growth_items: g.items,
        from_unix_secs: unix_secs(g.from),
        to_unix_secs: unix_secs(g.to),
    }
}

fn reclaim_row(r: &AuditRecord) -> ReclaimRow {
    ReclaimRow {
        time_unix_secs: unix_secs(r.time),
        path: r.path.to_string_lossy().into_owned(),
        producer: r.producer.clone(),
        allocated_bytes: r.allocated_bytes,
        outcome: r.outcome.to_string(),
    }
}

/// Reads the history database and prints what grew and what was reclaimed since `--since`.
///
/// # Errors
/// No history database (the monitor never ran), or it cannot be read (corrupt, locked, newer).
pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<Outcome> {
    let Some(path) = ctx.history_to_read()? else {
        anyhow::bail!(
            "no history at {:?}: run `cachewatch watch` (or the app) to record it, or pass \
             --data-dir",
            ctx.db_path()?
        );
    };
    let h = History::open_read_only(&path).context("read the history")?;
    let now = SystemTime::now();
    let since = now.checked_sub(args.since).unwrap_or(UNIX_EPOCH);
    let wanted = |s: &Series| match (&args.producer, s) {
        (None, _) => true,
        (Some(p), Series::Producer(id)) => p == id,
        (Some(_), _) => false,
    };
    let growth: Vec<GrowthRow> = h
        .grown_since(since, now)?
        .iter()
        .filter(|(s, _)| wanted(s))
        .map(|(s, g)| growth_row(s, g))
        .collect();
    let regrowth_after_reclaim = match &args.producer {
        Some(p) => h
            .regrowth_after_reclaim(p, now)?
            .map(|g| growth_row(&Series::Producer(p.clone()), &g)),
        None => None,
    };
    let reclaims: Vec<ReclaimRow> = h
        .reclaims(since)?
        .iter()
        .filter(|r| args.producer.as_ref().map_or(true, |p| *p == r.producer))
        .map(reclaim_row)
        .collect();
    let reclaimed_bytes = reclaims
        .iter()
        .filter(|r| r.outcome == "deleted")
        .map(|r| r.allocated_bytes)
        .sum();
    let auto_runs: Vec<AutoRun> = h
        .auto_runs(since)?
        .into_iter()
        .filter(|r| {
            args.producer
                .as_ref()
                .map_or(true, |p| r.producers.contains(p))
        })
        .collect();
    let report = Report {
        auto_runs,
        since_unix_secs: unix_secs(since),
        now_unix_secs: unix_secs(now),
        growth,
        regrowth_after_reclaim,
        reclaims,
        reclaimed_bytes,
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        print_human(&mut out, &report, args.since)?;
    }
    Ok(Outcome::Success)
}

fn signed_bytes(b: i64) -> String {
    let sign = if b < 0 { "-" } else { "+" };
    format!("{sign}{}", bytes(b.unsigned_abs()))
}

fn label(r: &GrowthRow) -> String {
    match (r.series, &r.id, &r.path) {
        ("root", Some(kind), Some(path)) => format!("root {kind} {path}"),
        (_, Some(id), _) => id.clone(),
        _ => "total".to_owned(),
    }
}

fn print_human(out: &mut dyn Write, r: &Report, since: Duration) -> std::io::Result<()> {
    let window = humantime::format_duration(since);
    if r.growth.is_empty() {
        writeln!(out, "No samples in the last {window}.")?;
    } else {
        writeln!(out, "Growth in the last {window}:")?;
        let mut t = Table::new(&[
            ("SERIES", Align::Left),
            ("BYTES", Align::Right),
            ("ITEMS", Align::Right),
            ("OVER", Align::Left),
        ]);
        for g in &r.growth {
            t.row(vec![
                label(g),
                signed_bytes(g.growth_bytes),
                format!("{:+}", g.growth_items),
                super::format::age(g.to_unix_secs.saturating_sub(g.from_unix_secs)),
            ]);
        }
        t.write(out)?;
    }
    if let Some(g) = &r.regrowth_after_reclaim {
        writeln!(
            out,
            "Since its last reclaim {}: {} and {:+} items.",
            label(g),
            signed_bytes(g.growth_bytes),
            g.growth_items
        )?;
    }
    writeln!(out)?;
    print_auto_runs(out, &r.auto_runs, &window.to_string())?;
    if r.reclaims.is_empty() {
        return writeln!(out, "No reclaims in the last {window}.");
    }
    // Per producer and outcome: count and bytes (individual rows are in --json).
    let mut by: BTreeMap<(&str, &str), (u64, u64)> = BTreeMap::new();
    for row in &r.reclaims {
        let outcome = row.outcome.split(':').next().unwrap_or_default();
        let e = by.entry((&row.producer, outcome)).or_default();
        e.0 += 1;
        e.1 += row.allocated_bytes;
    }
    writeln!(
        out,
        "Reclaims in the last {window} ({} freed):",
        bytes(r.reclaimed_bytes)
    )?;
    let mut t = Table::new(&[
        ("PRODUCER", Align::Left),
        ("OUTCOME", Align::Left),
        ("ITEMS", Align::Right),
        ("BYTES", Align::Right),
    ]);
    for ((producer, outcome), (n, b)) in by {
        t.row(vec![
            producer.to_owned(),
            outcome.to_owned(),
            n.to_string(),
            if freed_nothing(outcome) {
                "-".to_owned()
            } else {
                bytes(b)
            },
        ]);
    }
    t.write(out)
}

/// True for audit outcomes that deleted nothing, whose planned bytes were not freed: the item was
/// already gone, kept at execute (`skipped: ...`) or failed (`error: ...`). Their BYTES show `-`.
fn freed_nothing(outcome: &str) -> bool {
    matches!(outcome, "already-gone" | "skipped" | "error")
}

/// The auto-reclaim runs, one line each; nothing when there are none.
fn print_auto_runs(out: &mut dyn Write, runs: &[AutoRun], window: &str) -> std::io::Result<()> {
    if runs.is_empty() {
        return Ok(());
    }
    writeln!(out, "Auto-reclaim runs in the last {window}:")?;
    let mut t = Table::new(&[
        ("STARTED", Align::Left),
        ("RULE", Align::Left),
        ("TRIGGER", Align::Left),
        ("STATUS", Align::Left),
        ("DELETED", Align::Right),
        ("FREED", Align::Right),
        ("KEPT", Align::Left),
        ("ERRORS", Align::Right),
    ]);
    for run in runs {
        let kept: Vec<String> = run.kept.iter().map(|(k, n)| format!("{k} {n}")).collect();
        t.row(vec![
            humantime::format_rfc3339_seconds(
                UNIX_EPOCH + Duration::from_secs(run.started_unix_secs),
            )
            .to_string(),
            run.rule.clone(),
            run.trigger.to_string(),
            run.status.to_string(),
            run.deleted_items.to_string(),
            bytes(run.freed_bytes),
            if kept.is_empty() {
                "-".into()
            } else {
                kept.join(", ")
            },
            run.errors.to_string(),
        ]);
    }
    t.write(out)?;
    writeln!(out)
}
