//! Who left a leak: a bounded history of the processes seen, and the evidence that ties the
//! members of a group to one of them, each kind named with how many members agree.
//!
//! A writer that holds a file inside a member at the moment of a scan is the easy case
//! ([`crate::shapes::writers`]). Most leaks are written by processes that close their files at
//! once or have already exited, so the evidence here is read from the members' birth times and
//! names against the processes seen over time:
//!
//! - [`EvidenceKind::PidInName`]: one numeric run of the members' names is the pid of a process
//!   that was alive when the member was born (started at or before the birth, seen alive at or
//!   after it). Members whose process has exited since are orphans.
//! - [`EvidenceKind::CreatedAtLaunch`]: the members are born within a few seconds after starts of
//!   one executable, more often than at the same instants shifted away (the control: a program
//!   that starts every second would otherwise explain every birth).
//! - [`EvidenceKind::InPath`]: a bundle id (`com.example.App`) in the members' paths.
//!
//! [`ProcessHistory`] is what the monitor keeps: at most `cap` processes, names and executables
//! interned, about 100 bytes a process (10,000 processes in well under 2 MiB). It is fed by
//! [`sample_processes`] when a group appears or grows, never on a timer, so a process that starts
//! and exits between two samples is never seen (its members then carry no launch evidence, and
//! no pid evidence unless a sample caught it).

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

mod history;

pub use history::{
    sample_processes, ProcessHistory, ProcessRecord, SeenProcess, HISTORY_CAP, SAMPLE_TIMES,
};
use history::{secs, NONE};

/// The kinds of evidence that name a writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EvidenceKind {
    /// A numeric run of the names is the pid of a process alive when the member was born.
    PidInName,
    /// Members are born within seconds after starts of one executable.
    CreatedAtLaunch,
    /// A file open or mapped, or a working dir, inside a member.
    Held,
    /// A bundle id in the members' paths.
    InPath,
}

impl EvidenceKind {
    /// The kind's name as the CLI, the window and the report show it.
    pub fn label(self) -> &'static str {
        match self {
            EvidenceKind::PidInName => "pid in the name",
            EvidenceKind::CreatedAtLaunch => "created at launch",
            EvidenceKind::Held => "held open",
            EvidenceKind::InPath => "in the path",
        }
    }
}

/// One piece of evidence naming a writer of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evidence {
    /// What kind of evidence.
    pub kind: EvidenceKind,
    /// The writer's executable name (or the bundle id, for [`EvidenceKind::InPath`]).
    pub name: String,
    /// The writer's executable path, where known.
    pub exe: Option<PathBuf>,
    /// The writer's app bundle id, where known.
    pub app: Option<String>,
    /// Members that agree.
    pub agree: usize,
    /// Members looked at.
    pub total: usize,
    /// For [`EvidenceKind::PidInName`]: the index of the numeric run holding the pid (0 = the
    /// first run of ASCII digits in the name).
    pub pid_run: Option<usize>,
    /// Members whose writer has exited (orphans), where the evidence can tell per member
    /// ([`EvidenceKind::PidInName`]); `None` otherwise.
    pub orphans: Option<usize>,
    /// When a writer process was last seen alive (the latest across the agreeing ones).
    pub last_seen: Option<SystemTime>,
    /// True when a writer named by this evidence still runs.
    pub alive: bool,
}

impl Evidence {
    /// How many members agree, as a share of those looked at (0 to 1).
    pub fn confidence(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.agree as f64 / self.total as f64
        }
    }
}

/// A group member as the evidence reads it: its name's bytes and its birth time.
#[derive(Debug, Clone, Copy)]
pub struct Member<'a> {
    /// The member's file name, as bytes.
    pub name: &'a [u8],
    /// When it was born (birth time, or its oldest mtime where the OS keeps no birth time).
    pub born: SystemTime,
}

/// Members that must agree, at the least, for any evidence: three, and three fifths of them.
fn enough(agree: usize, total: usize) -> bool {
    agree >= 3 && agree * 5 >= total * 3
}

/// The runs of ASCII digits in `name`, as numbers (a run too long for a `u32` counts as none).
pub fn numeric_runs(name: &[u8]) -> Vec<Option<u32>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < name.len() {
        if name[i].is_ascii_digit() {
            let start = i;
            while i < name.len() && name[i].is_ascii_digit() {
                i += 1;
            }
            let run = &name[start..i];
            let value = std::str::from_utf8(run)
                .ok()
                .and_then(|s| s.parse::<u32>().ok());
            out.push(value.filter(|_| run.len() <= 7));
        } else {
            i += 1;
        }
    }
    out
}

/// Evidence that one numeric run of the members' names is the pid of the process alive at each
/// member's birth: the run index on which most members agree, when enough of them do.
pub fn pid_in_name(members: &[Member<'_>], history: &ProcessHistory) -> Option<Evidence> {
    if members.is_empty() || history.is_empty() {
        return None;
    }
    let runs: Vec<Vec<Option<u32>>> = members.iter().map(|m| numeric_runs(m.name)).collect();
    let most = runs.iter().map(Vec::len).max().unwrap_or(0);
    let mut best: Option<Evidence> = None;
    for k in 0..most {
        let mut agree = 0;
        let mut orphans = 0;
        let mut alive_any = false;
        let mut last_seen: Option<SystemTime> = None;
        let mut by_key: HashMap<(String, Option<PathBuf>, Option<String>), usize> = HashMap::new();
        for (m, r) in members.iter().zip(&runs) {
            let Some(Some(pid)) = r.get(k) else {
                continue;
            };
            if *pid <= 1 {
                continue;
            }
            let Some(p) = history.alive_at(*pid, m.born) else {
                continue;
            };
            agree += 1;
            if p.alive {
                alive_any = true;
            } else {
                orphans += 1;
            }
            last_seen = last_seen.max(Some(p.last_seen));
            *by_key.entry((p.name, p.exe, p.app)).or_default() += 1;
        }
        if !enough(agree, members.len()) {
            continue;
        }
        let ((name, exe, app), _) = by_key
            .into_iter()
            .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(&a.0)))?;
        let e = Evidence {
            kind: EvidenceKind::PidInName,
            name,
            exe,
            app,
            agree,
            total: members.len(),
            pid_run: Some(k),
            orphans: Some(orphans + (members.len() - agree)),
            last_seen,
            alive: alive_any,
        };
        if best.as_ref().map_or(true, |b| e.agree > b.agree) {
            best = Some(e);
        }
    }
    best
}

/// How long after a start of its writer a member may be born and still count as created at
/// launch.
pub const LAUNCH_WINDOW: Duration = Duration::from_secs(5);

/// Offsets of the control instants: the births moved this far back, where a writer that starts
/// on its own schedule should not line up.
const CONTROL_OFFSETS_SECS: [u64; 3] = [17, 41, 73];

/// Evidence that the members are born right after starts of one executable: for at least three
/// fifths of them a start of that executable lies in `[born - LAUNCH_WINDOW, born]` (plus a second
/// of rounding), and at the control instants (the births moved back by 17, 41 or 73 s) where a
/// sample looked ([`ProcessHistory::sampled_near`]), the same executable lines up at most half as
/// often: a program that starts all the time explains nothing. With fewer than three control
/// instants looked at (a history younger than the births' neighbourhood, or samples far apart)
/// a busy program cannot be told from the writer, so there is no evidence.
pub fn created_at_launch(members: &[Member<'_>], history: &ProcessHistory) -> Option<Evidence> {
    if members.is_empty() || history.is_empty() {
        return None;
    }
    let window = LAUNCH_WINDOW.as_secs();
    let mut hits: HashMap<u32, usize> = HashMap::new();
    for m in members {
        let born = secs(m.born);
        for key in history.started_between(born.saturating_sub(window), born + 1) {
            *hits.entry(key).or_default() += 1;
        }
    }
    let mut observed = 0usize;
    let mut control: HashMap<u32, usize> = HashMap::new();
    for shift in CONTROL_OFFSETS_SECS {
        for m in members {
            let Some(at) = secs(m.born).checked_sub(shift) else {
                continue;
            };
            if !history.sampled_near(at) {
                continue;
            }
            observed += 1;
            for key in history.started_between(at.saturating_sub(window), at + 1) {
                *control.entry(key).or_default() += 1;
            }
        }
    }
    if observed < 3 {
        return None;
    }
    let total = members.len();
    let (key, agree) = hits
        .into_iter()
        .filter(|&(key, agree)| {
            let c = control.get(&key).copied().unwrap_or(0);
            // The rate at the controls, c / observed, at most half the rate at the births.
            enough(agree, total) && c * total * 2 <= agree * observed
        })
        // The executable that lines up most above its rate at the controls: on a busy machine a
        // program started all the time may line up with every birth too, but also elsewhere.
        .max_by_key(|&(key, agree)| {
            let c = control.get(&key).copied().unwrap_or(0);
            (agree * observed - c * total, agree, std::cmp::Reverse(key))
        })?;
    let p = history.newest_of(key)?;
    let alive = history.slots.iter().any(|s| {
        (s.exe == key || (s.exe == NONE && s.name == key)) && s.last_seen == history.latest
    });
    Some(Evidence {
        kind: EvidenceKind::CreatedAtLaunch,
        name: p.name,
        exe: p.exe,
        app: p.app,
        agree,
        total: members.len(),
        pid_run: None,
        orphans: None,
        last_seen: Some(p.last_seen),
        alive,
    })
}

/// True when `s` reads as a bundle id: reverse-DNS, at least three dot-separated labels of
/// letters, digits and `-`, the first a known top-level label or two letters.
fn is_bundle_id(s: &[u8]) -> bool {
    let Ok(s) = std::str::from_utf8(s) else {
        return false;
    };
    let labels: Vec<&str> = s.split('.').collect();
    if labels.len() < 3 || labels.iter().any(|l| l.is_empty()) {
        return false;
    }
    let ok_label = |l: &str| l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    let tld = labels[0];
    let known = ["com", "org", "net", "io", "dev", "app", "co", "me"];
    labels.iter().all(|l| ok_label(l))
        && (known.contains(&tld) || (tld.len() == 2 && tld.bytes().all(|b| b.is_ascii_lowercase())))
        && !labels
            .last()
            .is_some_and(|l| l.bytes().all(|b| b.is_ascii_digit()))
}

/// Evidence that the members lie inside one app's own dir: the bundle id that most of the
/// members' paths (relative to the root, as bytes; components split on `/`) hold in a parent dir.
pub fn in_path(member_paths: &[&[u8]]) -> Option<Evidence> {
    let mut by_id: HashMap<&str, usize> = HashMap::new();
    for p in member_paths {
        let comps: Vec<&[u8]> = p.split(|&b| b == b'/').filter(|c| !c.is_empty()).collect();
        let Some((_, parents)) = comps.split_last() else {
            continue;
        };
        let mut ids: Vec<&str> = parents
            .iter()
            .filter(|c| is_bundle_id(c))
            .filter_map(|c| std::str::from_utf8(c).ok())
            .collect();
        ids.sort_unstable();
        ids.dedup();
        for id in ids {
            *by_id.entry(id).or_default() += 1;
        }
    }
    let (id, agree) = by_id
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(a.0)))?;
    enough(agree, member_paths.len()).then(|| Evidence {
        kind: EvidenceKind::InPath,
        name: id.to_owned(),
        exe: None,
        app: Some(id.to_owned()),
        agree,
        total: member_paths.len(),
        pid_run: None,
        orphans: None,
        last_seen: None,
        alive: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    fn t(s: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_800_000_000 + s)
    }

    fn proc(pid: u32, name: &str, start: u64) -> SeenProcess {
        SeenProcess {
            pid,
            ppid: Some(1),
            name: name.to_owned(),
            exe: Some(PathBuf::from(format!("/opt/bin/{name}"))),
            app: None,
            start: t(start),
        }
    }

    #[test]
    fn unique_executables_of_evicted_processes_do_not_stay() {
        // One-off builds and extracted bundles run from a new path each time.
        let run = |s: u64| SeenProcess {
            exe: Some(PathBuf::from(format!(
                "/tmp/onefile_{s}_1718000000/python-{s:032}"
            ))),
            ..proc(s as u32 + 2, "job", s)
        };
        let mut h = ProcessHistory::new(200);
        for s in 0..400u64 {
            h.observe(t(s), [run(s)]);
        }
        let settled = h.heap_bytes();
        for s in 400..20_000u64 {
            h.observe(t(s), [run(s)]);
        }
        assert!(h.len() <= 200);
        assert!(
            h.heap_bytes() <= settled * 2,
            "{} bytes after 20,000 runs, {settled} after 400",
            h.heap_bytes()
        );
        // What is kept still reads back.
        let last = h.records().map(|r| r.start).max().unwrap();
        assert_eq!(last, t(19_999));
    }

    #[test]
    fn numeric_runs_reads_each_digit_run() {
        assert_eq!(
            numeric_runs(b"model_4312_1_1765000000.mlmodelc"),
            vec![Some(4312), Some(1), None]
        );
        assert_eq!(numeric_runs(b"tmp-\xff7"), vec![Some(7)]);
        assert!(numeric_runs(b"nodigits").is_empty());
    }

    #[test]
    fn a_pid_reused_later_names_the_process_of_the_members_time() {
        let mut h = ProcessHistory::new(100);
        h.observe(t(10), [proc(500, "katago", 0)]);
        h.observe(t(20), []);
        h.observe(t(100), [proc(500, "bash", 90)]);
        assert_eq!(h.alive_at(500, t(5)).map(|p| p.name), Some("katago".into()));
        assert_eq!(h.alive_at(500, t(95)).map(|p| p.name), Some("bash".into()));
        // Born after katago's last sight and before bash started: no process.
        assert_eq!(h.alive_at(500, t(50)), None);
    }

    #[test]
    fn pid_run_is_found_and_exited_writers_make_orphans() {
        let mut h = ProcessHistory::new(100);
        let names: Vec<String> = (0..6)
            .map(|i| format!("model_{}_{}_{}", 300 + i * 7, i % 2, 1_800_000_000 + i * 10))
            .collect();
        for i in 0..6u64 {
            h.observe(t(i * 10), [proc(300 + i as u32 * 7, "katago", i * 10)]);
        }
        // The last launch is still running at the latest sample.
        h.observe(t(61), [proc(335, "katago", 50)]);
        let members: Vec<Member<'_>> = names
            .iter()
            .enumerate()
            .map(|(i, n)| Member {
                name: n.as_bytes(),
                born: t(i as u64 * 10),
            })
            .collect();
        let e = pid_in_name(&members, &h).expect("pid evidence");
        assert_eq!(e.kind, EvidenceKind::PidInName);
        assert_eq!(e.name, "katago");
        assert_eq!((e.agree, e.total, e.pid_run), (6, 6, Some(0)));
        assert_eq!(e.orphans, Some(5));
        assert!(e.alive);
    }

    #[test]
    fn numbers_that_match_no_live_process_name_nobody() {
        let mut h = ProcessHistory::new(100);
        h.observe(t(0), [proc(900, "other", 0)]);
        let names = ["cache-111", "cache-222", "cache-333", "cache-444"];
        let members: Vec<Member<'_>> = names
            .iter()
            .map(|n| Member {
                name: n.as_bytes(),
                born: t(0),
            })
            .collect();
        assert_eq!(pid_in_name(&members, &h), None);
    }

    #[test]
    fn births_after_launches_name_the_executable_and_a_busy_one_does_not() {
        // 1,010 launches in all: a cap above that keeps every record (eviction has its own test).
        let mut h = ProcessHistory::new(2000);
        // `ticker` starts every second all the time; `katago` starts 10 times, 100 s apart.
        for s in 0..1000u64 {
            let mut ps = vec![proc(10_000 + s as u32, "ticker", s)];
            if s % 100 == 0 {
                ps.push(proc(20_000 + s as u32, "katago", s));
            }
            h.observe(t(s), ps);
        }
        let names: Vec<String> = (0..10).map(|i| format!("bundle-{i}")).collect();
        let members: Vec<Member<'_>> = names
            .iter()
            .enumerate()
            .map(|(i, n)| Member {
                name: n.as_bytes(),
                born: t(i as u64 * 100 + 2),
            })
            .collect();
        let e = created_at_launch(&members, &h).expect("launch evidence");
        assert_eq!(e.name, "katago");
        assert_eq!((e.agree, e.total), (10, 10));
        assert!(!e.alive);
        // Births at random times: nothing lines up but the ticker, which the control rejects.
        let members: Vec<Member<'_>> = names
            .iter()
            .enumerate()
            .map(|(i, n)| Member {
                name: n.as_bytes(),
                born: t(i as u64 * 100 + 50),
            })
            .collect();
        assert_eq!(created_at_launch(&members, &h), None);
    }

    #[test]
    fn of_two_programs_at_every_birth_the_one_not_also_at_the_controls_is_named() {
        let mut h = ProcessHistory::new(3000);
        // `busy` is seen first, then starts a second before each birth and also at 17 s before
        // three of them; `katago` starts two seconds before each birth and nowhere else.
        h.observe(t(0), [proc(1, "busy", 0)]);
        for s in 1..2000u64 {
            let mut ps = Vec::new();
            if s >= 1000 && s % 100 == 1 {
                ps.push(proc(30_000 + s as u32, "busy", s));
            }
            if s >= 1000 && s % 100 == 85 && s < 1300 {
                ps.push(proc(40_000 + s as u32, "busy", s));
            }
            if s >= 1000 && s % 100 == 0 {
                ps.push(proc(20_000 + s as u32, "katago", s));
            }
            h.observe(t(s), ps);
        }
        let names: Vec<String> = (0..10).map(|i| format!("bundle-{i}")).collect();
        let members: Vec<Member<'_>> = names
            .iter()
            .enumerate()
            .map(|(i, n)| Member {
                name: n.as_bytes(),
                born: t(1000 + i as u64 * 100 + 2),
            })
            .collect();
        let e = created_at_launch(&members, &h).expect("launch evidence");
        assert_eq!(e.name, "katago");
        assert_eq!((e.agree, e.total), (10, 10));
    }

    #[test]
    fn launches_seen_only_around_the_births_name_nobody() {
        // The history begins with the births: `busy` starts every second, and nothing says
        // whether it did so before them too.
        let mut h = ProcessHistory::new(2000);
        for s in 1000..1012u64 {
            h.observe(t(s), [proc(10_000 + s as u32, "busy", s)]);
        }
        let names: Vec<String> = (0..10).map(|i| format!("bundle-{i}")).collect();
        let members: Vec<Member<'_>> = names
            .iter()
            .enumerate()
            .map(|(i, n)| Member {
                name: n.as_bytes(),
                born: t(1001 + i as u64),
            })
            .collect();
        assert_eq!(created_at_launch(&members, &h), None);
        // Samples that looked 17 s before: `busy` started then too, so it is still nobody.
        let mut h2 = ProcessHistory::new(2000);
        for s in 980..1012u64 {
            h2.observe(t(s), [proc(10_000 + s as u32, "busy", s)]);
        }
        assert!(h2.sampled_near(secs(t(984))));
        assert_eq!(created_at_launch(&members, &h2), None);
    }

    #[test]
    fn a_bundle_id_in_the_path_names_the_app() {
        let paths: [&[u8]; 4] = [
            b"com.example.Editor/org.sparkle-project.Sparkle/a",
            b"com.example.Editor/org.sparkle-project.Sparkle/b",
            b"com.example.Editor/x/c",
            b"tmp.XYZ/d",
        ];
        let e = in_path(&paths).expect("in path");
        assert_eq!(
            (e.name.as_str(), e.agree, e.total),
            ("com.example.Editor", 3, 4)
        );
        // Two members are too few to name anyone.
        assert_eq!(in_path(&paths[..2]).map(|e| e.agree), None);
        assert!(!is_bundle_id(b"report.2026.12"));
        assert!(!is_bundle_id(b"a.b"));
        assert!(is_bundle_id(b"com.apple.gpuarchiver"));
    }

    #[test]
    fn the_history_stays_within_its_cap_and_keeps_live_processes() {
        let mut h = ProcessHistory::new(1000);
        h.observe(t(0), [proc(1, "launchd", 0)]);
        for s in 1..5000u64 {
            h.observe(t(s), [proc(1, "launchd", 0), proc(s as u32 + 1, "job", s)]);
        }
        assert!(h.len() <= 1000, "{} records", h.len());
        assert!(
            h.alive_at(1, t(4999)).is_some(),
            "the live process was evicted"
        );
    }
}
