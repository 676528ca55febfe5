//! Who wrote a group of unattributed entries: the monitor's history of the processes seen
//! ([`ProcessHistory`], bounded at [`HISTORY_CAP`] processes), fed by a sample of the process
//! table when an event touches an unattributed entry (at most one sample per [`SAMPLE_GAP`], on
//! the blocking pool; none while nothing changes, so no timer runs at rest), and the evidence
//! each group's members give against it ([`group_evidence`]). With each sample, the processes
//! holding a file inside the entries changed since the sample before are looked for and kept
//! ([`held`]): a writer that holds a member for a moment between two refreshes of the figures is
//! named all the same. A burst of changes gets a second sample [`SAMPLE_GAP`] after the first,
//! for a writer that opens its files just after the first event.

pub mod held;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use cachewatch_core::provenance::{self, Member};
pub use cachewatch_core::provenance::{
    sample_processes, Evidence, EvidenceKind, ProcessHistory, HISTORY_CAP,
};
use tokio::time::Instant;

use crate::dto::{EvidenceDto, EvidenceKindDto};
use crate::shapes::Writer;
use crate::watch::live::GroupMember;

/// Samples of the process table are at least this far apart: a burst of events into
/// unattributed entries costs one sample a second, not one per event.
pub const SAMPLE_GAP: Duration = Duration::from_secs(1);

/// Members of one group the evidence looks at, at most (the first met in the inventory): bounds
/// the time and memory of the evidence of a group of 700,000 members. `total` says how many
/// were looked at.
pub const MEMBERS_LOOKED_AT: usize = 4096;

/// Changed entries of one root the holders are looked for under, at most, between two samples:
/// past that, under the root whole.
const CHANGED_CAP: usize = 256;

/// What the samples saw: the processes, and those seen holding a changed entry.
#[derive(Debug)]
pub struct Seen {
    /// The processes seen.
    pub history: ProcessHistory,
    /// The processes seen holding something inside a changed entry.
    pub held: held::Held,
}

/// The history and when it is next sampled. The history sits behind a mutex only to be read and
/// fed on the blocking pool: the actor awaits each such job, so the lock is never contended.
pub(super) struct Provenance {
    history: Arc<Mutex<Seen>>,
    /// When the last sample was taken.
    last: Option<Instant>,
    /// An unattributed entry changed since the last sample.
    wanted: bool,
    /// The next sample is the second of a burst.
    second: bool,
    /// By root (canonical path): the unattributed entries changed since the last sample; `None`
    /// for the root whole, past [`CHANGED_CAP`] entries.
    changed: BTreeMap<PathBuf, Option<BTreeSet<PathBuf>>>,
    /// Samples taken (shared with [`super::MonitorOptions::process_samples`]).
    count: Arc<AtomicU64>,
}

/// The history, even when a job panicked while holding it (its records stay consistent: a
/// panic mid-`observe` at worst leaves a sample half-recorded).
pub(crate) fn lock(h: &Mutex<Seen>) -> MutexGuard<'_, Seen> {
    h.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Provenance {
    pub(super) fn new(opts: &super::MonitorOptions) -> Provenance {
        Provenance {
            history: Arc::new(Mutex::new(Seen {
                history: ProcessHistory::new(HISTORY_CAP),
                held: held::Held::default(),
            })),
            last: None,
            wanted: false,
            second: false,
            changed: BTreeMap::new(),
            count: opts.process_samples.clone(),
        }
    }

    /// An unattributed entry appeared, grew or changed: the process table is sampled soon.
    pub(super) fn want(&mut self) {
        self.wanted = true;
    }

    /// The unattributed entry `item` of the root `root` (canonical path) appeared, grew or
    /// changed: the process table is sampled soon, and who holds something inside it is looked
    /// for then.
    pub(super) fn want_under(&mut self, root: &Path, item: &Path) {
        self.wanted = true;
        // No allocation for an entry already listed: a burst touches the same ones again.
        let entries = match self.changed.get_mut(root) {
            Some(e) => e,
            None => self
                .changed
                .entry(root.to_path_buf())
                .or_insert_with(|| Some(BTreeSet::new())),
        };
        let full = match &mut *entries {
            Some(items) if items.len() >= CHANGED_CAP => true,
            Some(items) => {
                if !items.contains(item) {
                    items.insert(item.to_path_buf());
                }
                false
            }
            None => false,
        };
        if full {
            *entries = None;
        }
    }

    /// `(root, dir)`: where to look for holders, the entries changed since the last sample
    /// (the root itself past [`CHANGED_CAP`] of them); none are left listed.
    fn take_changed(&mut self) -> Vec<(PathBuf, PathBuf)> {
        std::mem::take(&mut self.changed)
            .into_iter()
            .flat_map(|(root, items)| match items {
                Some(items) => items.into_iter().map(|i| (root.clone(), i)).collect(),
                None => vec![(root.clone(), root)],
            })
            .collect()
    }

    /// The history, for a job on the blocking pool.
    pub(super) fn history(&self) -> Arc<Mutex<Seen>> {
        self.history.clone()
    }

    /// When the wanted sample is due: [`SAMPLE_GAP`] after the last one; `None` when none is
    /// wanted.
    pub(super) fn deadline(&self) -> Option<Instant> {
        if !self.wanted {
            return None;
        }
        Some(self.last.map_or_else(Instant::now, |t| t + SAMPLE_GAP))
    }

    /// Samples the process table into the history on the blocking pool when a sample is wanted
    /// and due at `now`. True when one was taken.
    pub(super) async fn sample_if_due(&mut self, now: Instant) -> bool {
        let due = self.wanted && self.last.map_or(true, |t| now >= t + SAMPLE_GAP);
        if !due {
            return false;
        }
        self.wanted = false;
        // The first sample of a burst may come before its writer opened anything: a second one
        // a gap later sees who holds the new entries then.
        self.second = !self.second;
        if self.second {
            self.wanted = true;
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        let history = self.history.clone();
        let dirs = self.take_changed();
        let res = tokio::task::spawn_blocking(move || {
            let started = std::time::Instant::now();
            // Process start times are the OS's wall clock: the sample is stamped with it too.
            let now = SystemTime::now();
            let seen = provenance::sample_processes();
            let sighted = held::look(&dirs, &seen, now);
            let n = seen.len();
            let mut h = lock(&history);
            h.history.observe(now, seen);
            for s in sighted {
                h.held.record(s);
            }
            tracing::debug!(
                processes = n,
                held = h.history.len(),
                holders = h.held.sightings().len(),
                heap_bytes = h.history.heap_bytes(),
                ms = started.elapsed().as_millis() as u64,
                "sampled the process table for the writers of unattributed entries"
            );
        })
        .await;
        // The gap counts from the end of the sample: a slow table read (thousands of processes)
        // is never followed at once by the next, which would keep the monitor waiting on samples
        // while events queue.
        self.last = Some(Instant::now());
        if let Err(e) = res {
            tracing::warn!(error = %e, "process table sample failed");
        }
        true
    }
}

/// The evidence naming the writer of one group, strongest first: the pid in the members' names
/// ([`provenance::pid_in_name`]), their births right after launches of one executable
/// ([`provenance::created_at_launch`]), a bundle id in their paths ([`provenance::in_path`]),
/// and the processes seen holding a member (`writers`, one entry per executable name; `agree`
/// counts processes, `total` the group's `items`).
pub fn group_evidence(
    members: &[GroupMember],
    items: u64,
    writers: &[Writer],
    history: &ProcessHistory,
) -> Vec<Evidence> {
    use std::os::unix::ffi::OsStrExt;
    // A member with no time at all cannot be placed against the processes' lives.
    let timed: Vec<Member<'_>> = members
        .iter()
        .filter_map(|m| {
            Some(Member {
                name: m.name.as_bytes(),
                born: m.born?,
            })
        })
        .collect();
    let mut out = Vec::new();
    out.extend(provenance::pid_in_name(&timed, history));
    out.extend(provenance::created_at_launch(&timed, history));
    let paths: Vec<&[u8]> = members
        .iter()
        .map(|m| m.path.as_os_str().as_bytes())
        .collect();
    out.extend(provenance::in_path(&paths));
    let mut held: Vec<(&str, usize)> = Vec::new();
    for w in writers.iter().filter(|w| !w.name.is_empty()) {
        match held.iter_mut().find(|(n, _)| *n == w.name) {
            Some((_, c)) => *c += 1,
            None => held.push((&w.name, 1)),
        }
    }
    for (name, count) in held {
        out.push(Evidence {
            kind: EvidenceKind::Held,
            name: name.to_owned(),
            exe: None,
            app: None,
            agree: count,
            total: usize::try_from(items).unwrap_or(usize::MAX),
            pid_run: None,
            orphans: None,
            // Seen at `now`, which is not kept: the figures of two refreshes that saw the same
            // holders compare equal, so nothing is published for them.
            last_seen: None,
            alive: true,
        });
    }
    out.sort_by(|a, b| {
        b.confidence()
            .total_cmp(&a.confidence())
            .then_with(|| a.kind.cmp(&b.kind))
    });
    out
}

/// Adds to `evidence` (strongest first, kept so) the writers the history database remembers for
/// the group (`stored`) that it does not name already: a writer that exited, maybe before the
/// monitor started, stays named with when it was last seen alive (and a pid in the name with
/// which digit run of the names is the pid, for a rule's owner). One is alive when `history`'s
/// latest sample saw a process of its name. A bundle id in the paths is no process and is found
/// again from the paths, so it is not added.
pub fn add_remembered(
    evidence: &mut Vec<Evidence>,
    stored: &[crate::history::StoredWriter],
    history: &ProcessHistory,
) {
    let before = evidence.len();
    for w in stored.iter().filter(|w| w.kind != EvidenceKind::InPath) {
        if let Some(e) = evidence[..before]
            .iter_mut()
            .find(|e| e.kind == w.kind && e.name == w.name)
        {
            // Named again now; an exited writer keeps the latest time it was seen alive.
            if !e.alive {
                e.last_seen = e.last_seen.max(w.last_seen);
            }
            e.pid_run = e.pid_run.or(w.pid_run);
            continue;
        }
        // The same executable when its path is known (another program of the same name, or
        // another copy, is not this writer), else the same name.
        let same = |r: &provenance::ProcessRecord| match &w.exe {
            Some(exe) => r.exe.as_ref() == Some(exe),
            None => r.name == w.name,
        };
        let alive = history.samples() > 0 && history.records().any(|r| r.alive && same(&r));
        evidence.push(Evidence {
            kind: w.kind,
            name: w.name.clone(),
            exe: w.exe.clone(),
            app: w.app.clone(),
            agree: usize::try_from(w.agree).unwrap_or(usize::MAX),
            total: usize::try_from(w.total).unwrap_or(usize::MAX),
            // Which digit run is the pid, as the evidence found it when the births could still be
            // matched to live processes: a rule made now still gets `owner.pid_in_name`.
            pid_run: w.pid_run.filter(|_| w.kind == EvidenceKind::PidInName),
            orphans: None,
            last_seen: w.last_seen,
            alive,
        });
    }
    evidence.sort_by(|a, b| {
        b.confidence()
            .total_cmp(&a.confidence())
            .then_with(|| a.kind.cmp(&b.kind))
    });
}

/// True when a group of `items` members (some remain) was written by processes that have all
/// exited: the evidence names at least one process, none alive, and the process table was
/// sampled at least once (without a sample no writer is known alive or dead).
pub fn confirmed_leak(evidence: &[Evidence], items: u64, history: &ProcessHistory) -> bool {
    let mut named = evidence
        .iter()
        .filter(|e| e.kind != EvidenceKind::InPath)
        .peekable();
    items > 0 && history.samples() > 0 && named.peek().is_some() && named.all(|e| !e.alive)
}

/// What the snapshot shows of one piece of evidence.
pub fn evidence_dto(e: &Evidence) -> EvidenceDto {
    EvidenceDto {
        kind: match e.kind {
            EvidenceKind::PidInName => EvidenceKindDto::PidInName,
            EvidenceKind::CreatedAtLaunch => EvidenceKindDto::CreatedAtLaunch,
            EvidenceKind::Held => EvidenceKindDto::Held,
            EvidenceKind::InPath => EvidenceKindDto::InPath,
        },
        name: e.name.clone(),
        exe: e.exe.as_ref().map(|p| p.to_string_lossy().into_owned()),
        app: e.app.clone(),
        agree: e.agree as u64,
        total: e.total as u64,
        orphans: e.orphans.map(|o| o as u64),
        alive: e.alive,
        last_seen_unix_secs: e.last_seen.map(crate::units::unix_secs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_entries_are_looked_under_one_by_one_up_to_the_cap_then_the_root_whole() {
        let opts = super::super::MonitorOptions::new(
            Vec::new(),
            Arc::new(crate::catalogue::Catalogue::builtin()),
        );
        let mut p = Provenance::new(&opts);
        let (a, b) = (Path::new("/a"), Path::new("/b"));
        p.want_under(a, Path::new("/a/x"));
        p.want_under(a, Path::new("/a/x"));
        p.want_under(b, Path::new("/b/y"));
        assert!(p.deadline().is_some(), "a sample is wanted");
        let pair = |r: &str, d: &str| (PathBuf::from(r), PathBuf::from(d));
        assert_eq!(p.take_changed(), [pair("/a", "/a/x"), pair("/b", "/b/y")]);
        assert!(p.take_changed().is_empty(), "taken");
        for i in 0..=CHANGED_CAP {
            p.want_under(a, &a.join(format!("e{i}")));
        }
        p.want_under(b, Path::new("/b/z"));
        assert_eq!(p.take_changed(), [pair("/a", "/a"), pair("/b", "/b/z")]);
    }
}
