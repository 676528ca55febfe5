//! What one computation of the figures read from the process and mount tables ([`GuardInputs`]).
//!
//! With the inventory unchanged and no item crossing the threshold, only these can change the
//! figures (an owner that exits, an app that starts, a file opened under a root, a mount). The
//! monitor used to recompute the figures every 200 times their cost to follow them: at 700,000
//! items a 1.5 s pass every 5 minutes, 0.5% of a core at rest. It now takes a fresh snapshot of the
//! process table (milliseconds) and asks it the same questions ([`GuardInputs::still_hold`]); the
//! pass runs only when an answer changed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::process::{OpenFile, ProcessInfo, ProcessProbe};

/// Open files kept per root: past this many the inputs never hold (the pass runs as before).
pub(super) const OPEN_LIMIT: usize = 4_096;

/// The questions one computation asked, with their answers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GuardInputs {
    /// Each pid asked for (an owner in an item's name), and the process found.
    pids: BTreeMap<u32, Option<ProcessInfo>>,
    /// Each executable name asked for, and whether it ran.
    names: BTreeMap<String, bool>,
    /// Each app (bundle id or executable name) asked for, and whether it ran.
    apps: BTreeMap<String, bool>,
    /// Per root (in order), the open files at or under it; `None` past [`OPEN_LIMIT`].
    open: Vec<Option<Vec<OpenFile>>>,
    /// The mount points at or under the roots.
    mounts: Vec<PathBuf>,
}

impl GuardInputs {
    /// The open files and mount points under `roots`, read from `probe` and the mount table; the
    /// questions are added by [`Recording`].
    fn tables(probe: &dyn ProcessProbe, roots: &[PathBuf]) -> GuardInputs {
        let open = roots
            .iter()
            .map(|r| {
                let files = probe.open_files_under(r, OPEN_LIMIT + 1);
                (files.len() <= OPEN_LIMIT).then_some(files)
            })
            .collect();
        let mut mounts: Vec<PathBuf> = crate::platform::mount_points()
            .into_iter()
            .filter(|m| roots.iter().any(|r| m.starts_with(r)))
            .collect();
        mounts.sort();
        GuardInputs {
            open,
            mounts,
            ..GuardInputs::default()
        }
    }

    /// True when `probe` (refreshed here) answers every question as it was answered, and the open
    /// files and mount points under `roots` are the same: a computation now would give the same
    /// figures. Blocking: one snapshot of the process table and one read of the mount table.
    pub fn still_hold(&self, probe: &dyn ProcessProbe, roots: &[PathBuf]) -> bool {
        probe.refresh();
        let now = GuardInputs::tables(probe, roots);
        now.open.iter().all(Option::is_some)
            && now.open == self.open
            && now.mounts == self.mounts
            && self.pids.iter().all(|(&pid, p)| probe.process(pid) == *p)
            && self.names.iter().all(|(n, &r)| probe.is_running(n) == r)
            && self.apps.iter().all(|(a, &r)| probe.app_running(a) == r)
    }
}

/// A probe that passes every question to `inner` and keeps the question and its answer.
pub(super) struct Recording<'a> {
    inner: &'a dyn ProcessProbe,
    seen: Mutex<GuardInputs>,
}

impl<'a> Recording<'a> {
    pub(super) fn new(inner: &'a dyn ProcessProbe) -> Recording<'a> {
        Recording {
            inner,
            seen: Mutex::new(GuardInputs::default()),
        }
    }

    fn seen(&self) -> std::sync::MutexGuard<'_, GuardInputs> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The questions asked so far, with the open files and mount points under `roots`.
    pub(super) fn finish(self, roots: &[PathBuf]) -> GuardInputs {
        let tables = GuardInputs::tables(self.inner, roots);
        let seen = self.seen.into_inner().unwrap_or_else(|e| e.into_inner());
        GuardInputs {
            open: tables.open,
            mounts: tables.mounts,
            ..seen
        }
    }
}

impl ProcessProbe for Recording<'_> {
    fn process(&self, pid: u32) -> Option<ProcessInfo> {
        let p = self.inner.process(pid);
        self.seen().pids.insert(pid, p.clone());
        p
    }
    fn is_running(&self, name: &str) -> bool {
        let r = self.inner.is_running(name);
        self.seen().names.insert(name.to_owned(), r);
        r
    }
    fn app_running(&self, app: &str) -> bool {
        let r = self.inner.app_running(app);
        self.seen().apps.insert(app.to_owned(), r);
        r
    }
    fn application_dirs(&self) -> Vec<std::path::PathBuf> {
        self.inner.application_dirs()
    }
    // Open files are not recorded per question: every answer is read from the open files under
    // the roots, which the inputs keep whole.
    fn open_file_under(&self, dir: &Path) -> Option<OpenFile> {
        self.inner.open_file_under(dir)
    }
    fn open_files_under(&self, dir: &Path, limit: usize) -> Vec<OpenFile> {
        self.inner.open_files_under(dir, limit)
    }
    fn scope_to(&self, dirs: &[PathBuf]) {
        self.inner.scope_to(dirs);
    }
    fn refresh(&self) {
        self.inner.refresh();
    }
    fn refresh_open_files(&self) {
        self.inner.refresh_open_files();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;
    use std::time::{Duration, SystemTime};

    /// A process table in memory: processes by pid, running names, open files.
    #[derive(Default)]
    struct Table {
        procs: Mutex<BTreeMap<u32, ProcessInfo>>,
        open: Mutex<Vec<OpenFile>>,
    }

    impl Table {
        fn start(&self, pid: u32, name: &str) {
            let info = ProcessInfo {
                pid,
                name: name.to_owned(),
                start_time: SystemTime::UNIX_EPOCH
                    + Duration::from_secs(1_700_000_000 + pid as u64),
            };
            self.procs.lock().unwrap().insert(pid, info);
        }
        fn open(&self, pid: u32, path: &Path) {
            let f = OpenFile {
                pid,
                path: path.to_path_buf(),
            };
            self.open.lock().unwrap().push(f);
        }
    }

    impl ProcessProbe for Table {
        fn process(&self, pid: u32) -> Option<ProcessInfo> {
            self.procs.lock().unwrap().get(&pid).cloned()
        }
        fn is_running(&self, name: &str) -> bool {
            let procs = self.procs.lock().unwrap();
            let names: BTreeSet<&str> = procs.values().map(|p| p.name.as_str()).collect();
            names.contains(name)
        }
        fn open_file_under(&self, dir: &Path) -> Option<OpenFile> {
            self.open_files_under(dir, 1).into_iter().next()
        }
        fn open_files_under(&self, dir: &Path, limit: usize) -> Vec<OpenFile> {
            let mut v: Vec<OpenFile> = self
                .open
                .lock()
                .unwrap()
                .iter()
                .filter(|f| f.path.starts_with(dir))
                .cloned()
                .collect();
            v.sort_by(|a, b| a.path.cmp(&b.path));
            v.truncate(limit);
            v
        }
    }

    /// The questions a computation would ask: an owner pid from an item's name, an app's name.
    fn ask(probe: &dyn ProcessProbe) {
        let _owner = probe.process(4242);
        let _app = probe.app_running("katago");
    }

    #[test]
    fn the_inputs_hold_until_an_answer_or_an_open_file_under_a_root_changes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("T");
        let roots = vec![root.clone()];
        let table = Table::default();
        table.start(4242, "katago");
        table.start(7, "launchd");
        table.open(7, Path::new("/elsewhere/log"));
        let rec = Recording::new(&table);
        ask(&rec);
        let inputs = rec.finish(&roots);
        assert_eq!(inputs.pids.len(), 1);
        assert_eq!(inputs.apps.get("katago"), Some(&true));
        assert!(inputs.still_hold(&table, &roots));

        // Processes nobody asked about come and go; a file opens outside the roots.
        table.start(8, "cc1");
        table.open(8, Path::new("/elsewhere/obj.o"));
        assert!(inputs.still_hold(&table, &roots), "unrelated changes");

        // A file opened under a root.
        table.open(8, &root.join("model_4242_1_1.mlmodelc/weights"));
        assert!(
            !inputs.still_hold(&table, &roots),
            "an open file under the root"
        );
        table.open.lock().unwrap().pop();
        assert!(inputs.still_hold(&table, &roots));

        // The owner exits.
        table.procs.lock().unwrap().remove(&4242);
        assert!(!inputs.still_hold(&table, &roots), "the owner exited");
        // ... and its pid is reused by another process: still not the same answer.
        table.start(4242, "katago");
        table
            .procs
            .lock()
            .unwrap()
            .get_mut(&4242)
            .unwrap()
            .start_time += Duration::from_secs(9);
        assert!(!inputs.still_hold(&table, &roots), "the pid was reused");
    }

    #[test]
    fn too_many_open_files_under_a_root_never_hold() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let table = Table::default();
        for n in 0..=OPEN_LIMIT {
            table.open(1, &root.join(format!("f{n}")));
        }
        let inputs = Recording::new(&table).finish(std::slice::from_ref(&root));
        assert_eq!(inputs.open, vec![None]);
        assert!(!inputs.still_hold(&table, &[root]));
    }
}
