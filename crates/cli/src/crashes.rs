//! `cachewatch crashes`: crash reports grouped by process and signature, with what to do, and the
//! other reports (hangs, jetsam, resource, panics, ...) by kind and process.

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use anyhow::Context as _;
use cachewatch::api::crash::{CrashGroupDto, CrashWatch, OtherReports, ReportKind, Signatures};
use cachewatch::api::roots::RootKind;
use cachewatch::api::units::unix_secs;
use serde::Serialize;

use super::format::{self, Align, Table};
use super::{Context, Outcome, RootArgs};

/// Options of `cachewatch crashes`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only groups with a report newer than this, e.g. 1h, 3d (humantime) [default: all]
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub since: Option<Duration>,
    /// Reports dirs to read, e.g. `--root diagnostic-reports=PATH`.
    #[command(flatten)]
    pub roots: RootArgs,
    /// Print JSON instead of a table
    #[arg(long)]
    pub json: bool,
}

/// `cachewatch crashes --json`.
#[derive(Debug, Serialize)]
struct CrashesJson {
    groups: Vec<GroupJson>,
    /// Reports that are not crashes, by kind and process.
    other_reports: Vec<OtherReports>,
    /// Reports counted by their header only (body cut short or not written yet: being written).
    partial: Vec<UnreadableJson>,
    unreadable: Vec<UnreadableJson>,
}

#[derive(Debug, Serialize)]
struct GroupJson {
    #[serde(flatten)]
    group: CrashGroupDto,
    /// Reports within the crash-loop window ending now.
    recent_reports: u64,
    /// True when `recent_reports` reaches the crash-loop threshold.
    crash_loop: bool,
    explanation: String,
    advice: String,
    paths: Vec<PathBuf>,
}

#[derive(Debug, Serialize)]
struct UnreadableJson {
    path: PathBuf,
    cause: String,
}

/// Runs `cachewatch crashes`.
///
/// # Errors
/// No `diagnostic-reports` root, a bad `--root`, or a failed write to stdout. Unreadable reports
/// are not errors: they are listed and the exit code is 3.
pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<Outcome> {
    let dirs: Vec<PathBuf> = args
        .roots
        .resolve(ctx)?
        .into_iter()
        .filter(|r| r.kind == RootKind::DiagnosticReports)
        .map(|r| r.path)
        .collect();
    anyhow::ensure!(
        !dirs.is_empty(),
        "no diagnostic-reports root to read: pass --root diagnostic-reports=PATH"
    );
    let loop_cfg = ctx.config.config.alerts.crash_loop.clone();
    let now = SystemTime::now();
    let signatures = Signatures::builtin();
    let mut watch = CrashWatch::with_dirs(dirs, signatures.clone(), loop_cfg.clone());
    // The alerts are for the monitor; here the loop state is shown per group.
    let _loop_alerts = watch.update(now);
    let from = args.since.and_then(|s| now.checked_sub(s));
    let groups: Vec<GroupJson> = watch
        .groups()
        .iter()
        .filter(|g| from.map_or(true, |f| g.last >= f))
        .map(|g| {
            let sig = signatures.get(&g.signature);
            let recent = g.count_within(loop_cfg.crash_loop_window, now);
            GroupJson {
                group: CrashGroupDto::from_group(g, &signatures),
                recent_reports: recent,
                crash_loop: loop_cfg.crash_loop_reports > 0
                    && recent >= u64::from(loop_cfg.crash_loop_reports),
                explanation: sig.map(|s| s.explanation.clone()).unwrap_or_default(),
                advice: sig.map(|s| s.advice.clone()).unwrap_or_default(),
                paths: g.paths.clone(),
            }
        })
        .collect();
    let other_reports: Vec<OtherReports> = watch
        .others()
        .iter()
        .filter(|o| from.map_or(true, |f| o.last_unix_secs >= unix_secs(f)))
        .cloned()
        .collect();
    let unreadable: Vec<UnreadableJson> = watch
        .unreadable()
        .into_iter()
        .map(|u| UnreadableJson {
            path: u.path,
            cause: u.cause,
        })
        .collect();
    let partial: Vec<UnreadableJson> = watch
        .partial()
        .into_iter()
        .map(|u| UnreadableJson {
            path: u.path,
            cause: u.cause,
        })
        .collect();
    let outcome = Outcome::from_problems(!unreadable.is_empty());
    let mut out = std::io::stdout().lock();
    if args.json {
        let doc = CrashesJson {
            groups,
            other_reports,
            partial,
            unreadable,
        };
        serde_json::to_writer_pretty(&mut out, &doc).context("writing JSON to stdout")?;
        writeln!(out).context("writing to stdout")?;
        return Ok(outcome);
    }
    write_table(&mut out, &groups, now).context("writing to stdout")?;
    write_others(&mut out, &other_reports, now).context("writing to stdout")?;
    if !partial.is_empty() {
        writeln!(
            out,
            "\n{} counted by its header only (still being written, or cut short): {}",
            cachewatch::api::units::format_count_of(partial.len() as u64, "report"),
            partial
                .iter()
                .map(|u| format::escape(&u.path.to_string_lossy()).into_owned())
                .collect::<Vec<_>>()
                .join(", ")
        )
        .context("writing to stdout")?;
    }
    for u in &unreadable {
        eprintln!("cachewatch: skipped: {}", format::escape(&u.cause));
    }
    Ok(outcome)
}

fn write_table(out: &mut dyn Write, groups: &[GroupJson], now: SystemTime) -> std::io::Result<()> {
    if groups.is_empty() {
        return writeln!(out, "No crash reports (in the time asked for).");
    }
    let mut t = Table::new(&[
        ("PROCESS", Align::Left),
        ("SIGNATURE", Align::Left),
        ("REPORTS", Align::Right),
        ("FIRST", Align::Right),
        ("LAST", Align::Right),
        ("SIZE", Align::Right),
        ("LOOP", Align::Left),
    ]);
    let now_secs = unix_secs(now);
    for g in groups {
        t.row(vec![
            g.group.process.clone(),
            g.group.signature.clone(),
            g.group.count.to_string(),
            format!(
                "{} ago",
                format::age(now_secs.saturating_sub(g.group.first_unix_secs))
            ),
            format!(
                "{} ago",
                format::age(now_secs.saturating_sub(g.group.last_unix_secs))
            ),
            format::bytes(g.group.report_bytes),
            if g.crash_loop {
                format!("yes ({} recent)", g.recent_reports)
            } else {
                String::new()
            },
        ]);
    }
    t.write(out)?;
    let mut shown: Vec<&str> = Vec::new();
    for g in groups {
        if shown.contains(&g.group.signature.as_str()) || g.advice.is_empty() {
            continue;
        }
        shown.push(&g.group.signature);
        writeln!(out, "\n{}: {}", g.group.signature, g.group.title)?;
        writeln!(out, "  {}", g.explanation)?;
        writeln!(out, "  What to do: {}", g.advice)?;
    }
    for g in groups {
        if let Some(d) = &g.group.detail {
            writeln!(out, "\n{}: {}", format::escape(&g.group.process), d)?;
        }
    }
    Ok(())
}

fn write_others(
    out: &mut dyn Write,
    others: &[OtherReports],
    now: SystemTime,
) -> std::io::Result<()> {
    if others.is_empty() {
        return Ok(());
    }
    writeln!(out, "\nOther reports (not crashes):")?;
    let mut t = Table::new(&[
        ("KIND", Align::Left),
        ("PROCESS", Align::Left),
        ("REPORTS", Align::Right),
        ("LAST", Align::Right),
        ("SIZE", Align::Right),
        ("BUG TYPE", Align::Left),
    ]);
    let now_secs = unix_secs(now);
    for o in others {
        let kind = match o.kind {
            ReportKind::SimulatedFault => "simulated fault (no crash)".to_owned(),
            k => k.to_string(),
        };
        t.row(vec![
            kind,
            o.process.clone(),
            o.count.to_string(),
            format!(
                "{} ago",
                format::age(now_secs.saturating_sub(o.last_unix_secs))
            ),
            format::bytes(o.report_bytes),
            o.bug_types.join(", "),
        ]);
    }
    t.write(out)?;
    if others.iter().any(|o| o.kind == ReportKind::SimulatedFault) {
        writeln!(
            out,
            "Simulated faults (ExcUserFault reports marked \"is_simulated\": 1) are fault \
             diagnostics of processes that went on running: not counted as crashes."
        )?;
    }
    Ok(())
}
