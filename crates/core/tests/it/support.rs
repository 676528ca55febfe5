//! Shared helpers of the reclaim race tests: real trees in temp dirs, swaps with
//! `renameat2(RENAME_EXCHANGE)`, counting what survived outside the root.
#![allow(dead_code, clippy::unwrap_used)]

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use cachewatch_core::process::{OpenFile, OpenFileIndex, ProcessInfo, ProcessProbe, SystemProbe};
use cachewatch_core::reclaim::{plan, Policy, ReclaimPlan};
use cachewatch_core::scan::scan;
use cachewatch_core::{Catalogue, Root, RootKind};

/// The libtest name of test `f` in `module` (its `module_path!()`), as `--exact` wants it: the
/// path without the crate's name (`it::reclaim_race` runs its tests as `reclaim_race::f`).
pub fn test_path(module: &str, f: &str) -> String {
    let module = module.split_once("::").map_or("", |(_, m)| m);
    if module.is_empty() {
        f.to_owned()
    } else {
        format!("{module}::{f}")
    }
}

pub const HOUR: Duration = Duration::from_secs(3600);
/// Old enough for the gradio rule's one-day floor.
pub const TWO_DAYS: Duration = Duration::from_secs(2 * 86_400);

/// Exchanges the entries at `a` and `b` atomically (`renameat2(RENAME_EXCHANGE)`).
pub fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    rustix::fs::renameat_with(
        rustix::fs::CWD,
        a,
        rustix::fs::CWD,
        b,
        rustix::fs::RenameFlags::EXCHANGE,
    )
    .map_err(Into::into)
}

/// The real probe for processes (alive, start time, names), with the open files of this test
/// process only. Another process on the machine that reads a test's tree at the wrong moment (a
/// `du`, an indexer, a scan of `/tmp`) must not keep one of its items; the tests that hold a file
/// open hold it in this process.
#[derive(Default)]
pub struct OwnFilesProbe {
    system: SystemProbe,
    open: RwLock<OpenFileIndex>,
}

impl OwnFilesProbe {
    pub fn new() -> OwnFilesProbe {
        OwnFilesProbe::default()
    }
}

impl ProcessProbe for OwnFilesProbe {
    fn process(&self, pid: u32) -> Option<ProcessInfo> {
        self.system.process(pid)
    }
    fn is_running(&self, name: &str) -> bool {
        self.system.is_running(name)
    }
    fn open_file_under(&self, dir: &Path) -> Option<OpenFile> {
        self.open
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .first_under(dir)
    }
    fn refresh(&self) {
        self.system.refresh();
        self.refresh_open_files();
    }
    fn refresh_open_files(&self) {
        let me = std::process::id();
        let files = cachewatch_core::platform::open_files().files;
        let own = OpenFileIndex::new(files.into_iter().filter(|(pid, _)| *pid == me));
        *self.open.write().unwrap_or_else(|p| p.into_inner()) = own;
    }
}

/// The kept items of `plan`, one `path: reason` line each: the message of an assertion on what a
/// plan lists, so a failure says why an item is missing.
pub fn kept_reasons(plan: &ReclaimPlan) -> String {
    let mut out = format!("{} kept:", plan.kept.len());
    for k in &plan.kept {
        out.push_str(&format!("\n  {}: {}", k.path.display(), k.reason));
    }
    out
}

/// Sets the mtime of `p` (not following a symlink).
pub fn set_mtime(p: &Path, t: SystemTime) {
    fs::File::open(p).unwrap().set_modified(t).unwrap();
}

/// Makes `n` gradio items `dir/item-<i>` (a dir holding `data.bin` of 3000 bytes), two days old.
/// Returns their names.
pub fn make_items(dir: &Path, n: usize, now: SystemTime) -> Vec<String> {
    fs::create_dir_all(dir).unwrap();
    let old = now - TWO_DAYS;
    let names: Vec<String> = (0..n).map(|i| format!("item-{i:05}")).collect();
    for name in &names {
        let p = dir.join(name);
        fs::create_dir(&p).unwrap();
        fs::write(p.join("data.bin"), vec![1u8; 3000]).unwrap();
        set_mtime(&p.join("data.bin"), old);
        set_mtime(&p, old);
    }
    set_mtime(dir, old);
    names
}

/// Makes a same-named decoy `dir/<name>/data.bin` for each name (what an attacker points at).
pub fn make_decoys(dir: &Path, names: &[String]) {
    for name in names {
        fs::create_dir_all(dir.join(name)).unwrap();
        fs::write(dir.join(name).join("data.bin"), b"outside, must survive").unwrap();
    }
}

/// How many of the decoys `dir/<name>/data.bin` are gone.
pub fn decoys_lost(dir: &Path, names: &[String]) -> usize {
    names
        .iter()
        .filter(|n| !dir.join(n).join("data.bin").is_file())
        .count()
}

/// A temp root with `gradio/` in it and an outside dir, both in their own temp dirs.
pub struct Arena {
    _dirs: Vec<tempfile::TempDir>,
    /// The root (kind temp), canonical.
    pub root: Root,
    /// A dir outside the root, canonical.
    pub outside: PathBuf,
}

impl Arena {
    /// The root is `<tmp>/root` (so it can be exchanged with a sibling symlink), the outside dir
    /// `<tmp2>`.
    pub fn new() -> Arena {
        let r = tempfile::tempdir().unwrap();
        let o = tempfile::tempdir().unwrap();
        let root_path = fs::canonicalize(r.path()).unwrap().join("root");
        fs::create_dir(&root_path).unwrap();
        let root = Root::new(RootKind::Temp, root_path).unwrap();
        Arena {
            outside: fs::canonicalize(o.path()).unwrap(),
            root,
            _dirs: vec![r, o],
        }
    }

    /// A path beside the root (in the root's parent temp dir).
    pub fn beside_root(&self, name: &str) -> PathBuf {
        self.root.canonical.parent().unwrap().join(name)
    }

    /// `root/gradio`.
    pub fn gradio(&self) -> PathBuf {
        self.root.canonical.join("gradio")
    }

    /// Scans the root and plans every gradio item older than an hour.
    pub fn plan(&self, now: SystemTime) -> ReclaimPlan {
        plan_roots(std::slice::from_ref(&self.root), now)
    }

    /// As [`Arena::plan`], with `probe` instead of the real process table.
    pub fn plan_with(&self, now: SystemTime, probe: &dyn ProcessProbe) -> ReclaimPlan {
        let cat = Catalogue::builtin();
        let inv = scan(std::slice::from_ref(&self.root), &cat, now);
        plan(&inv, &cat, &gradio_policy(), probe, now)
    }
}

/// Scans `roots` and plans every item older than an hour (built-in catalogue, real probe).
pub fn plan_roots(roots: &[Root], now: SystemTime) -> ReclaimPlan {
    let cat = Catalogue::builtin();
    let inv = scan(roots, &cat, now);
    plan(&inv, &cat, &gradio_policy(), &OwnFilesProbe::new(), now)
}

/// Every gradio item older than an hour.
pub fn gradio_policy() -> Policy {
    Policy {
        older_than: HOUR,
        producers: vec!["gradio-temp".to_owned()],
        protected: vec![],
    }
}

/// A probe that sees no process and no open file (for tests about the filesystem only: a real
/// `/proc` read per batch would dominate their run time).
pub struct NoProcesses;

impl cachewatch_core::process::ProcessProbe for NoProcesses {
    fn process(&self, _pid: u32) -> Option<cachewatch_core::process::ProcessInfo> {
        None
    }
    fn is_running(&self, _name: &str) -> bool {
        false
    }
    fn open_file_under(&self, _dir: &Path) -> Option<cachewatch_core::process::OpenFile> {
        None
    }
}

/// A thread exchanging `a` and `b` in a loop until stopped; stopping leaves them as they were.
pub struct Swapper {
    stop: Arc<AtomicBool>,
    swaps: Arc<AtomicUsize>,
    handle: Option<JoinHandle<()>>,
}

impl Swapper {
    pub fn start(a: PathBuf, b: PathBuf) -> Swapper {
        let stop = Arc::new(AtomicBool::new(false));
        let swaps = Arc::new(AtomicUsize::new(0));
        let (s, n) = (stop.clone(), swaps.clone());
        let handle = std::thread::spawn(move || {
            let mut odd = false;
            while !s.load(Ordering::Relaxed) {
                if exchange(&a, &b).is_ok() {
                    odd = !odd;
                    n.fetch_add(1, Ordering::Relaxed);
                }
            }
            if odd {
                exchange(&a, &b).unwrap();
            }
        });
        Swapper {
            stop,
            swaps,
            handle: Some(handle),
        }
    }

    /// Stops the thread, restores the two entries and returns the number of swaps made.
    pub fn stop(mut self) -> usize {
        self.halt();
        self.swaps.load(Ordering::Relaxed)
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            h.join().unwrap();
        }
    }
}

impl Drop for Swapper {
    fn drop(&mut self) {
        self.halt();
    }
}
