//! Reading a report file safely (never blocking on a FIFO, never reading more than a stated size)
//! and telling its shape: a JSON header line (`.ips`) or legacy text.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use super::report::{CrashReport, ReportKind};
use super::{console, ips, legacy, panic_text, simulated, CrashError};

/// The most of a report file that is read: larger files are reported as unreadable, never parsed.
/// Real crash reports are tens to hundreds of KiB; 8 MiB.
pub const MAX_REPORT_BYTES: u64 = 8 * 1024 * 1024;

/// How much of a synced analytics file is read: its header line (the rest is analytics events,
/// megabytes of them, never needed).
pub const SYNCED_HEAD_BYTES: u64 = 64 * 1024;

/// The name ending of analytics files macOS has sent (`Analytics-<date>.ips.ca.synced`).
pub const SYNCED_SUFFIX: &str = ".ips.ca.synced";

/// Reads and parses the report at `path`, reading at most [`MAX_REPORT_BYTES`] (of a synced
/// analytics file, `*.ips.ca.synced`, its first [`SYNCED_HEAD_BYTES`] only).
///
/// The file is opened with `O_NONBLOCK` and checked on the opened descriptor (`fstat`), so a path
/// swapped for a FIFO, a socket or a device while it is read is refused, never waited on.
///
/// # Errors
/// [`CrashError::Read`] when the file cannot be opened or read, [`CrashError::NotAFile`] when it
/// is not a regular file, [`CrashError::TooLarge`] past the cap, [`CrashError::Parse`] when it is
/// not a report (see [`parse_report`]).
pub fn read_report(path: &Path) -> Result<CrashReport, CrashError> {
    use crate::capped_read::{read_capped, read_head, CappedReadError};
    let read = if is_synced_analytics(path) {
        read_head(path, SYNCED_HEAD_BYTES)
    } else {
        read_capped(path, MAX_REPORT_BYTES)
    };
    let (bytes, meta) = read.map_err(|e| match e {
        CappedReadError::Io(source) => CrashError::Read {
            path: path.to_owned(),
            source,
        },
        CappedReadError::NotAFile(file_type) => CrashError::NotAFile {
            path: path.to_owned(),
            file_type,
        },
        CappedReadError::TooLarge(bytes) => CrashError::TooLarge {
            path: path.to_owned(),
            bytes,
            max_bytes: MAX_REPORT_BYTES,
        },
    })?;
    let mtime = meta.modified().unwrap_or(UNIX_EPOCH);
    parse_report(&bytes, path, meta.len().max(bytes.len() as u64), mtime)
}

/// Parses report bytes; `path` names the report in errors and in the result (its extension also
/// hints the kind), `file_bytes` is its size and `mtime` the fallback time.
///
/// Shapes: a JSON header line over a JSON body (the first JSON value is read, any trailing text
/// ignored), over newline-delimited JSON, or over legacy text; or legacy text alone (`.crash`);
/// any of these after a Console.app "Translated Report" preamble (the original is read). A header
/// with a `bug_type` over a body cut short, or over no body yet, is a report of that kind counted
/// by its header, with [`CrashReport::partial`] saying so.
///
/// # Errors
/// [`CrashError::Parse`] naming the path and what is wrong: a crash report whose JSON body is not
/// JSON (or is cut short under a header without a `bug_type`), a header line that starts like
/// JSON but is not, or text that is neither a JSON header nor a legacy report.
pub fn parse_report(
    bytes: &[u8],
    path: &Path,
    file_bytes: u64,
    mtime: SystemTime,
) -> Result<CrashReport, CrashError> {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_start_matches('\u{feff}');
    let report = match console::strip(text) {
        Some(console::Copy::Original(original)) => parse_text(original, path, file_bytes, mtime),
        Some(console::Copy::Translated(translation)) => {
            parse_text(translation, path, file_bytes, mtime)
        }
        None => parse_text(text, path, file_bytes, mtime),
    }?;
    Ok(if is_synced_analytics(path) {
        as_analytics(report)
    } else {
        report
    })
}

/// True for a CoreAnalytics file macOS marked as sent (`Analytics-<date>.ips.ca.synced`): always
/// analytics, whatever its header says.
pub(super) fn is_synced_analytics(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n.as_encoded_bytes().ends_with(SYNCED_SUFFIX.as_bytes()))
}

/// `report` as [`ReportKind::Analytics`]: a synced analytics file is read for its header only, so
/// its body being cut at the read limit is no news.
fn as_analytics(mut report: CrashReport) -> CrashReport {
    report.kind = ReportKind::Analytics;
    report.partial = None;
    report
}

/// Parses `text` (a BOM and a Console preamble already removed).
fn parse_text(
    text: &str,
    path: &Path,
    file_bytes: u64,
    mtime: SystemTime,
) -> Result<CrashReport, CrashError> {
    let parse_err = |cause: String| CrashError::Parse {
        path: path.to_owned(),
        cause,
    };
    let (head, rest) = text.split_once('\n').unwrap_or((text, ""));
    let blank = CrashReport::new(path, file_bytes, ReportKind::Other, mtime);
    if let Some(header) = ips::parse_header(head) {
        return ips::parse(header, rest, path, blank).map(|r| simulated::mark(r, text));
    }
    if head.trim_start().starts_with('{') {
        return Err(parse_err(
            "header line is not JSON and the file is not a legacy text report".to_owned(),
        ));
    }
    if panic_text::looks_like_panic(text) {
        let mut report = blank;
        panic_text::fill(&mut report, text);
        return Ok(report);
    }
    if !legacy::looks_like_report(text) {
        return Err(parse_err(
            "neither a JSON header line nor a legacy report (no Process: or Exception Type: line)"
                .to_owned(),
        ));
    }
    let mut report = blank;
    legacy::fill(&mut report, text);
    report.kind = if report.exception_type.is_some() || report.signal.is_some() {
        ReportKind::Crash
    } else {
        ReportKind::of_file_name(path).unwrap_or(ReportKind::Other)
    };
    Ok(report)
}
