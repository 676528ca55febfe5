//! What a report in `~/Library/Logs/DiagnosticReports` says, whatever its shape: the kind of
//! report (crash, hang, jetsam, ...), the process, the time and, for a crash, the exception and the
//! crashing thread.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

/// The most frames kept of the crashing thread (macOS writes at most 512); a report's further
/// frames are read and dropped.
pub const MAX_FRAMES: usize = 512;
/// The most application-specific messages kept of a report.
pub const MAX_MESSAGES: usize = 64;
/// The most distinct thread names counted of a report (a name seen already is always counted).
pub const MAX_THREAD_NAMES: usize = 256;

/// The kind of a diagnostic report, from its `bug_type` (or, without one, its file name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReportKind {
    /// A process crash: `bug_type` 309 (JSON, macOS 12+), 109 (JSON header over legacy text) or a
    /// legacy `.crash` text report.
    Crash,
    /// A hang or spin: `bug_type` 288 (stackshot), `.spin` and `.hang` files.
    Hang,
    /// A process killed for memory: `bug_type` 298 (`JetsamEvent-*.ips`).
    Jetsam,
    /// A resource report: `bug_type` 202 (CPU), 145 (disk writes), `.diag` files.
    Resource,
    /// A kernel panic: `bug_type` 210 (JSON) or 151 (legacy text).
    Panic,
    /// Analytics: `bug_type` 211 (newline-delimited JSON).
    Analytics,
    /// A fault report of a process that did not crash: a crash-shaped report marked
    /// `"is_simulated": 1` (`ExcUserFault_*.ips`, written for `os_log_fault` diagnostics on
    /// macOS 26.6). Listed with the other reports, never counted as a crash.
    SimulatedFault,
    /// A report with a JSON header of another `bug_type`.
    Other,
}

impl ReportKind {
    /// The kind of a report of `bug_type` (`"309"`, ...); [`ReportKind::Other`] for a type not
    /// listed on the variants.
    pub fn of_bug_type(bug_type: &str) -> ReportKind {
        match bug_type.trim() {
            "309" | "109" => ReportKind::Crash,
            "288" => ReportKind::Hang,
            "298" => ReportKind::Jetsam,
            "202" | "145" => ReportKind::Resource,
            "210" | "151" => ReportKind::Panic,
            "211" => ReportKind::Analytics,
            _ => ReportKind::Other,
        }
    }

    /// The kind a file name says when the report has no `bug_type`: `.spin`/`.hang` are hangs,
    /// `.diag` resource reports, `.panic` panics; `None` otherwise.
    pub fn of_file_name(path: &Path) -> Option<ReportKind> {
        match path.extension()?.to_str()? {
            "spin" | "hang" => Some(ReportKind::Hang),
            "diag" => Some(ReportKind::Resource),
            "panic" => Some(ReportKind::Panic),
            _ => None,
        }
    }

    /// The kebab-case name (`crash`, `hang`, `jetsam`, `resource`, `panic`, `analytics`,
    /// `simulated-fault`, `other`).
    pub fn as_str(self) -> &'static str {
        match self {
            ReportKind::Crash => "crash",
            ReportKind::Hang => "hang",
            ReportKind::Jetsam => "jetsam",
            ReportKind::Resource => "resource",
            ReportKind::Panic => "panic",
            ReportKind::Analytics => "analytics",
            ReportKind::SimulatedFault => "simulated-fault",
            ReportKind::Other => "other",
        }
    }
}

impl std::fmt::Display for ReportKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One frame of the crashing thread.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StackFrame {
    /// The image's name (`libswiftCore.dylib`, `CoreAIRuntime`), when known.
    pub image: Option<String>,
    /// The symbol, when symbolicated.
    pub symbol: Option<String>,
}

/// What a report says, reduced to what classification and grouping need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrashReport {
    /// The report file.
    pub path: PathBuf,
    /// Size of the report file, bytes (apparent).
    pub file_bytes: u64,
    /// What kind of report it is.
    pub kind: ReportKind,
    /// The process's name: the body's `procName`, else the header's `app_name` or `name`, else
    /// the legacy `Process:` line, else the file name's process part.
    pub process: String,
    /// The executable path (`procPath`, legacy `Path:`), when given.
    pub process_path: Option<String>,
    /// The process id, when given.
    pub pid: Option<u32>,
    /// The header's `bug_type` (`309` for a crash), when given.
    pub bug_type: Option<String>,
    /// The header's `os_version` (legacy `OS Version:`), when given.
    pub os_version: Option<String>,
    /// The header's `incident_id` (or the body's `incident`), when given.
    pub incident_id: Option<String>,
    /// When it happened: the body's `captureTime`, else the header's `timestamp`, else the legacy
    /// `Date/Time:`, else the file's mtime.
    pub time: SystemTime,
    /// `exception.type`, e.g. `EXC_BREAKPOINT` (legacy `Exception Type:`).
    pub exception_type: Option<String>,
    /// `exception.signal`, e.g. `SIGTRAP` (legacy: in parentheses after the type).
    pub signal: Option<String>,
    /// `exception.codes`, as written.
    pub codes: Option<String>,
    /// The termination reason: `termination.indicator` (JSON) or the legacy `Termination Reason:`
    /// (else `Termination Signal:`) line.
    pub termination: Option<String>,
    /// Names of the images of the crashing thread's frames, in frame order, each once.
    pub thread_images: Vec<String>,
    /// Symbols of the crashing thread's frames, in frame order.
    pub thread_symbols: Vec<String>,
    /// The crashing thread's frames, top (frame 0) first.
    pub thread_frames: Vec<StackFrame>,
    /// Number of threads of each name (`ANEServicesThread` → 5), over all threads of the process.
    pub thread_names: BTreeMap<String, u32>,
    /// Application-specific information (`asi`, legacy `Application Specific Information:`).
    pub messages: Vec<String>,
    /// Why only the header line was read, when it was: the body is cut short or absent (a report
    /// read while macOS still writes it). Such a report counts by its header (kind, process,
    /// time) and is read again when the file changes.
    pub partial: Option<String>,
}

impl CrashReport {
    /// An empty report of `kind` for `path`: the process from the file name, the time `mtime`.
    pub fn new(path: &Path, file_bytes: u64, kind: ReportKind, mtime: SystemTime) -> CrashReport {
        CrashReport {
            path: path.to_owned(),
            file_bytes,
            kind,
            process: process_from_file_name(path),
            process_path: None,
            pid: None,
            bug_type: None,
            os_version: None,
            incident_id: None,
            time: mtime,
            exception_type: None,
            signal: None,
            codes: None,
            termination: None,
            thread_images: Vec::new(),
            thread_symbols: Vec::new(),
            thread_frames: Vec::new(),
            thread_names: BTreeMap::new(),
            messages: Vec::new(),
            partial: None,
        }
    }

    /// True when the report describes a crash.
    pub fn is_crash(&self) -> bool {
        self.kind == ReportKind::Crash
    }

    /// Number of threads named `name`.
    pub fn threads_named(&self, name: &str) -> u32 {
        self.thread_names.get(name).copied().unwrap_or(0)
    }

    /// Sets the crashing thread's frames (the first [`MAX_FRAMES`]), and from them `thread_images` (each once, in linear
    /// time) and `thread_symbols`.
    pub fn set_frames(&mut self, mut frames: Vec<StackFrame>) {
        frames.truncate(MAX_FRAMES);
        let mut seen: HashSet<&str> = HashSet::with_capacity(frames.len());
        let mut images = Vec::new();
        for f in &frames {
            if let Some(i) = f.image.as_deref() {
                if seen.insert(i) {
                    images.push(i.to_owned());
                }
            }
        }
        self.thread_images = images;
        self.thread_symbols = frames.iter().filter_map(|f| f.symbol.clone()).collect();
        self.thread_frames = frames;
    }
}

/// The process part of a report's file name (`python3.12-2025-06-01-102233.ips` → `python3.12`).
pub(crate) fn process_from_file_name(path: &Path) -> String {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    match date_split(&stem) {
        Some(p) => p.to_owned(),
        None => stem,
    }
}

/// Splits `<proc>[-_]YYYY-MM-DD-HHMMSS…` at the date; `None` when there is no such date.
fn date_split(stem: &str) -> Option<&str> {
    let b = stem.as_bytes();
    // "-YYYY-MM-DD-HHMMSS" is 18 bytes.
    (0..b.len().saturating_sub(17)).find_map(|i| {
        let s = &b[i..i + 18];
        let digits = |r: std::ops::Range<usize>| s[r].iter().all(u8::is_ascii_digit);
        let ok = (s[0] == b'-' || s[0] == b'_')
            && digits(1..5)
            && s[5] == b'-'
            && digits(6..8)
            && s[8] == b'-'
            && digits(9..11)
            && s[11] == b'-'
            && digits(12..18);
        (ok && i > 0).then(|| &stem[..i])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_name_from_file_name() {
        let p = |s: &str| process_from_file_name(Path::new(s));
        assert_eq!(p("/r/python3.12-2025-06-01-102233.ips"), "python3.12");
        assert_eq!(p("/r/my-worker-2025-06-01-102233.ips"), "my-worker");
        assert_eq!(
            p("/r/Chrome_2025-06-01-102233_host.cpu_resource.diag"),
            "Chrome"
        );
        assert_eq!(p("/r/odd.ips"), "odd");
    }

    #[test]
    fn bug_types_name_their_kind() {
        let k = ReportKind::of_bug_type;
        assert_eq!(
            ["309", "109", "288", "298", "202", "145", "210", "151", "211", "999"].map(k),
            [
                ReportKind::Crash,
                ReportKind::Crash,
                ReportKind::Hang,
                ReportKind::Jetsam,
                ReportKind::Resource,
                ReportKind::Resource,
                ReportKind::Panic,
                ReportKind::Panic,
                ReportKind::Analytics,
                ReportKind::Other
            ]
        );
    }
}
