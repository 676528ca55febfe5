//! Is a process alive, when did it start, which files are open: `sysinfo` and the platform facade
//! behind one trait, so reclaim can be tested with a fake.
//!
//! [`SystemProbe`] is snapshot-based: [`ProcessProbe::refresh`] gathers every process (pid, name,
//! start time) and every open or mapped file once; the queries then look them up without touching
//! the OS, so a plan or an execute over 100k items costs one snapshot, not one `/proc` scan per item.
//! Given the dirs it will be asked about ([`SystemProbe::under`], [`ProcessProbe::scope_to`]), it
//! keeps only the open files in them, filtered while reading; a question about a dir outside them
//! re-reads the open files with that dir added, so a narrow probe answers as a wide one would.
//! Whatever other processes hold, the snapshot stays within the bounds of
//! [`crate::platform::open_files`].
//!
//! Processes of other users whose open files cannot be read are skipped (counted in
//! [`SystemProbe::skipped_pids`]): an item held open only by another user's process is not seen as
//! in use. Their liveness and names are still seen (sysinfo lists every pid).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::RwLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sysinfo::{ProcessRefreshKind, ProcessesToUpdate, System, UpdateKind};

/// What reclaim needs to know about a live process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessInfo {
    /// Process id.
    pub pid: u32,
    /// Executable name (as `ps -o comm` shows it).
    pub name: String,
    /// When the process started. Whole seconds from `sysinfo` (rounded down), so it may read up to
    /// one second early.
    pub start_time: SystemTime,
}

/// A file some process holds open (or has mapped, or uses as its working dir).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenFile {
    /// The process holding it.
    pub pid: u32,
    /// Canonical path of the file; or, for a process holding more than the guard keeps exactly
    /// (see [`crate::platform::OpenFiles::coarse`]), a dir at or under which it holds something.
    pub path: PathBuf,
}

/// Liveness and open-file queries. [`SystemProbe`] asks the OS; tests use fakes.
///
/// `Sync` so reclaim can query it from worker threads.
pub trait ProcessProbe: Sync {
    /// The live process with this pid, or `None` when none runs.
    fn process(&self, pid: u32) -> Option<ProcessInfo>;
    /// True when a process with this executable name runs.
    fn is_running(&self, name: &str) -> bool;
    /// True when a process of the app `app` runs: `app` is a bundle id (`com.example.App`) or an
    /// executable name (`python3`), as a cache dir names its app. The default asks
    /// [`ProcessProbe::is_running`]; [`SystemProbe`] also matches, on macOS, the bundle identifier
    /// of each running executable's enclosing bundle (case-insensitively).
    fn app_running(&self, app: &str) -> bool {
        self.is_running(app)
    }
    /// The dirs installed apps live in (`/Applications`, `~/Applications` on macOS; none
    /// elsewhere), where a staged update's app is compared with the installed one. Fakes return
    /// a temp tree.
    fn application_dirs(&self) -> Vec<PathBuf> {
        crate::platform::application_dirs()
    }
    /// The first open (or mapped) file under `dir` (canonical path), `dir` itself included, if any.
    fn open_file_under(&self, dir: &Path) -> Option<OpenFile>;
    /// Up to `limit` open (or mapped, or working-dir) files at `dir` or under it, in path order.
    /// The default asks [`ProcessProbe::open_file_under`] for the first one only.
    fn open_files_under(&self, dir: &Path, limit: usize) -> Vec<OpenFile> {
        self.open_file_under(dir).into_iter().take(limit).collect()
    }
    /// Tells the probe that the open-file questions until the next call will be about `dirs` (and
    /// what lies under them): a probe may then read only the open files there. Not a filter on
    /// answers: a question about another dir is still answered truly (by [`SystemProbe`], with a
    /// re-read). Takes effect at the next refresh. The default does nothing.
    fn scope_to(&self, dirs: &[PathBuf]) {
        let _ = dirs;
    }
    /// Takes a fresh snapshot of processes and open files (reclaim calls it once at the start of
    /// `plan` and of `execute`). Fakes keep the default, which does nothing.
    fn refresh(&self) {}
    /// Re-reads only the open and mapped files, keeping the process snapshot (execute calls it
    /// before each batch, so a file opened during a long reclaim keeps its item). The default
    /// calls [`ProcessProbe::refresh`].
    fn refresh_open_files(&self) {
        self.refresh();
    }
}

/// Open files indexed by path: a sorted map with a prefix range query, and the coarse dirs of
/// processes that held more than the guard keeps exactly (see
/// [`crate::platform::OpenFiles::coarse`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenFileIndex {
    by_path: BTreeMap<PathBuf, u32>,
    /// Dirs at or under which some process holds something not listed in `by_path`.
    coarse: BTreeMap<PathBuf, u32>,
}

impl OpenFileIndex {
    /// Builds the index from `(pid, path)` pairs; for a path open in several processes the lowest
    /// pid is kept.
    pub fn new(files: impl IntoIterator<Item = (u32, PathBuf)>) -> OpenFileIndex {
        OpenFileIndex {
            by_path: lowest_pid_by_path(files),
            coarse: BTreeMap::new(),
        }
    }

    /// The index of what [`crate::platform::open_files`] gathered: its exact paths and its coarse
    /// dirs.
    pub fn of(files: crate::platform::OpenFiles) -> OpenFileIndex {
        OpenFileIndex {
            by_path: lowest_pid_by_path(files.files),
            coarse: lowest_pid_by_path(files.coarse),
        }
    }

    /// The first open file at `dir` or under it, in path order; else a coarse dir at, under or
    /// above `dir` (something in it may be open). `Path` orders by components, so every
    /// descendant of `dir` sorts right after it (`dir/x` before `dir-x`): one range lookup.
    pub fn first_under(&self, dir: &Path) -> Option<OpenFile> {
        self.all_under(dir, 1).into_iter().next()
    }

    /// Up to `limit` open files at `dir` or under it, in path order (one range walk); then the
    /// coarse dirs under `dir`, then those above it (nearest first).
    pub fn all_under(&self, dir: &Path, limit: usize) -> Vec<OpenFile> {
        let found = |(p, pid): (&PathBuf, &u32)| OpenFile {
            pid: *pid,
            path: p.clone(),
        };
        let under = |m: &BTreeMap<PathBuf, u32>| {
            m.range::<Path, _>((std::ops::Bound::Included(dir), std::ops::Bound::Unbounded))
                .take_while(|(p, _)| p.starts_with(dir))
                .map(found)
                .collect::<Vec<_>>()
        };
        let mut out: Vec<OpenFile> = under(&self.by_path).into_iter().take(limit).collect();
        if out.len() < limit && !self.coarse.is_empty() {
            out.extend(under(&self.coarse).into_iter().take(limit - out.len()));
            let above = dir
                .ancestors()
                .skip(1)
                .filter_map(|a| self.coarse.get_key_value(a).map(found));
            out.extend(above.take(limit - out.len()));
        }
        out
    }

    /// Number of distinct open paths (coarse dirs included).
    pub fn len(&self) -> usize {
        self.by_path.len() + self.coarse.len()
    }

    /// True when no open file was seen.
    pub fn is_empty(&self) -> bool {
        self.by_path.is_empty() && self.coarse.is_empty()
    }
}

fn lowest_pid_by_path(files: impl IntoIterator<Item = (u32, PathBuf)>) -> BTreeMap<PathBuf, u32> {
    let mut by_path = BTreeMap::new();
    for (pid, path) in files {
        by_path
            .entry(path)
            .and_modify(|p: &mut u32| *p = (*p).min(pid))
            .or_insert(pid);
    }
    by_path
}

/// Which open files a snapshot keeps: all, or those at or under some dirs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
enum Scope {
    #[default]
    All,
    Under(Vec<PathBuf>),
}

impl Scope {
    /// The dirs, each as given and canonical (the kernel names files by their canonical path).
    fn under(dirs: impl IntoIterator<Item = PathBuf>) -> Scope {
        let mut all = Vec::new();
        for d in dirs {
            if let Ok(c) = std::fs::canonicalize(&d) {
                all.push(c);
            }
            all.push(d);
        }
        all.retain(|d| d.is_absolute());
        all.sort();
        all.dedup();
        Scope::Under(all)
    }

    /// True when every open file at or under `dir` is in the scope.
    fn covers(&self, dir: &Path) -> bool {
        match self {
            Scope::All => true,
            Scope::Under(dirs) => dirs.iter().any(|d| dir.starts_with(d)),
        }
    }

    /// This scope with `dir` added.
    fn with(&self, dir: &Path) -> Scope {
        match self {
            Scope::All => Scope::All,
            Scope::Under(dirs) => Scope::under(dirs.iter().cloned().chain([dir.to_path_buf()])),
        }
    }

    fn read(&self) -> crate::platform::OpenFiles {
        match self {
            Scope::All => crate::platform::open_files(),
            Scope::Under(dirs) => crate::platform::open_files_under(dirs),
        }
    }
}

#[derive(Debug, Default)]
struct Snapshot {
    taken: bool,
    processes: HashMap<u32, ProcessInfo>,
    names: HashSet<String>,
    /// Bundle identifiers of the running executables' enclosing bundles, lowercased (macOS).
    bundles: HashSet<String>,
    open: OpenFileIndex,
    /// What `open` holds the open files of.
    open_scope: Scope,
    skipped_pids: usize,
    bounded_pids: usize,
}

/// The real probe: `sysinfo` for processes, `/proc` (Linux) or `libproc` (macOS) for open files,
/// gathered into one snapshot per [`ProcessProbe::refresh`]: of every open file
/// ([`SystemProbe::new`]), or of those under the dirs it is told of ([`SystemProbe::under`],
/// [`ProcessProbe::scope_to`]), a dir outside them asked about being added (and the open files
/// re-read) when asked.
#[derive(Debug, Default)]
pub struct SystemProbe {
    snapshot: RwLock<Snapshot>,
    /// The open files the next snapshot keeps.
    wanted: RwLock<Scope>,
}

impl SystemProbe {
    /// A probe with no snapshot yet: the first query (or [`ProcessProbe::refresh`]) takes one.
    pub fn new() -> SystemProbe {
        SystemProbe::default()
    }

    /// A probe whose snapshots keep only the open files at or under `dirs` (absolute; their
    /// canonical forms are added): what a scan or a reclaim of those roots asks about. No snapshot
    /// is taken yet.
    pub fn under(dirs: impl IntoIterator<Item = PathBuf>) -> SystemProbe {
        SystemProbe {
            snapshot: RwLock::default(),
            wanted: RwLock::new(Scope::under(dirs)),
        }
    }

    /// A probe with a snapshot taken now.
    pub fn snapshot() -> SystemProbe {
        let probe = SystemProbe::new();
        probe.refresh();
        probe
    }

    /// Processes whose open files could not be read in the current snapshot (other users').
    pub fn skipped_pids(&self) -> usize {
        self.with(|s| s.skipped_pids)
    }

    /// Number of distinct open paths in the current snapshot.
    pub fn open_paths(&self) -> usize {
        self.with(|s| s.open.len())
    }

    /// Processes that held more than the guard keeps exactly, in the current snapshot (their
    /// other files are kept as the dirs they lie in).
    pub fn bounded_pids(&self) -> usize {
        self.with(|s| s.bounded_pids)
    }

    fn wanted(&self) -> Scope {
        self.wanted
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// `f` of the snapshot, once it holds every open file at or under `dir`: a dir outside the
    /// snapshot's scope is added to it and the open files are read again.
    fn with_under<T>(&self, dir: &Path, f: impl FnOnce(&Snapshot) -> T) -> T {
        let covered = self.with(|s| s.open_scope.covers(dir));
        if !covered {
            let mut s = self.snapshot.write().unwrap_or_else(|e| e.into_inner());
            if !s.open_scope.covers(dir) {
                let scope = {
                    let mut wanted = self.wanted.write().unwrap_or_else(|e| e.into_inner());
                    *wanted = wanted.with(dir);
                    wanted.clone()
                };
                let files = scope.read();
                s.skipped_pids = files.skipped_pids;
                s.bounded_pids = files.bounded_pids;
                s.open = OpenFileIndex::of(files);
                s.open_scope = scope;
            }
        }
        self.with(f)
    }

    fn with<T>(&self, f: impl FnOnce(&Snapshot) -> T) -> T {
        {
            let s = self.snapshot.read().unwrap_or_else(|e| e.into_inner());
            if s.taken {
                return f(&s);
            }
        }
        self.refresh();
        let s = self.snapshot.read().unwrap_or_else(|e| e.into_inner());
        f(&s)
    }
}

fn take_snapshot(scope: Scope) -> Snapshot {
    let mut processes = HashMap::new();
    let mut names = HashSet::new();
    let mut bundles = HashSet::new();
    // One Info.plist read per bundle dir, however many processes run from it.
    let mut bundle_of_dir: HashMap<PathBuf, Option<String>> = HashMap::new();
    if let Ok(mut sys) = System::new() {
        sys.refresh_processes_specifics(
            ProcessesToUpdate::All,
            true,
            ProcessRefreshKind::nothing().with_exe(UpdateKind::OnlyIfNotSet),
        );
        for (pid, p) in sys.processes() {
            // Threads show up as processes on Linux; they share the open files of their process.
            if p.thread_kind().is_some() {
                continue;
            }
            let name = p.name().to_string_lossy().into_owned();
            if let Some(exe) = p.exe() {
                if let Some(exe_name) = exe.file_name() {
                    names.insert(exe_name.to_string_lossy().into_owned());
                }
                if let Some(dir) = exe.parent() {
                    let id = bundle_of_dir
                        .entry(dir.to_path_buf())
                        .or_insert_with(|| crate::platform::bundle_id_of_exe(exe));
                    if let Some(id) = id {
                        bundles.insert(id.to_lowercase());
                    }
                }
            }
            names.insert(name.clone());
            let info = ProcessInfo {
                pid: pid.as_u32(),
                name,
                start_time: UNIX_EPOCH + Duration::from_secs(p.start_time()),
            };
            processes.insert(pid.as_u32(), info);
        }
    }
    let files = scope.read();
    Snapshot {
        taken: true,
        processes,
        names,
        bundles,
        skipped_pids: files.skipped_pids,
        bounded_pids: files.bounded_pids,
        open: OpenFileIndex::of(files),
        open_scope: scope,
    }
}

/// Linux truncates `comm` to 15 bytes; a name that long may be the start of a longer one.
const COMM_LEN: usize = 15;

impl ProcessProbe for SystemProbe {
    fn process(&self, pid: u32) -> Option<ProcessInfo> {
        self.with(|s| s.processes.get(&pid).cloned())
    }

    fn is_running(&self, name: &str) -> bool {
        self.with(|s| {
            s.names.contains(name)
                || (name.len() > COMM_LEN
                    && name.is_char_boundary(COMM_LEN)
                    && s.names.contains(&name[..COMM_LEN]))
        })
    }

    fn app_running(&self, app: &str) -> bool {
        self.is_running(app) || self.with(|s| s.bundles.contains(&app.to_lowercase()))
    }

    fn open_file_under(&self, dir: &Path) -> Option<OpenFile> {
        self.with_under(dir, |s| s.open.first_under(dir))
    }

    fn open_files_under(&self, dir: &Path, limit: usize) -> Vec<OpenFile> {
        self.with_under(dir, |s| s.open.all_under(dir, limit))
    }

    fn scope_to(&self, dirs: &[PathBuf]) {
        *self.wanted.write().unwrap_or_else(|e| e.into_inner()) =
            Scope::under(dirs.iter().cloned());
    }

    fn refresh(&self) {
        let fresh = take_snapshot(self.wanted());
        let mut s = self.snapshot.write().unwrap_or_else(|e| e.into_inner());
        *s = fresh;
    }

    fn refresh_open_files(&self) {
        let taken = self
            .snapshot
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .taken;
        if !taken {
            self.refresh();
            return;
        }
        let scope = self.wanted();
        let files = scope.read();
        let mut s = self.snapshot.write().unwrap_or_else(|e| e.into_inner());
        s.skipped_pids = files.skipped_pids;
        s.bounded_pids = files.bounded_pids;
        s.open = OpenFileIndex::of(files);
        s.open_scope = scope;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn prefix_query_finds_descendants_not_siblings() {
        let idx = OpenFileIndex::new([
            (7, PathBuf::from("/r/item-x/f")),
            (5, PathBuf::from("/r/item/a/b")),
            (3, PathBuf::from("/r/item/a/b")),
            (9, PathBuf::from("/r/itemz")),
        ]);
        assert_eq!(idx.len(), 3);
        let hit = idx.first_under(Path::new("/r/item")).unwrap();
        assert_eq!(hit.pid, 3);
        assert_eq!(hit.path, PathBuf::from("/r/item/a/b"));
        assert!(idx.first_under(Path::new("/r/ite")).is_none());
        assert!(idx.first_under(Path::new("/r/item/a/c")).is_none());
        assert_eq!(idx.first_under(Path::new("/r/itemz")).unwrap().pid, 9);
        assert_eq!(
            idx.first_under(Path::new("/r")).unwrap().path,
            PathBuf::from("/r/item/a/b")
        );
    }

    #[test]
    fn system_probe_sees_own_process_and_open_file() {
        let dir = tempfile::tempdir().unwrap();
        let canon = std::fs::canonicalize(dir.path()).unwrap();
        let path = canon.join("held");
        let _f = std::fs::File::create(&path).unwrap();
        let probe = SystemProbe::snapshot();
        let me = probe.process(std::process::id()).unwrap();
        assert!(me.start_time <= SystemTime::now());
        assert!(
            probe.is_running(&me.name),
            "own name {:?} not running",
            me.name
        );
        let open = probe.open_file_under(&canon).unwrap();
        assert_eq!(open.path, path);
        assert_eq!(open.pid, std::process::id());
    }

    #[test]
    fn a_coarse_dir_answers_for_dirs_under_and_above_it_after_exact_files() {
        let idx = OpenFileIndex::of(crate::platform::OpenFiles {
            files: vec![(4, PathBuf::from("/r/a/x/f"))],
            coarse: vec![(7, PathBuf::from("/r/b/deep")), (8, PathBuf::from("/s"))],
            ..Default::default()
        });
        let at = |d: &str| idx.first_under(Path::new(d)).map(|o| (o.pid, o.path));
        assert_eq!(at("/r/a"), Some((4, PathBuf::from("/r/a/x/f"))));
        assert_eq!(at("/r/b"), Some((7, PathBuf::from("/r/b/deep"))));
        assert_eq!(at("/r/b/deep/item"), Some((7, PathBuf::from("/r/b/deep"))));
        assert_eq!(at("/s/t/u"), Some((8, PathBuf::from("/s"))));
        assert_eq!(at("/r/c"), None);
        assert_eq!(at("/r/bb"), None);
        let all = idx.all_under(Path::new("/r"), 10);
        assert_eq!(all.len(), 2, "{all:?}");
    }

    #[test]
    fn a_scoped_probe_asked_about_another_dir_reads_it_too() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (a, b) = (
            std::fs::canonicalize(a.path()).unwrap(),
            std::fs::canonicalize(b.path()).unwrap(),
        );
        let held = b.join("held");
        let _f = std::fs::File::create(&held).unwrap();
        let probe = SystemProbe::under([a.clone()]);
        probe.refresh();
        assert!(probe.open_file_under(&a).is_none());
        let open = probe.open_file_under(&b).unwrap();
        assert_eq!((open.pid, open.path), (std::process::id(), held.clone()));
        // Narrowed again by a plan of `a` alone: `b` is still answered truly.
        probe.scope_to(std::slice::from_ref(&a));
        probe.refresh();
        assert_eq!(probe.open_file_under(&b).unwrap().path, held);
    }
}
