//! Crash reports: read every report macOS writes to `~/Library/Logs/DiagnosticReports` (`.ips`
//! of every `bug_type`, legacy `.crash` text, `.diag`, `.spin`, `.hang`, synced analytics
//! `.ips.ca.synced`, and reports copied out of Console.app), classify the crashes with
//! the crash signatures (`crates/engine/signatures.toml`), group them by process and signature,
//! list the other reports by kind (hang, jetsam, resource, panic, ...), and raise one alert per
//! crash loop (N reports of the same process within a window), with a cooldown.
//!
//! A report caught while macOS writes it (a header line with its body cut short, or none yet)
//! counts by its header (kind, process, time) and is read again whole when the file grows; only
//! crash reports (`bug_type` 309/109 or crash-shaped legacy text) make groups and loops, never
//! analytics, stackshots or simulated faults.
//!
//! # Known problems
//! - Reports larger than [`MAX_REPORT_BYTES`] (8 MiB) are listed as unreadable, never parsed.
//! - Only the crashing thread's frames and the thread names are read; registers are not.
//!
//! The monitor owns a [`CrashWatch`] over the `diagnostic-reports` roots and calls
//! [`CrashWatch::update`] after each inventory update; `cachewatch crashes` uses the same parts
//! once.
//!
//! Why: a process that dies the same way again and again (e.g. Apple's CoreAI runtime killing it
//! after 16384 output NDArray allocations) leaves one report after another in
//! `~/Library/Logs/DiagnosticReports`; bytes are small, the signal is the rate.

mod console;
mod group;
mod ips;
mod legacy;
mod panic_text;
mod read;
mod report;
mod signature;
mod simulated;
mod store;
mod time;

use std::path::PathBuf;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

pub use group::{
    crash_loop_alert, group_others, group_reports, CrashGroup, CrashLoopConfig, CrashLoopDetector,
    OtherReports, CRASH_LOOP_RULE,
};
pub use read::{parse_report, read_report, MAX_REPORT_BYTES, SYNCED_HEAD_BYTES, SYNCED_SUFFIX};
pub use report::{CrashReport, ReportKind, StackFrame, MAX_FRAMES, MAX_MESSAGES, MAX_THREAD_NAMES};
pub use signature::{FramePattern, Signature, SignatureMatch, Signatures, BUILTIN_SIGNATURES};
pub use store::{ReportStore, Unreadable, REPORT_EXTENSIONS, RETIRED_DIR};
pub use time::parse_ips_time;

use crate::dto::AlertDto;
use crate::roots::{Root, RootKind};
use crate::units::unix_secs;

/// Errors reading crash reports and signatures.
#[derive(Debug, thiserror::Error)]
pub enum CrashError {
    /// The report cannot be opened or read.
    #[error("cannot read crash report {path:?}: {source}")]
    Read {
        /// The report.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The path is not a regular file (a FIFO, a socket, a device, a directory): it is not opened
    /// for reading.
    #[error("crash report {path:?} is a {file_type}, not a regular file: skipped (remove it or move it out of the reports dir)")]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is (`FIFO`, `socket`, ...).
        file_type: &'static str,
    },
    /// The report is larger than [`MAX_REPORT_BYTES`]; it is not read.
    #[error("crash report {path:?} is {bytes} bytes, more than the {max_bytes} read: skipped")]
    TooLarge {
        /// The report.
        path: PathBuf,
        /// Its size, bytes.
        bytes: u64,
        /// The cap, bytes.
        max_bytes: u64,
    },
    /// The file is not a report (see [`parse_report`]), or a crash report's JSON body is truncated.
    #[error("unreadable crash report {path:?}: {cause}")]
    Parse {
        /// The report.
        path: PathBuf,
        /// What is wrong.
        cause: String,
    },
    /// A signatures file is invalid.
    #[error("invalid crash signatures {path:?}, line {line}: {message}")]
    Signatures {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// A crash group as the snapshot, the CLI's `--json` and the UI show it. Times are Unix seconds.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CrashGroupDto {
    /// The process name.
    pub process: String,
    /// The signature id.
    pub signature: String,
    /// The signature's title.
    pub title: String,
    /// Number of reports.
    pub count: u64,
    /// Time of the oldest report, Unix seconds.
    pub first_unix_secs: u64,
    /// Time of the newest report, Unix seconds.
    pub last_unix_secs: u64,
    /// Bytes of the report files (apparent).
    pub report_bytes: u64,
    /// What the newest report adds to the signature's explanation (e.g. "reloaded the model 4
    /// times; reloading does not reset the budget"), when the signature reads something.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl CrashGroupDto {
    /// The DTO of `g`, with the title from `signatures`.
    pub fn from_group(g: &CrashGroup, signatures: &Signatures) -> CrashGroupDto {
        CrashGroupDto {
            process: g.process.clone(),
            signature: g.signature.clone(),
            title: signatures
                .get(&g.signature)
                .map_or_else(|| g.signature.clone(), |s| s.title.clone()),
            count: g.count,
            first_unix_secs: unix_secs(g.first),
            last_unix_secs: unix_secs(g.last),
            report_bytes: g.report_bytes,
            detail: g.detail(signatures),
        }
    }
}

/// The monitor's view of crash reports: a [`ReportStore`] over the reports dirs, the signatures
/// and a [`CrashLoopDetector`].
#[derive(Debug)]
pub struct CrashWatch {
    dirs: Vec<PathBuf>,
    signatures: Signatures,
    store: ReportStore,
    detector: CrashLoopDetector,
    groups: Vec<CrashGroup>,
    others: Vec<OtherReports>,
}

impl CrashWatch {
    /// Watches the `diagnostic-reports` roots among `roots` with the built-in signatures.
    pub fn new(roots: &[Root], config: CrashLoopConfig) -> CrashWatch {
        let dirs = roots
            .iter()
            .filter(|r| r.kind == RootKind::DiagnosticReports)
            .map(|r| r.path.clone())
            .collect();
        CrashWatch::with_dirs(dirs, Signatures::builtin(), config)
    }

    /// Watches `dirs` with `signatures`.
    pub fn with_dirs(
        dirs: Vec<PathBuf>,
        signatures: Signatures,
        config: CrashLoopConfig,
    ) -> CrashWatch {
        CrashWatch {
            dirs,
            signatures,
            store: ReportStore::new(),
            detector: CrashLoopDetector::new(config),
            groups: Vec::new(),
            others: Vec::new(),
        }
    }

    /// True when there is no reports dir to watch (then [`CrashWatch::update`] does nothing).
    pub fn is_idle(&self) -> bool {
        self.dirs.is_empty()
    }

    /// Re-reads new and changed reports, regroups, and returns the crash-loop alerts that fire at
    /// `now` (each loop once per cooldown). Blocking (reads files); cheap when nothing changed.
    pub fn update(&mut self, now: SystemTime) -> Vec<AlertDto> {
        if self.dirs.is_empty() {
            return Vec::new();
        }
        if self.store.refresh(&self.dirs) > 0 {
            // A report's text and parse are gone once it is read: return their pages (8 MiB
            // reports read in a row otherwise stay resident as free heap).
            crate::platform::release_free_memory();
        }
        self.groups = group_reports(self.store.reports(), &self.signatures);
        self.others = group_others(self.store.reports());
        self.detector.evaluate(&self.groups, &self.signatures, now)
    }

    /// The current groups, newest report first.
    pub fn groups(&self) -> &[CrashGroup] {
        &self.groups
    }

    /// The current groups as DTOs, newest report first.
    pub fn group_dtos(&self) -> Vec<CrashGroupDto> {
        self.groups
            .iter()
            .map(|g| CrashGroupDto::from_group(g, &self.signatures))
            .collect()
    }

    /// The reports that are not crashes (hangs, jetsam, resource, panics, ...), by kind and
    /// process.
    pub fn others(&self) -> &[OtherReports] {
        &self.others
    }

    /// Report files that could not be read or parsed.
    pub fn unreadable(&self) -> Vec<Unreadable> {
        self.store.unreadable()
    }

    /// Reports counted by their header only so far (body cut short or not written yet), with
    /// why; each is read again when its file changes.
    pub fn partial(&self) -> Vec<Unreadable> {
        self.store.partial()
    }

    /// The signatures in use.
    pub fn signatures(&self) -> &Signatures {
        &self.signatures
    }
}
