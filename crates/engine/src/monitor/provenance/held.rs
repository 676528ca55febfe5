//! The processes seen holding a file open (or mapped, or as their working dir) inside an
//! unattributed entry while it changed: looked for with each sample of the process table, under
//! the entries changed since the sample before, and kept ([`HELD_CAP`] sightings at most, the
//! oldest dropped first). A writer that holds a member for a moment between two refreshes of the
//! figures is so still named, with when it was seen, once it is gone.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};
use std::time::SystemTime;

use cachewatch_core::provenance::{Evidence, EvidenceKind, ProcessHistory, SeenProcess};

use crate::process::{ProcessProbe, SystemProbe};
use crate::shapes::{ShapeGroup, Writer, MAX_OPEN_FILES};

/// Sightings kept, at most: bounds the memory whatever the roots hold open.
pub const HELD_CAP: usize = 512;

/// A process seen holding something inside an entry of a root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sighting {
    /// The root's canonical path.
    pub root: PathBuf,
    /// The root's entry the held file lies in.
    pub entry: OsString,
    /// The entry of `entry` it lies in (a member of a group one level down), if any.
    pub child: Option<OsString>,
    /// Process id.
    pub pid: u32,
    /// When the process started, where known (a reused pid is another process).
    pub start: Option<SystemTime>,
    /// Executable name; empty when the process ended before it was looked up.
    pub name: String,
    /// Executable path, where the process table gave one.
    pub exe: Option<PathBuf>,
    /// When it was last seen holding it.
    pub seen: SystemTime,
}

impl Sighting {
    fn same(&self, o: &Sighting) -> bool {
        self.pid == o.pid
            && self.start == o.start
            && self.root == o.root
            && self.entry == o.entry
            && self.child == o.child
    }

    /// True when the held file lies in a member of `group` (of the root `root`): the member is
    /// still there and has the group's shape.
    pub fn in_group(&self, root: &Path, group: &ShapeGroup) -> bool {
        if self.root != root {
            return false;
        }
        let (name, path) = match (&group.within, &self.child) {
            (Some(w), Some(c)) if *w == self.entry => (c, root.join(&self.entry).join(c)),
            (None, _) => (&self.entry, root.join(&self.entry)),
            _ => return false,
        };
        std::fs::symlink_metadata(path).is_ok_and(|m| group.contains(name, m.is_dir()))
    }
}

/// The sightings kept.
#[derive(Debug, Default)]
pub struct Held {
    sightings: Vec<Sighting>,
}

impl Held {
    /// Adds `s`, or moves the time of the same sighting (same process, same entry) up to its.
    pub fn record(&mut self, s: Sighting) {
        if let Some(old) = self.sightings.iter_mut().find(|o| o.same(&s)) {
            old.seen = old.seen.max(s.seen);
            if old.exe.is_none() {
                old.exe = s.exe;
            }
            if old.name.is_empty() {
                old.name = s.name;
            }
            return;
        }
        if self.sightings.len() >= HELD_CAP {
            if let Some(i) = (0..self.sightings.len()).min_by_key(|&i| self.sightings[i].seen) {
                self.sightings.swap_remove(i);
            }
        }
        self.sightings.push(s);
    }

    /// Every sighting kept, in no particular order.
    pub fn sightings(&self) -> &[Sighting] {
        &self.sightings
    }
}

/// The processes holding something under `dirs` (each with the canonical path of the root it
/// lies in), looked up in one fresh snapshot of the open files there; their executables from
/// `seen` (the process table sampled with it) where the same process is in it.
pub fn look(dirs: &[(PathBuf, PathBuf)], seen: &[SeenProcess], now: SystemTime) -> Vec<Sighting> {
    let mut out: Vec<Sighting> = Vec::new();
    if dirs.is_empty() {
        return out;
    }
    let probe = SystemProbe::under(dirs.iter().map(|(_, d)| d.clone()));
    probe.refresh();
    for (root, dir) in dirs {
        for f in probe.open_files_under(dir, MAX_OPEN_FILES) {
            let Ok(rel) = f.path.strip_prefix(root) else {
                continue;
            };
            let mut parts = rel.components();
            let Some(Component::Normal(entry)) = parts.next() else {
                continue;
            };
            let child = match parts.next() {
                Some(Component::Normal(c)) => Some(c.to_os_string()),
                _ => None,
            };
            let info = probe.process(f.pid);
            let start = info.as_ref().map(|p| p.start_time);
            let same_process = |p: &&SeenProcess| {
                p.pid == f.pid && start.map_or(true, |t| whole_secs(t) == whole_secs(p.start))
            };
            let exe = seen.iter().find(same_process).and_then(|p| p.exe.clone());
            let s = Sighting {
                root: root.clone(),
                entry: entry.to_os_string(),
                child,
                pid: f.pid,
                start,
                name: info.map(|p| p.name).unwrap_or_default(),
                exe,
                seen: now,
            };
            if !out.iter().any(|o| o.same(&s)) {
                out.push(s);
            }
        }
    }
    out
}

fn whole_secs(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Adds to `evidence` the processes `sighted` holding a member of a group of `items` members that
/// are not among its holders now (`writers`): one "held" entry per executable name, `agree`
/// counting processes. One is alive when `history`'s latest sample saw the process; an exited one
/// keeps when it was last seen alive (or holding, if later).
pub fn add_sighted(
    evidence: &mut Vec<Evidence>,
    writers: &[Writer],
    sighted: &[&Sighting],
    items: u64,
    history: &ProcessHistory,
) {
    let mut counted: Vec<u32> = writers.iter().map(|w| w.pid).collect();
    for s in sighted {
        if s.name.is_empty() || counted.contains(&s.pid) {
            continue;
        }
        counted.push(s.pid);
        let record = history.alive_at(s.pid, s.seen);
        let alive = history.samples() > 0 && record.as_ref().is_some_and(|r| r.alive);
        let last_seen = (!alive).then(|| record.map_or(s.seen, |r| r.last_seen.max(s.seen)));
        let found = evidence
            .iter_mut()
            .find(|e| e.kind == EvidenceKind::Held && e.name == s.name);
        match found {
            Some(e) => {
                e.agree += 1;
                if e.exe.is_none() {
                    e.exe.clone_from(&s.exe);
                }
                if !e.alive {
                    e.alive = alive;
                    e.last_seen = if alive {
                        None
                    } else {
                        e.last_seen.max(last_seen)
                    };
                }
            }
            None => evidence.push(Evidence {
                kind: EvidenceKind::Held,
                name: s.name.clone(),
                exe: s.exe.clone(),
                app: None,
                agree: 1,
                total: usize::try_from(items).unwrap_or(usize::MAX),
                pid_run: None,
                orphans: None,
                last_seen,
                alive,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn sighting(pid: u32, entry: &str, seen: u64) -> Sighting {
        Sighting {
            root: PathBuf::from("/r"),
            entry: entry.into(),
            child: None,
            pid,
            start: Some(SystemTime::UNIX_EPOCH + Duration::from_secs(100)),
            name: "w".into(),
            exe: None,
            seen: SystemTime::UNIX_EPOCH + Duration::from_secs(seen),
        }
    }

    #[test]
    fn the_same_sighting_moves_up_and_the_oldest_goes_past_the_cap() {
        let mut h = Held::default();
        h.record(sighting(1, "a", 200));
        h.record(sighting(1, "a", 300));
        assert_eq!(h.sightings().len(), 1);
        assert_eq!(
            h.sightings()[0].seen,
            SystemTime::UNIX_EPOCH + Duration::from_secs(300)
        );
        for i in 0..HELD_CAP as u32 {
            h.record(sighting(2, &format!("e{i}"), 1_000 + u64::from(i)));
        }
        assert_eq!(h.sightings().len(), HELD_CAP);
        assert!(
            h.sightings().iter().all(|s| s.pid == 2),
            "the oldest, seen at 300, went first"
        );
    }

    #[test]
    fn an_exited_holder_is_named_with_when_it_was_last_seen() {
        let mut history = ProcessHistory::new(16);
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(100);
        let seen = |pid| SeenProcess {
            pid,
            ppid: None,
            name: "w".into(),
            exe: None,
            app: None,
            start,
        };
        history.observe(SystemTime::UNIX_EPOCH + Duration::from_secs(200), [seen(1)]);
        history.observe(SystemTime::UNIX_EPOCH + Duration::from_secs(210), [seen(9)]);
        let s = sighting(1, "a", 200);
        let live = Writer {
            pid: 9,
            name: "w".into(),
            start_time: Some(start),
        };
        let mut ev = Vec::new();
        add_sighted(&mut ev, &[], &[&s], 5, &history);
        assert_eq!(ev.len(), 1);
        assert!(!ev[0].alive);
        assert_eq!(
            ev[0].last_seen,
            Some(SystemTime::UNIX_EPOCH + Duration::from_secs(200))
        );
        assert_eq!((ev[0].agree, ev[0].total), (1, 5));
        // Beside a live holder of the same name: one entry, two processes, alive.
        let mut ev = vec![Evidence {
            kind: EvidenceKind::Held,
            name: "w".into(),
            exe: None,
            app: None,
            agree: 1,
            total: 5,
            pid_run: None,
            orphans: None,
            last_seen: None,
            alive: true,
        }];
        add_sighted(&mut ev, std::slice::from_ref(&live), &[&s], 5, &history);
        assert_eq!((ev.len(), ev[0].agree, ev[0].alive), (1, 2, true));
        // The live holder seen before is not counted twice.
        let again = Sighting { pid: 9, ..s };
        add_sighted(&mut ev, &[live], &[&again], 5, &history);
        assert_eq!(ev[0].agree, 2);
    }
}
