//! Grouping of classified reports by process and signature, and crash-loop detection with a
//! cooldown.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::{CrashReport, ReportKind, Signatures};
use crate::dto::AlertDto;
use crate::units::unix_secs;

/// The alert rule name of a crash loop.
pub const CRASH_LOOP_RULE: crate::dto::AlertRule = crate::dto::AlertRule::CrashLoop;

/// Crash-loop settings (the crash part of `[alerts]`).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CrashLoopConfig {
    /// Reports of one process (and signature) within [`CrashLoopConfig::crash_loop_window`] that
    /// make a crash loop; 0 turns crash-loop alerts off.
    #[serde(with = "crate::bounds::crash_loop_reports")]
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub crash_loop_reports: u32,
    /// The window, humantime in the config (`"10m"`).
    #[serde(with = "crate::bounds::crash_loop_window")]
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub crash_loop_window: Duration,
    /// After an alert, the same process and signature stay silent this long (`"6h"`).
    #[serde(with = "crate::bounds::crash_loop_cooldown")]
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub crash_loop_cooldown: Duration,
}

impl Default for CrashLoopConfig {
    fn default() -> Self {
        CrashLoopConfig {
            crash_loop_reports: 5,
            crash_loop_window: Duration::from_secs(600),
            crash_loop_cooldown: Duration::from_secs(6 * 3600),
        }
    }
}
/// Reports of one process that show one signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrashGroup {
    /// The process name.
    pub process: String,
    /// The signature id.
    pub signature: String,
    /// Number of reports.
    pub count: u64,
    /// Time of the oldest report.
    pub first: SystemTime,
    /// Time of the newest report.
    pub last: SystemTime,
    /// Bytes of the report files (apparent).
    pub report_bytes: u64,
    /// The report times, oldest first.
    pub times: Vec<SystemTime>,
    /// The report files, oldest first.
    pub paths: Vec<PathBuf>,
    /// Threads named as the signature's `reload_thread` in the newest report, when the signature
    /// has one.
    pub reload_threads: Option<u32>,
}

impl CrashGroup {
    /// Reports in the `window` that ends at `now` (reports dated after `now` count too: clocks
    /// of reports and of the monitor may differ slightly).
    pub fn count_within(&self, window: Duration, now: SystemTime) -> u64 {
        let from = now.checked_sub(window).unwrap_or(UNIX_EPOCH);
        self.times.iter().filter(|t| **t >= from).count() as u64
    }

    /// What the newest report adds to the signature's explanation: for a signature with a
    /// `reload_thread`, how many times the process reloaded the model (N such threads = N-1
    /// reloads). `None` when the signature reads nothing or the report has no such thread.
    pub fn detail(&self, signatures: &Signatures) -> Option<String> {
        let thread = signatures.get(&self.signature)?.reload_thread.as_deref()?;
        let n = self.reload_threads.filter(|n| *n > 0)?;
        Some(match n - 1 {
            0 => format!(
                "The newest report shows 1 {thread}: the process loaded the model once and did not reload it."
            ),
            1 => format!(
                "The newest report shows 2 {thread} threads: the process reloaded the model once; reloading does not reset the budget."
            ),
            k => format!(
                "The newest report shows {n} {thread} threads: the process reloaded the model {k} times; reloading does not reset the budget."
            ),
        })
    }
}

/// Reports that are not crashes, of one kind and one process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OtherReports {
    /// What kind of report.
    pub kind: ReportKind,
    /// The process (or, for a report about no process, the name in the file name).
    pub process: String,
    /// The `bug_type`s seen, sorted.
    pub bug_types: Vec<String>,
    /// Number of reports.
    pub count: u64,
    /// Time of the newest report, Unix seconds.
    pub last_unix_secs: u64,
    /// Bytes of the report files (apparent).
    pub report_bytes: u64,
}

/// The reports of `reports` that are not crashes, by kind and process; sorted by kind, then
/// process.
pub fn group_others<'a>(reports: impl IntoIterator<Item = &'a CrashReport>) -> Vec<OtherReports> {
    let mut by_key: BTreeMap<(ReportKind, String), OtherReports> = BTreeMap::new();
    for r in reports.into_iter().filter(|r| !r.is_crash()) {
        let e = by_key
            .entry((r.kind, r.process.clone()))
            .or_insert_with(|| OtherReports {
                kind: r.kind,
                process: r.process.clone(),
                bug_types: Vec::new(),
                count: 0,
                last_unix_secs: 0,
                report_bytes: 0,
            });
        e.count += 1;
        e.last_unix_secs = e.last_unix_secs.max(unix_secs(r.time));
        e.report_bytes += r.file_bytes;
        if let Some(b) = &r.bug_type {
            if let Err(at) = e.bug_types.binary_search(b) {
                e.bug_types.insert(at, b.clone());
            }
        }
    }
    by_key.into_values().collect()
}

/// Groups `reports` by process and signature (reports that are not crashes, or that no signature
/// fits, are left out). Sorted by newest report first, then process and signature.
pub fn group_reports<'a>(
    reports: impl IntoIterator<Item = &'a CrashReport>,
    signatures: &Signatures,
) -> Vec<CrashGroup> {
    let mut by_key: BTreeMap<(String, String), Vec<&CrashReport>> = BTreeMap::new();
    for r in reports {
        if let Some(sig) = signatures.classify(r) {
            by_key
                .entry((r.process.clone(), sig.id.clone()))
                .or_default()
                .push(r);
        }
    }
    let mut groups: Vec<CrashGroup> = by_key
        .into_iter()
        .map(|((process, signature), mut rs)| {
            rs.sort_by(|a, b| a.time.cmp(&b.time).then_with(|| a.path.cmp(&b.path)));
            let reload_threads = signatures
                .get(&signature)
                .and_then(|s| s.reload_thread.as_deref())
                .and_then(|t| rs.last().map(|r| r.threads_named(t)));
            CrashGroup {
                reload_threads,
                process,
                signature,
                count: rs.len() as u64,
                first: rs.first().map_or(UNIX_EPOCH, |r| r.time),
                last: rs.last().map_or(UNIX_EPOCH, |r| r.time),
                report_bytes: rs.iter().map(|r| r.file_bytes).sum(),
                times: rs.iter().map(|r| r.time).collect(),
                paths: rs.iter().map(|r| r.path.clone()).collect(),
            }
        })
        .collect();
    groups.sort_by(|a, b| {
        b.last
            .cmp(&a.last)
            .then_with(|| a.process.cmp(&b.process))
            .then_with(|| a.signature.cmp(&b.signature))
    });
    groups
}

/// Watches crash groups for loops and says so once per cooldown.
#[derive(Debug, Clone, Default)]
pub struct CrashLoopDetector {
    config: CrashLoopConfig,
    last_alert: HashMap<(String, String), SystemTime>,
}

impl CrashLoopDetector {
    /// A detector with no alert history.
    pub fn new(config: CrashLoopConfig) -> CrashLoopDetector {
        CrashLoopDetector {
            config,
            last_alert: HashMap::new(),
        }
    }

    /// Remembers alerts that fired before, as `(process, signature id, when)` (e.g. read back from
    /// the history DB), so a restart does not repeat them within the cooldown.
    pub fn restore(&mut self, fired: impl IntoIterator<Item = (String, String, SystemTime)>) {
        for (process, signature, at) in fired {
            let e = self.last_alert.entry((process, signature)).or_insert(at);
            *e = (*e).max(at);
        }
    }

    /// The crash-loop alerts for `groups` at `now`: a group with at least `crash_loop_reports`
    /// reports in the window ending at `now`, and no alert for it within the cooldown. Each alert is
    /// remembered for the cooldown.
    pub fn evaluate(
        &mut self,
        groups: &[CrashGroup],
        signatures: &Signatures,
        now: SystemTime,
    ) -> Vec<AlertDto> {
        let need = u64::from(self.config.crash_loop_reports);
        if need == 0 {
            return Vec::new();
        }
        let mut out = Vec::new();
        for g in groups {
            let n = g.count_within(self.config.crash_loop_window, now);
            if n < need {
                continue;
            }
            let key = (g.process.clone(), g.signature.clone());
            if let Some(at) = self.last_alert.get(&key) {
                let since = now.duration_since(*at).unwrap_or(Duration::ZERO);
                if since < self.config.crash_loop_cooldown {
                    continue;
                }
            }
            self.last_alert.insert(key, now);
            out.push(crash_loop_alert(
                g,
                n,
                self.config.crash_loop_window,
                signatures,
                now,
            ));
        }
        out
    }
}

/// The alert for a crash loop of `g` with `n` reports in `window`.
pub fn crash_loop_alert(
    g: &CrashGroup,
    n: u64,
    window: Duration,
    signatures: &Signatures,
    now: SystemTime,
) -> AlertDto {
    let sig = signatures.get(&g.signature);
    // A loop of crashes no known signature explains: the loop is the news.
    let generic = sig.map_or(true, |s| s.matcher.is_generic());
    let title = match sig {
        Some(s) if !generic => s.title.clone(),
        _ => format!("A process keeps crashing: {}", g.process),
    };
    let mut message = format!(
        "{} crashed {n} times in the last {} ({} reports in all, {}).",
        g.process,
        crate::units::format_duration(window.as_secs()),
        g.count,
        g.signature
    );
    if generic {
        message.push_str(
            " Something restarts it (launchd KeepAlive, a supervisor, a retry loop) and it dies \
             the same way each time.",
        );
    }
    if let Some(s) = sig {
        message.push(' ');
        message.push_str(&s.explanation);
        if let Some(d) = g.detail(signatures) {
            message.push(' ');
            message.push_str(&d);
        }
        message.push_str(" What to do: ");
        message.push_str(&s.advice);
    }
    AlertDto::new(
        unix_secs(now),
        CRASH_LOOP_RULE,
        sig.and_then(|s| s.producer.clone()),
        title,
        message,
    )
}
