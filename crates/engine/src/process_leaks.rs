//! Process leaks (the process watch, opt-in, `[[process_watch]] name = ".."`): samples the thread
//! count and resident memory of the named processes and flags a steady climb of threads as a
//! suspected resource leak.
//!
//! Why: Apple's CoreAI runtime leaks one `ANEServicesThread` (and a Neural Engine VM region) per
//! model reload, so a worker that reloads its model to "reset" it grows threads until it dies. The
//! thread count comes from the platform facade ([`crate::platform::thread_count`]: `/proc` on
//! Linux, `libproc` on macOS), the resident memory from `sysinfo`.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use sysinfo::{ProcessRefreshKind, ProcessesToUpdate, System};

use crate::dto::AlertDto;

/// The alert rule name of a suspected process leak.
pub const PROCESS_LEAK_RULE: crate::dto::AlertRule = crate::dto::AlertRule::ProcessLeak;

/// One `[[process_watch]]` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessWatchConfig {
    /// Process name to watch (as `ps -o comm` shows it, or the executable's file name).
    pub name: String,
    /// Threads the process must gain over the window to be flagged (default 8).
    #[serde(
        default = "default_min_thread_rise",
        with = "crate::bounds::min_thread_rise"
    )]
    pub min_thread_rise: u32,
    /// The window the rise is measured over, seconds (default 1800).
    #[serde(
        default = "default_window_secs",
        with = "crate::bounds::process_window_secs"
    )]
    pub window_secs: u64,
    /// Interval between samples, seconds (default 10; the monitor samples every watched process at
    /// the shortest interval of its entries).
    #[serde(
        default = "default_sample_interval_secs",
        with = "crate::bounds::process_sample_interval_secs"
    )]
    pub sample_interval_secs: u64,
}

fn default_min_thread_rise() -> u32 {
    8
}

fn default_window_secs() -> u64 {
    1800
}

fn default_sample_interval_secs() -> u64 {
    10
}

impl ProcessWatchConfig {
    /// A rule for `name` with the defaults.
    pub fn named(name: &str) -> ProcessWatchConfig {
        ProcessWatchConfig {
            name: name.to_owned(),
            min_thread_rise: default_min_thread_rise(),
            window_secs: default_window_secs(),
            sample_interval_secs: default_sample_interval_secs(),
        }
    }
}

/// One sample of a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcSample {
    /// When it was taken.
    pub at: SystemTime,
    /// Number of threads.
    pub threads: u32,
    /// Resident memory, bytes.
    pub resident_bytes: u64,
}

/// A process whose thread count climbs steadily.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuspectedLeak {
    /// Process id.
    pub pid: u32,
    /// The watched name.
    pub name: String,
    /// The oldest sample in the window.
    pub first: ProcSample,
    /// The newest sample.
    pub last: ProcSample,
    /// `last.threads - first.threads`.
    pub thread_rise: u32,
    /// Samples in the window.
    pub samples: usize,
    /// Steps between consecutive samples where the thread count went down.
    pub falls: usize,
    /// `last.resident_bytes - first.resident_bytes` (negative when it shrank).
    pub resident_growth_bytes: i64,
}

impl SuspectedLeak {
    /// A one-paragraph description with the numbers.
    pub fn message(&self) -> String {
        let span = self
            .last
            .at
            .duration_since(self.first.at)
            .unwrap_or(Duration::ZERO);
        let span = crate::units::format_duration(span.as_secs());
        format!(
            "{} (pid {}) went from {} to {} threads (+{}) in {span} over {} samples, and its \
             resident memory changed by {} bytes ({} to {}): a suspected thread leak. A process \
             that reloads a Core ML / CoreAI model leaks one ANEServicesThread per reload; \
             restart the process instead of reloading the model.",
            self.name,
            self.pid,
            self.first.threads,
            self.last.threads,
            self.thread_rise,
            self.samples,
            self.resident_growth_bytes,
            self.first.resident_bytes,
            self.last.resident_bytes,
        )
    }

    /// The alert for this leak at `now`.
    pub fn alert(&self, now: SystemTime) -> AlertDto {
        AlertDto::new(
            crate::units::unix_secs(now),
            PROCESS_LEAK_RULE,
            None,
            leak_title(&self.name),
            self.message(),
        )
    }
}

/// The title of the [`PROCESS_LEAK_RULE`] alert of the watched name `name` (the cooldown of a
/// restarted monitor finds its last alerts by it).
pub fn leak_title(name: &str) -> String {
    format!("{name} keeps gaining threads")
}

/// Judges the samples of one process (oldest first): a leak when, over the samples within
/// `window` ending at `now` (at least 3), the count rose by at least `min_rise` from the first to
/// the last, the last is the highest, and at most one step in five went down. `None` otherwise.
pub fn judge(
    pid: u32,
    name: &str,
    samples: &[ProcSample],
    min_rise: u32,
    window: Duration,
    now: SystemTime,
) -> Option<SuspectedLeak> {
    let from = now.checked_sub(window)?;
    let recent: Vec<&ProcSample> = samples.iter().filter(|s| s.at >= from).collect();
    if recent.len() < 3 {
        return None;
    }
    let (first, last) = (*recent[0], **recent.last()?);
    let rise = last.threads.checked_sub(first.threads)?;
    let steps = recent.len() - 1;
    let falls = recent
        .windows(2)
        .filter(|w| w[1].threads < w[0].threads)
        .count();
    let highest = recent.iter().map(|s| s.threads).max()?;
    if rise < min_rise.max(1) || falls * 5 > steps || last.threads < highest {
        return None;
    }
    Some(SuspectedLeak {
        pid,
        name: name.to_owned(),
        first,
        last,
        thread_rise: rise,
        samples: recent.len(),
        falls,
        resident_growth_bytes: last.resident_bytes as i64 - first.resident_bytes as i64,
    })
}

/// The samples kept per process: enough for a window of a few hours at one sample a minute.
const MAX_SAMPLES: usize = 512;

#[derive(Debug)]
struct Series {
    rule: usize,
    samples: VecDeque<ProcSample>,
}

/// Samples the watched processes and keeps their recent history.
#[derive(Debug)]
pub struct ProcessWatcher {
    rules: Vec<ProcessWatchConfig>,
    series: BTreeMap<u32, Series>,
    system: Option<System>,
}

impl ProcessWatcher {
    /// A watcher for `rules` (none: [`ProcessWatcher::sample`] does nothing).
    pub fn new(rules: Vec<ProcessWatchConfig>) -> ProcessWatcher {
        ProcessWatcher {
            rules,
            series: BTreeMap::new(),
            system: None,
        }
    }

    /// Samples every running process whose name (or executable file name) is one of the rules'
    /// names: thread count and resident bytes at `now`. Processes that are gone are forgotten.
    /// Returns the samples taken, by pid. Blocking (reads the process table).
    pub fn sample(&mut self, now: SystemTime) -> BTreeMap<u32, ProcSample> {
        let mut found: Vec<(u32, usize, ProcSample)> = Vec::new();
        if self.rules.is_empty() {
            return BTreeMap::new();
        }
        if self.system.is_none() {
            self.system = System::new().ok();
        }
        let Some(sys) = self.system.as_mut() else {
            return BTreeMap::new();
        };
        sys.refresh_processes_specifics(
            ProcessesToUpdate::All,
            true,
            ProcessRefreshKind::nothing()
                .with_memory()
                .with_exe(sysinfo::UpdateKind::OnlyIfNotSet),
        );
        for (pid, p) in sys.processes() {
            if p.thread_kind().is_some() {
                continue;
            }
            let name = p.name().to_string_lossy();
            let exe_name = p
                .exe()
                .and_then(|e| e.file_name())
                .map(|n| n.to_string_lossy().into_owned());
            let Some(rule) = self
                .rules
                .iter()
                .position(|r| r.name == name || exe_name.as_deref() == Some(r.name.as_str()))
            else {
                continue;
            };
            let pid = pid.as_u32();
            let Some(threads) = crate::platform::thread_count(pid) else {
                continue;
            };
            let sample = ProcSample {
                at: now,
                threads,
                resident_bytes: p.memory(),
            };
            found.push((pid, rule, sample));
        }
        self.series
            .retain(|pid, _| found.iter().any(|(p, _, _)| p == pid));
        for (pid, rule, sample) in &found {
            let series = self.series.entry(*pid).or_insert_with(|| Series {
                rule: *rule,
                samples: VecDeque::new(),
            });
            if series.samples.len() == MAX_SAMPLES {
                series.samples.pop_front();
            }
            series.samples.push_back(*sample);
        }
        found.into_iter().map(|(pid, _, s)| (pid, s)).collect()
    }

    /// The samples kept for `pid`, oldest first.
    pub fn samples(&self, pid: u32) -> Vec<ProcSample> {
        self.series
            .get(&pid)
            .map_or_else(Vec::new, |s| s.samples.iter().copied().collect())
    }

    /// The watched processes whose thread count climbs steadily over their rule's window ending at
    /// `now` (see [`judge`]), by pid.
    pub fn suspects(&self, now: SystemTime) -> Vec<SuspectedLeak> {
        self.series
            .iter()
            .filter_map(|(pid, s)| {
                let rule = self.rules.get(s.rule)?;
                let samples: Vec<ProcSample> = s.samples.iter().copied().collect();
                judge(
                    *pid,
                    &rule.name,
                    &samples,
                    rule.min_thread_rise,
                    Duration::from_secs(rule.window_secs),
                    now,
                )
            })
            .collect()
    }
}
