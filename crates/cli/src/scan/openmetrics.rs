//! `cachewatch scan --openmetrics [--output FILE]`: the scan's figures as metrics for
//! node_exporter's textfile collector, printed or written atomically.

use std::io::Write as _;
use std::path::PathBuf;

use anyhow::Context as _;
use cachewatch::metrics::textfile::{self, ProducerFigures, RootFigures, ScanFigures};

use super::ScanReport;
use crate::Outcome;

/// `--openmetrics` and `--output`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TextfileArgs {
    /// Print metrics for node_exporter's textfile collector (the /metrics families a scan fills,
    /// in the Prometheus text format) instead of tables
    #[arg(long, conflicts_with = "json")]
    pub openmetrics: bool,
    /// With --openmetrics: write them to FILE atomically (a temporary beside it, synced, renamed),
    /// e.g. /usr/local/var/node_exporter/textfile/cachewatch.prom
    #[arg(long, value_name = "FILE", requires = "openmetrics")]
    pub output: Option<PathBuf>,
}

/// Prints (or writes to `--output`) the metrics of `report`. The outcome is that of the scan:
/// problems when a path could not be read.
///
/// # Errors
/// The file cannot be written, or stdout is closed.
pub fn emit(args: &TextfileArgs, report: &ScanReport) -> anyhow::Result<Outcome> {
    let text = textfile::render(&figures(report));
    match &args.output {
        Some(path) => textfile::write_atomically(path, &text)?,
        None => std::io::stdout()
            .lock()
            .write_all(text.as_bytes())
            .context("writing to stdout")?,
    }
    Ok(Outcome::from_problems(!report.errors.is_empty()))
}

/// The figures of the metrics from the scan report.
fn figures(report: &ScanReport) -> ScanFigures {
    ScanFigures {
        roots: report
            .roots
            .iter()
            .map(|r| RootFigures {
                kind: r.kind.clone(),
                path: r.path.clone(),
                allocated_bytes: r.allocated_bytes,
            })
            .collect(),
        producers: report
            .producers
            .iter()
            .map(|p| ProducerFigures {
                id: p.id.clone(),
                items: p.items,
                allocated_bytes: p.allocated_bytes,
            })
            .collect(),
    }
}
