//! The processes seen over time, bounded and interned ([`ProcessHistory`]), and one sample of the
//! process table to feed it ([`sample_processes`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A process as one sample of the process table shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenProcess {
    /// Process id.
    pub pid: u32,
    /// Parent process id, where known.
    pub ppid: Option<u32>,
    /// Executable name (as `ps -o comm` shows it).
    pub name: String,
    /// Executable path, where it could be read.
    pub exe: Option<PathBuf>,
    /// Bundle identifier of the app the executable lies in (macOS), where there is one.
    pub app: Option<String>,
    /// When the process started (whole seconds: may read up to one second early).
    pub start: SystemTime,
}

/// A process of the history: what was seen and when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessRecord {
    /// Process id.
    pub pid: u32,
    /// Parent process id, where known.
    pub ppid: Option<u32>,
    /// Executable name.
    pub name: String,
    /// Executable path, where known.
    pub exe: Option<PathBuf>,
    /// Bundle identifier of its app, where known.
    pub app: Option<String>,
    /// When it started.
    pub start: SystemTime,
    /// The last sample that saw it alive.
    pub last_seen: SystemTime,
    /// True when it was alive at the latest sample.
    pub alive: bool,
}

/// A record as stored: strings interned, times as whole seconds since the epoch.
#[derive(Debug, Clone, Copy)]
pub(super) struct Slot {
    pub(super) pid: u32,
    pub(super) ppid: u32,
    pub(super) name: u32,
    pub(super) exe: u32,
    pub(super) app: u32,
    pub(super) start: u64,
    pub(super) last_seen: u64,
}

pub(super) const NONE: u32 = u32::MAX;

/// Strings shared by many processes (names, executables, bundle ids), stored once.
#[derive(Debug, Default)]
struct Interner {
    strings: Vec<Box<str>>,
    ids: HashMap<Box<str>, u32>,
}

impl Interner {
    fn intern(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = u32::try_from(self.strings.len()).unwrap_or(NONE - 1);
        self.strings.push(s.into());
        self.ids.insert(s.into(), id);
        id
    }

    fn get(&self, id: u32) -> Option<&str> {
        self.strings.get(id as usize).map(|s| &**s)
    }

    fn bytes(&self) -> usize {
        self.strings.iter().map(|s| 2 * s.len() + 48).sum::<usize>() + self.strings.capacity() * 16
    }
}

/// The processes seen over time, at most `cap` of them: when full, the processes that exited
/// longest ago go first, then the oldest live ones.
#[derive(Debug)]
pub struct ProcessHistory {
    cap: usize,
    pub(super) slots: Vec<Slot>,
    /// `(pid, start secs)` → index in `slots`.
    index: HashMap<(u32, u64), usize>,
    strings: Interner,
    /// Time of the latest sample, in seconds since the epoch (0 before the first).
    pub(super) latest: u64,
    samples: u64,
    /// When the latest samples were taken (seconds, oldest first, at most [`SAMPLE_TIMES`]):
    /// a control instant counts only where a sample looked ([`ProcessHistory::sampled_near`]).
    sample_times: std::collections::VecDeque<u64>,
}

/// Sample times kept (8 bytes each): at one sample a second, the last hour and more.
pub const SAMPLE_TIMES: usize = 4096;

/// A sample up to this many seconds after an instant saw the processes started just before it
/// (the monitor samples at most once a second, start times are whole seconds).
const SAMPLE_SLACK_SECS: u64 = 2;

pub(super) fn secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

pub(super) fn time(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

/// The default bound of the monitor's history.
pub const HISTORY_CAP: usize = 10_000;

impl ProcessHistory {
    /// An empty history of at most `cap` processes (at least 16).
    pub fn new(cap: usize) -> ProcessHistory {
        ProcessHistory {
            cap: cap.max(16),
            slots: Vec::new(),
            index: HashMap::new(),
            strings: Interner::default(),
            latest: 0,
            samples: 0,
            sample_times: std::collections::VecDeque::new(),
        }
    }

    /// Records one sample of the process table taken at `now`: each process is added or seen
    /// again; a process of an earlier sample missing from this one has exited (its last sight
    /// stays the sample before).
    pub fn observe(&mut self, now: SystemTime, processes: impl IntoIterator<Item = SeenProcess>) {
        let now_s = secs(now).max(self.latest);
        for p in processes {
            let key = (p.pid, secs(p.start));
            if let Some(&i) = self.index.get(&key) {
                self.slots[i].last_seen = now_s;
                continue;
            }
            let name = self.strings.intern(&p.name);
            let exe = match &p.exe {
                Some(e) => self.strings.intern(&e.to_string_lossy()),
                None => NONE,
            };
            let app = match &p.app {
                Some(a) => self.strings.intern(a),
                None => NONE,
            };
            self.index.insert(key, self.slots.len());
            self.slots.push(Slot {
                pid: p.pid,
                ppid: p.ppid.unwrap_or(NONE),
                name,
                exe,
                app,
                start: key.1,
                last_seen: now_s,
            });
        }
        self.latest = now_s;
        self.samples += 1;
        if self.sample_times.back() != Some(&now_s) {
            if self.sample_times.len() >= SAMPLE_TIMES {
                self.sample_times.pop_front();
            }
            self.sample_times.push_back(now_s);
        }
        if self.slots.len() > self.cap {
            self.evict();
        }
    }

    /// Drops to three quarters of the cap: exited processes seen longest ago first.
    fn evict(&mut self) {
        let latest = self.latest;
        self.slots
            .sort_by_key(|s| (s.last_seen == latest, s.last_seen, s.start));
        let drop = self.slots.len() - self.cap * 3 / 4;
        self.slots.drain(..drop);
        self.index = self
            .slots
            .iter()
            .enumerate()
            .map(|(i, s)| ((s.pid, s.start), i))
            .collect();
        // The strings only dropped processes used go too: executables of one-off builds and
        // extracted bundles are unique per run, so keeping them would grow without end.
        let old = std::mem::take(&mut self.strings);
        let mut remap = |id: u32| match old.get(id) {
            Some(s) if id != NONE => self.strings.intern(s),
            _ => NONE,
        };
        for s in &mut self.slots {
            s.name = remap(s.name);
            s.exe = remap(s.exe);
            s.app = remap(s.app);
        }
    }

    /// Number of processes held.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// True before the first process was seen.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Samples taken so far.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// True when a sample was taken at `at` (whole seconds) or within a couple of seconds after:
    /// a process started just before `at` and alive for a moment was then seen, and one absent
    /// from the history did not run then. Instants before the history began, or between two
    /// samples far apart, are not looked at.
    pub fn sampled_near(&self, at: u64) -> bool {
        let i = self.sample_times.partition_point(|&t| t < at);
        self.sample_times
            .get(i)
            .is_some_and(|&t| t <= at + SAMPLE_SLACK_SECS)
    }

    /// Bytes the history holds on the heap, estimated from its tables' capacities.
    pub fn heap_bytes(&self) -> usize {
        self.sample_times.capacity() * 8
            + self.slots.capacity() * std::mem::size_of::<Slot>()
            + self.index.capacity() * (std::mem::size_of::<((u32, u64), usize)>() + 1)
            + self.strings.bytes()
    }

    fn record(&self, s: &Slot) -> ProcessRecord {
        let text = |id: u32| (id != NONE).then(|| self.strings.get(id)).flatten();
        ProcessRecord {
            pid: s.pid,
            ppid: (s.ppid != NONE).then_some(s.ppid),
            name: text(s.name).unwrap_or_default().to_owned(),
            exe: text(s.exe).map(PathBuf::from),
            app: text(s.app).map(str::to_owned),
            start: time(s.start),
            last_seen: time(s.last_seen),
            alive: s.last_seen == self.latest,
        }
    }

    /// Every process held, in no particular order.
    pub fn records(&self) -> impl Iterator<Item = ProcessRecord> + '_ {
        self.slots.iter().map(|s| self.record(s))
    }

    /// The process with pid `pid` that was alive at `at`: started at or before it (a second of
    /// slack for the start's rounding) and seen alive at or after it. A pid reused later names
    /// the process of the member's time, not today's.
    pub fn alive_at(&self, pid: u32, at: SystemTime) -> Option<ProcessRecord> {
        let t = secs(at);
        self.slots
            .iter()
            .filter(|s| s.pid == pid && s.start <= t + 1 && s.last_seen + 1 >= t)
            .max_by_key(|s| s.start)
            .map(|s| self.record(s))
    }

    /// Keys of the executables started in `[from, to]` (whole seconds), each once.
    pub(super) fn started_between(&self, from: u64, to: u64) -> Vec<u32> {
        let mut out: Vec<u32> = self
            .slots
            .iter()
            .filter(|s| s.start >= from && s.start <= to)
            .map(|s| if s.exe != NONE { s.exe } else { s.name })
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// A live or exited record of the executable key `key` (its newest start).
    pub(super) fn newest_of(&self, key: u32) -> Option<ProcessRecord> {
        self.slots
            .iter()
            .filter(|s| s.exe == key || (s.exe == NONE && s.name == key))
            .max_by_key(|s| (s.last_seen, s.start))
            .map(|s| self.record(s))
    }
}

/// Every process running now, as [`ProcessHistory::observe`] takes them: `sysinfo`, with the
/// bundle id of each executable's app on macOS (one `Info.plist` read per bundle dir).
pub fn sample_processes() -> Vec<SeenProcess> {
    use sysinfo::{ProcessRefreshKind, ProcessesToUpdate, System, UpdateKind};
    let mut out = Vec::new();
    let Ok(mut sys) = System::new() else {
        return out;
    };
    sys.refresh_processes_specifics(
        ProcessesToUpdate::All,
        true,
        ProcessRefreshKind::nothing().with_exe(UpdateKind::OnlyIfNotSet),
    );
    let mut app_of_dir: HashMap<PathBuf, Option<String>> = HashMap::new();
    for (pid, p) in sys.processes() {
        if p.thread_kind().is_some() {
            continue;
        }
        let exe = p.exe().map(Path::to_path_buf);
        let app = exe.as_ref().and_then(|e| {
            let dir = e.parent()?.to_path_buf();
            app_of_dir
                .entry(dir)
                .or_insert_with(|| crate::platform::bundle_id_of_exe(e))
                .clone()
        });
        out.push(SeenProcess {
            pid: pid.as_u32(),
            ppid: p.parent().map(|pp| pp.as_u32()),
            name: p.name().to_string_lossy().into_owned(),
            exe,
            app,
            start: UNIX_EPOCH + Duration::from_secs(p.start_time()),
        });
    }
    out
}
