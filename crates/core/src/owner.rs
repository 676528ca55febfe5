//! The owner rule (reclaim safety rule 3 in `docs/architecture.md`), in one place: reclaim's plan
//! and execute and the monitor's orphan figure all ask [`verdict`] (or [`item_verdict`]).
//!
//! An item whose name yields a pid (the rule has `owner.pid_in_name` and its regex captured `pid`)
//! is decided by that pid alone: alive and started at or before the item's birth (with
//! [`START_TIME_SLACK`]) keeps it; dead, or started after (the pid was reused), makes it eligible.
//! The rule's `owner.processes` guard applies only to items whose name yields no pid: while any of
//! them runs, such an item is kept. So a host that keeps KataGo engines running still gets the
//! bundles of engines that exited back.
//!
//! The app named in an item's path owns it too ([`owner_app`]: the rule's `bundle` capture, or a
//! `container-temp` root's bundle id, unless the rule sets `owner.app_in_path = false`): an item
//! whose name yields no pid is kept while a process of that app runs
//! ([`ProcessProbe::app_running`]: on macOS the bundle identifier of a running executable's
//! enclosing bundle, everywhere its executable name). So no app-owned cache (an e5rt plan cache,
//! a Metal shader cache, a pending update) goes while its app runs, even when the producer is
//! named.
//!
//! Open or mapped files are a separate check (rule 3's last sentence), made by reclaim after this
//! one.

use std::path::Path;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::catalogue::Rule;
use crate::inventory::{Captures, Item};
use crate::process::ProcessProbe;

/// Slack when comparing a process start time (whole seconds from sysinfo, rounded down) with an
/// item's birth: an owner that started up to this long after the birth still counts as the owner
/// (keeps the item).
pub const START_TIME_SLACK: Duration = Duration::from_secs(2);

/// What the owner rule says about one item, against one process snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnerVerdict {
    /// The pid in the name is alive and started at or before the item's birth (within
    /// [`START_TIME_SLACK`]), or the birth is unknown: keep.
    PidAlive {
        /// The owner pid.
        pid: u32,
    },
    /// No process has the pid in the name: eligible (an orphan).
    PidDead {
        /// The owner pid.
        pid: u32,
    },
    /// A process has the pid but started after the item's birth (plus [`START_TIME_SLACK`]): the pid
    /// was reused, so eligible (an orphan).
    PidReused {
        /// The owner pid.
        pid: u32,
        /// When the process now holding the pid started.
        started: SystemTime,
    },
    /// The name yields no pid: the app in its path ([`owner_app`]) and the rule's
    /// `owner.processes` decide. `running` is the owning app when it runs, else the first of the
    /// processes that runs (keep); `None` when none does (or there is none to ask about).
    NoPid {
        /// The running app or process that keeps the item, if any.
        running: Option<String>,
    },
}

impl OwnerVerdict {
    /// True for an orphan: the name's owner pid is dead or reused. An item whose name yields no
    /// pid is never an orphan (its owner is unknown), whether or not the processes guard holds.
    pub fn is_orphan(&self) -> bool {
        matches!(
            self,
            OwnerVerdict::PidDead { .. } | OwnerVerdict::PidReused { .. }
        )
    }
}

/// The owner pid of an item of `rule` with `captures`: the `pid` capture when the rule has
/// `owner.pid_in_name`, else `None` (a pid captured by a rule without it is not an owner).
pub fn owner_pid(rule: &Rule, captures: &Captures) -> Option<u32> {
    captures.pid.filter(|_| rule.owner.pid_in_name)
}

/// The app that owns an item of `rule` with `captures`: the `bundle` capture (set from the rule's
/// regexes, or the container's bundle id in a `container-temp` root) unless the rule has
/// `owner.app_in_path = false`.
pub fn owner_app<'c>(rule: &Rule, captures: &'c Captures) -> Option<&'c str> {
    captures
        .bundle
        .as_deref()
        .filter(|b| rule.owner.app_in_path && !b.is_empty())
}

/// The birth the owner's start time is compared with: the name's `ts` when captured, else the
/// scan's birth time of the item (`statx`/`st_birthtime`, or its oldest mtime).
pub fn birth_of(item: &Item) -> Option<SystemTime> {
    item.captures.ts.or(item.measure.birth_time)
}

/// The owner verdict for an item of `rule` whose owner pid (see [`owner_pid`]) is `pid`, whose
/// owning app (see [`owner_app`]) is `app` and whose birth (see [`birth_of`]) is `birth`, looked
/// up in `probe`'s snapshot.
///
/// With a pid, the pid alone decides (the app and the rule's processes are not consulted); an
/// unknown birth lets any live pid keep the item. Without one, the app keeps it while it runs,
/// else the first of `rule.owner.processes` that runs.
pub fn verdict(
    probe: &dyn ProcessProbe,
    rule: &Rule,
    pid: Option<u32>,
    app: Option<&str>,
    birth: Option<SystemTime>,
) -> OwnerVerdict {
    let Some(pid) = pid else {
        let running = app
            .filter(|a| probe.app_running(a))
            .map(str::to_owned)
            .or_else(|| {
                rule.owner
                    .processes
                    .iter()
                    .find(|n| probe.is_running(n))
                    .cloned()
            });
        return OwnerVerdict::NoPid { running };
    };
    match probe.process(pid) {
        None => OwnerVerdict::PidDead { pid },
        Some(p) if birth.is_some_and(|b| p.start_time > b + START_TIME_SLACK) => {
            OwnerVerdict::PidReused {
                pid,
                started: p.start_time,
            }
        }
        Some(_) => OwnerVerdict::PidAlive { pid },
    }
}

/// [`verdict`] for a scanned item of `rule`: its [`owner_pid`], [`owner_app`] and [`birth_of`].
pub fn item_verdict(probe: &dyn ProcessProbe, rule: &Rule, item: &Item) -> OwnerVerdict {
    verdict(
        probe,
        rule,
        owner_pid(rule, &item.captures),
        owner_app(rule, &item.captures),
        birth_of(item),
    )
}

/// For a rule with `owner.app_in_item`: the app keeping the item at `path`, if any. The item is
/// an app bundle (`Contents/MacOS/<exe>` inside it) or holds one (`<App>.app/Contents/MacOS/<exe>`);
/// while a process with one of those executable names (or `<App>`) runs, the item is kept. An
/// item in which no executable name can be read is kept too, its app unknown. Symlinks are never
/// followed. `None` when the rule does not ask, or no app of the item runs.
pub fn app_in_item_running(probe: &dyn ProcessProbe, rule: &Rule, path: &Path) -> Option<String> {
    if !rule.owner.app_in_item {
        return None;
    }
    let names = held_app_names(path);
    if names.is_empty() {
        return Some(UNKNOWN_HELD_APP.to_owned());
    }
    names.into_iter().find(|n| probe.is_running(n))
}

/// The name [`app_in_item_running`] gives an item whose app cannot be read.
pub const UNKNOWN_HELD_APP: &str = "the unknown app it holds (no Contents/MacOS executable found)";

/// Executable names an app bundle at `path` (or one `<App>.app` directly inside it) holds.
fn held_app_names(path: &Path) -> Vec<String> {
    let real_dir = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir());
    let exes = |bundle: &Path| -> Vec<String> {
        let macos = bundle.join("Contents/MacOS");
        if !real_dir(&bundle.join("Contents")) || !real_dir(&macos) {
            return Vec::new();
        }
        std::fs::read_dir(&macos)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect()
    };
    if !real_dir(path) {
        return Vec::new();
    }
    let mut out = exes(path);
    for e in std::fs::read_dir(path).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(app) = name.strip_suffix(".app") {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                out.push(app.to_owned());
                out.extend(exes(&e.path()));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Which owner check applies to an item, without looking at processes (for `explain`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "check", rename_all = "kebab-case")]
pub enum OwnerCheck {
    /// The pid in the name decides alone: alive and started before the item's birth keeps it;
    /// dead or reused lets it go. `ignored_processes` are the rule's processes, which do not apply.
    Pid {
        /// The owner pid.
        pid: u32,
        /// The rule's `owner.processes`, listed because they do not apply to this item.
        ignored_processes: Vec<String>,
    },
    /// The name yields no pid: the item is kept while any of `processes` runs.
    Processes {
        /// The rule's `owner.processes`.
        processes: Vec<String>,
    },
    /// The name yields no pid and its path names the app that owns it: kept while that app runs
    /// (or any of `processes`).
    App {
        /// The owning app: a bundle id or an executable name.
        app: String,
        /// The rule's `owner.processes`, which keep it too.
        processes: Vec<String>,
    },
    /// A code-sign clone: the newest clone of a running app is kept (the app found by the
    /// executable the clone holds); older clones go unless a file in them is open or mapped.
    NewestClone {
        /// The app whose clones these are (the bundle id in the path).
        app: String,
    },
    /// The item is an app bundle or holds one (`owner.app_in_item`): kept while a process of an
    /// executable it holds runs, and kept when none can be read.
    AppInItem {
        /// The rule's `owner.processes`, which keep it too.
        processes: Vec<String>,
    },
    /// Neither: no owner keeps the item (only open files and age do).
    None,
}

impl OwnerCheck {
    /// The check that applies to an item of `rule` with `captures` (for an item of a
    /// `container-temp` root, `captures.bundle` is the container's bundle id).
    pub fn of(rule: &Rule, captures: &Captures) -> OwnerCheck {
        match owner_pid(rule, captures) {
            Some(pid) => OwnerCheck::Pid {
                pid,
                ignored_processes: rule.owner.processes.clone(),
            },
            None if owner_app(rule, captures).is_some() => OwnerCheck::App {
                app: owner_app(rule, captures).unwrap_or_default().to_owned(),
                processes: rule.owner.processes.clone(),
            },
            None if rule.owner.app_in_item => OwnerCheck::AppInItem {
                processes: rule.owner.processes.clone(),
            },
            None if !rule.owner.processes.is_empty() => OwnerCheck::Processes {
                processes: rule.owner.processes.clone(),
            },
            None => OwnerCheck::None,
        }
    }
}

impl std::fmt::Display for OwnerCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OwnerCheck::Pid {
                pid,
                ignored_processes,
            } => {
                write!(
                    f,
                    "owner pid {pid} from its name decides alone: kept while it runs and started \
                     before the item was born; reclaimable once it exits or the pid is reused"
                )?;
                if !ignored_processes.is_empty() {
                    write!(
                        f,
                        " (the rule's processes {} do not apply to it)",
                        ignored_processes.join(", ")
                    )?;
                }
                Ok(())
            }
            OwnerCheck::Processes { processes } => write!(
                f,
                "no owner pid in its name: kept while any of {} runs",
                processes.join(", ")
            ),
            OwnerCheck::App { app, processes } => {
                write!(
                    f,
                    "owned by the app in its path, {app}: kept while a process of it runs (on \
                     macOS the bundle identifier of a running app, elsewhere the executable name)"
                )?;
                if !processes.is_empty() {
                    write!(f, " or any of {} runs", processes.join(", "))?;
                }
                Ok(())
            }
            OwnerCheck::NewestClone { app } => write!(
                f,
                "a clone of {app}: the newest clone is kept while the app runs; older ones go \
                 unless a file in them is open or mapped"
            ),
            OwnerCheck::AppInItem { processes } => {
                f.write_str(
                    "an app bundle (or holding one): kept while an executable it holds \
                     (Contents/MacOS) runs, and kept when none can be read",
                )?;
                if !processes.is_empty() {
                    write!(f, "; also while any of {} runs", processes.join(", "))?;
                }
                Ok(())
            }
            OwnerCheck::None => f.write_str("no owner check: only age and open files keep it"),
        }
    }
}
