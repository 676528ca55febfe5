//! `cachewatch scan`: totals per root and per producer, and the largest unattributed entries.

use std::io::Write;

use anyhow::Context as _;
use cachewatch::api::process::ProcessProbe;
use cachewatch::api::scan::{
    scan_root_each_found, with_scan_threads, RootSummary, ScanProgress, Tally,
};
use cachewatch::api::scan_report;
use serde::Serialize;

use super::{Context, Outcome, RootArgs};

mod openmetrics;
mod text;

use text::print_human;

/// Options of `cachewatch scan`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Roots to scan.
    #[command(flatten)]
    pub roots: RootArgs,
    /// Print JSON (shape documented in docs/json.md) instead of tables
    #[arg(long)]
    pub json: bool,
    /// How many unattributed entries to list, largest first
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub top: usize,
    /// Walk with N threads (1 to 256) instead of 3 per CPU.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    pub threads: Option<u16>,
    /// `--openmetrics [--output FILE]`: node_exporter's textfile form.
    #[command(flatten)]
    pub textfile: openmetrics::TextfileArgs,
}

/// Runs `cachewatch scan`: each root streamed through the scanner, producers and the largest
/// unattributed entries summed on the fly (no item list is held).
///
/// # Errors
/// Bad roots, bad config, or a failed write to stdout.
pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<Outcome> {
    let roots = args.roots.resolve(ctx)?;
    let catalogue = ctx.catalogue()?;
    let progress = ScanProgress::new();
    let mut tally = Tally::new(args.top);
    let mut scan = || -> Vec<RootSummary> {
        roots
            .iter()
            .map(|root| {
                scan_root_each_found(root, &catalogue, &progress, |f| tally.add_found(root, &f))
            })
            .collect()
    };
    let summaries = match args.threads {
        Some(n) => with_scan_threads(usize::from(n), scan),
        None => scan(),
    };
    // The writers asked about are under the roots: no open file elsewhere is read.
    let probe =
        cachewatch::api::process::SystemProbe::under(roots.iter().map(|r| r.canonical.clone()));
    // Writers only for people reading the report: a textfile cron run skips the process table.
    let probe = (!args.textfile.openmetrics).then_some(&probe as &dyn ProcessProbe);
    let report = scan_report::report(&summaries, &tally, &catalogue, probe);
    if args.textfile.openmetrics {
        return openmetrics::emit(&args.textfile, &report);
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &report).context("writing JSON to stdout")?;
        writeln!(out).context("writing to stdout")?;
    } else {
        print_human(&report, &mut out).context("writing to stdout")?;
    }
    Ok(Outcome::from_problems(!report.errors.is_empty()))
}

/// The serde word of a unit enum (`leak`, `auto`, ...).
pub fn enum_word<T: Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}
