//! `cachewatch scan --openmetrics [--output FILE]`: the scan's figures as metrics for
//! node_exporter's textfile collector, printed or written atomically.

use std::io::Write as _;
use std::path::PathBuf;

use anyhow::Context as _;
use cachewatch::api::metrics::{self as textfile, ProducerFigures, RootFigures, ScanFigures};

use crate::Outcome;
use cachewatch::dto::ScanReportDto;

/// `--openmetrics` and `--output`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TextfileArgs {
    /// Print metrics for node_exporter's textfile collector (the /metrics families a scan fills,
    /// in the Prometheus text format) instead of tables
    #[arg(long, conflicts_with = "json")]
    pub openmetrics: bool,
    /// With --openmetrics: write them to FILE atomically (a temporary beside it, synced, renamed),
    /// e.g. /usr/local/var/node_exporter/textfile/cachewatch.prom; `-` (or /dev/stdout) is
    /// standard output. A symlink another user could have planted, or a FILE that is not a
    /// regular file, is refused
    #[arg(long, value_name = "FILE", requires = "openmetrics")]
    pub output: Option<PathBuf>,
}

/// Prints (or writes to `--output`) the metrics of `report`. The outcome is that of the scan:
/// problems when a path could not be read.
///
/// # Errors
/// The file cannot be written, or stdout is closed.
pub fn emit(args: &TextfileArgs, report: &ScanReportDto) -> anyhow::Result<Outcome> {
    let text = textfile::render(&figures(report));
    match args.output.as_deref().filter(|p| !is_stdout(p)) {
        Some(path) => cachewatch::api::safe_file::write_atomically(path, &text)?,
        // Written to fd 1, whatever it is (a pipe, a terminal, /dev/null): never a path renamed over.
        None => std::io::stdout()
            .lock()
            .write_all(text.as_bytes())
            .context("writing to stdout")?,
    }
    // Exit 3 alone tells a cron job nothing: say what was left out of the figures.
    if let Some(line) = problem_line(report) {
        eprintln!("{line}");
    }
    Ok(Outcome::from_problems(!report.errors.is_empty()))
}

/// `-`, and the spellings of standard output as a path (`/dev/stdout`, `/dev/fd/1`): written to
/// fd 1 rather than replaced (cron's stdout is `/dev/null`, which must stay a device).
fn is_stdout(p: &std::path::Path) -> bool {
    ["-", "/dev/stdout", "/dev/fd/1"]
        .iter()
        .any(|s| p.as_os_str() == *s)
}

/// The stderr line for a scan that could not read every path (the figures leave those out).
fn problem_line(report: &ScanReportDto) -> Option<String> {
    let first = report.errors.first()?;
    let more = report.errors.len() - 1;
    Some(format!(
        "cachewatch: {} path(s) could not be read and are left out of the figures: {}: {}{}",
        report.errors.len(),
        first.path,
        first.message,
        if more > 0 {
            format!(" (and {more} more; `cachewatch scan --json` lists them)")
        } else {
            String::new()
        }
    ))
}

/// The figures of the metrics from the scan report.
fn figures(report: &ScanReportDto) -> ScanFigures {
    ScanFigures {
        roots: report
            .roots
            .iter()
            .map(|r| RootFigures {
                kind: r.kind.to_string(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use cachewatch::dto::ScanErrorDto;

    /// `scan --openmetrics` with an unreadable dir exited 3 and printed nothing on stderr.
    #[test]
    fn unreadable_paths_are_named_on_stderr() {
        let err = |p: &str| ScanErrorDto {
            path: p.into(),
            path_bytes: None,
            kind: cachewatch::api::scan::IssueKind::PermissionDenied,
            message: "Permission denied (os error 13)".into(),
        };
        let mut report = ScanReportDto {
            roots: Vec::new(),
            producers: Vec::new(),
            unattributed_groups: Vec::new(),
            unattributed: Vec::new(),
            errors: Vec::new(),
        };
        assert_eq!(problem_line(&report), None);
        report.errors.push(err("/t/locked"));
        assert_eq!(
            problem_line(&report).unwrap(),
            "cachewatch: 1 path(s) could not be read and are left out of the figures: /t/locked: Permission denied (os error 13)"
        );
        report.errors.push(err("/t/b"));
        report.errors.push(err("/t/c"));
        let line = problem_line(&report).unwrap();
        assert!(line.starts_with("cachewatch: 3 path(s)"), "{line}");
        assert!(
            line.ends_with("(and 2 more; `cachewatch scan --json` lists them)"),
            "{line}"
        );
    }
}
