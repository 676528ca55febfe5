//! The in-use guard against names made to fool it, with a real holder: another process (this test
//! binary again, running [`holder_helper`]) that holds a file open, has one mapped with its fd
//! closed, or works in a dir. Plan (real probe) must keep the item, and execute (real probe) must
//! keep it too when handed a plan made without seeing the holder.
#![allow(clippy::unwrap_used)]

use std::ffi::OsString;
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime};

use cachewatch_core::process::SystemProbe;
use cachewatch_core::reclaim::{execute, plan, KeepReason, Policy, ReclaimPlan};
use cachewatch_core::scan::scan;
use cachewatch_core::{Catalogue, Root, RootKind};

use crate::support::{kept_reasons, test_path, NoProcesses};

const HOUR: Duration = Duration::from_secs(3600);

/// Env vars of the holder: a path to hold open, a path to map (fd closed after), a dir to work in.
const HOLD_OPEN: &str = "CW_TEST_HOLD_OPEN";
const HOLD_MAP: &str = "CW_TEST_HOLD_MAP";
const HOLD_CWD: &str = "CW_TEST_HOLD_CWD";
/// A file too deep for an absolute path: reached by one `chdir` per component, then held open.
const HOLD_DEEP: &str = "CW_TEST_HOLD_DEEP";

/// A holder process, killed on drop. It also exits by itself when its stdin closes or after two
/// minutes, so none outlives a test run.
struct Holder(Child);

impl Holder {
    /// Starts the holder with `(var, paths)` pairs (`var` one of [`HOLD_OPEN`], [`HOLD_MAP`] or
    /// [`HOLD_CWD`]) and waits until it holds them.
    fn spawn(env: &[(&str, Vec<PathBuf>)]) -> Holder {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args([
            "--exact",
            &test_path(module_path!(), "holder_helper"),
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ]);
        for (var, paths) in env {
            // Paths may hold a newline: separated by the byte 0xff, which no test name holds.
            let mut v = Vec::new();
            for p in paths {
                v.extend_from_slice(p.as_os_str().as_bytes());
                v.push(0xff);
            }
            cmd.env(var, OsString::from(std::ffi::OsStr::from_bytes(&v)));
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        let mut seen = Vec::new();
        for line in out.lines() {
            let line = line.unwrap();
            if line.ends_with("holder ready") {
                return Holder(child);
            }
            seen.push(line);
        }
        child.kill().ok();
        child.wait().ok();
        panic!("the holder exited before holding its files: {seen:#?}");
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        self.0.kill().ok();
        self.0.wait().ok();
    }
}

/// The paths of `var` (separated by the byte 0xff, which the test names never hold).
fn paths_of(var: &str) -> Vec<PathBuf> {
    let Some(v) = std::env::var_os(var) else {
        return Vec::new();
    };
    v.as_bytes()
        .split(|b| *b == 0xff)
        .filter(|p| !p.is_empty())
        .map(|p| PathBuf::from(std::ffi::OsStr::from_bytes(p)))
        .collect()
}

/// The holder's body: opens, maps (then closes) and changes dir as told, says so on stdout, and
/// waits for stdin to close (two minutes at most).
#[test]
#[ignore = "run in a process of its own by the tests of this module"]
fn holder_helper() {
    let (open, map, cwd) = (paths_of(HOLD_OPEN), paths_of(HOLD_MAP), paths_of(HOLD_CWD));
    let deep = paths_of(HOLD_DEEP);
    if open.is_empty() && map.is_empty() && cwd.is_empty() && deep.is_empty() {
        println!("SKIPPED: holds files only in the process a test starts");
        return;
    }
    let mut held: Vec<fs::File> = open.iter().map(|p| fs::File::open(p).unwrap()).collect();
    for p in &map {
        let f = fs::File::open(p).unwrap();
        // SAFETY: a fresh read-only shared mapping of a 4096-byte file; never unmapped, never read.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_READ,
                libc::MAP_SHARED,
                std::os::fd::AsRawFd::as_raw_fd(&f),
                0,
            )
        };
        assert_ne!(addr, libc::MAP_FAILED, "mmap of {}", p.display());
        drop(f);
    }
    if let Some(dir) = cwd.first() {
        std::env::set_current_dir(dir).unwrap();
    }
    if let Some(file) = deep.first() {
        let dir = file.parent().unwrap();
        std::env::set_current_dir("/").unwrap();
        for c in dir.components().skip(1) {
            std::env::set_current_dir(c.as_os_str()).unwrap();
        }
        held.push(fs::File::open(file.file_name().unwrap()).unwrap());
        // Work where no item is: only the fd is too long to name.
        std::env::set_current_dir("/").unwrap();
    }
    std::thread::spawn(|| {
        std::thread::sleep(Duration::from_secs(120));
        std::process::exit(0);
    });
    println!("holder ready");
    let mut sink = Vec::new();
    std::io::stdin().read_to_end(&mut sink).ok();
    drop(held);
}

fn claim_all_catalogue() -> Catalogue {
    let text = "[[producer]]\nid = \"claim-all\"\nname = \"Claims everything\"\nroot = \"temp\"\n\
                item = \"*\"\nkind = \"leak\"\nreclaim = \"auto\"\nmin_age_secs = 0\n";
    Catalogue::from_toml(text, Path::new("config.toml")).unwrap()
}

fn set_mtime_tree(p: &Path, t: SystemTime) {
    if p.as_os_str().len() >= 4000 {
        return; // aged through its dir fds where it was made
    }
    if fs::symlink_metadata(p).unwrap().is_dir() {
        for e in fs::read_dir(p).unwrap() {
            set_mtime_tree(&e.unwrap().path(), t);
        }
    }
    fs::File::open(p).unwrap().set_modified(t).unwrap();
}

/// A 4096-byte file at `p`.
fn page_file(p: &Path) {
    fs::write(p, vec![7u8; 4096]).unwrap();
}

struct Case {
    _dir: tempfile::TempDir,
    base: PathBuf,
    root: Root,
    cat: Catalogue,
    now: SystemTime,
}

impl Case {
    fn new() -> Case {
        Case::in_dir(tempfile::tempdir().unwrap())
    }

    fn in_dir(dir: tempfile::TempDir) -> Case {
        let base = fs::canonicalize(dir.path()).unwrap();
        Case {
            root: Root::new(RootKind::Temp, &base).unwrap(),
            base,
            _dir: dir,
            cat: claim_all_catalogue(),
            now: SystemTime::now(),
        }
    }

    fn age(&self) {
        set_mtime_tree(&self.base, self.now - HOUR);
    }

    fn plan_with(&self, probe: &dyn cachewatch_core::process::ProcessProbe) -> ReclaimPlan {
        let inv = scan(std::slice::from_ref(&self.root), &self.cat, self.now);
        let policy = Policy {
            older_than: HOUR / 2,
            producers: vec![],
            protected: vec![],
        };
        plan(&inv, &self.cat, &policy, probe, self.now)
    }

    /// Plans with the real probe; then executes, with the real probe, a plan made blind to every
    /// process. Returns the real plan and the paths execute kept as in use.
    fn run(&self) -> (ReclaimPlan, Vec<(PathBuf, KeepReason)>) {
        let seen = self.plan_with(&SystemProbe::new());
        let blind = self.plan_with(&NoProcesses);
        let report = execute(
            &blind,
            &self.cat,
            &SystemProbe::new(),
            self.now,
            &mut |_| {},
        );
        let kept = report
            .kept
            .into_iter()
            .map(|k| (k.path, k.reason))
            .collect();
        (seen, kept)
    }
}

fn planned(p: &ReclaimPlan) -> Vec<PathBuf> {
    p.items.iter().map(|i| i.path.clone()).collect()
}

fn reason_of<'a>(p: &'a ReclaimPlan, path: &Path) -> &'a KeepReason {
    &p.kept
        .iter()
        .find(|k| k.path == path)
        .unwrap_or_else(|| panic!("{} not kept: {}", path.display(), kept_reasons(p)))
        .reason
}

/// A file whose name ends in ` (deleted)` (what the kernel appends to the link text of an
/// unlinked file) held open, and a dir of such a name a process works in: both live, both kept.
#[test]
fn a_held_file_or_dir_whose_name_ends_in_deleted_keeps_its_item() {
    let c = Case::new();
    let (file, dir, free) = (
        c.base.join("x (deleted)"),
        c.base.join("d (deleted)"),
        c.base.join("free"),
    );
    page_file(&file);
    fs::create_dir(&dir).unwrap();
    page_file(&dir.join("f"));
    fs::create_dir(&free).unwrap();
    page_file(&free.join("f"));
    c.age();
    let holder = Holder::spawn(&[
        (HOLD_OPEN, vec![file.clone()]),
        (HOLD_CWD, vec![dir.clone()]),
    ]);

    let (p, exec_kept) = c.run();

    assert_eq!(planned(&p), vec![free.clone()], "{}", kept_reasons(&p));
    assert_eq!(
        reason_of(&p, &file),
        &KeepReason::InUse {
            pid: holder.pid(),
            path: file.clone()
        }
    );
    assert_eq!(
        reason_of(&p, &dir),
        &KeepReason::InUse {
            pid: holder.pid(),
            path: dir.clone()
        }
    );
    let mut kept: Vec<&PathBuf> = exec_kept.iter().map(|(p, _)| p).collect();
    kept.sort();
    assert_eq!(kept, vec![&dir, &file], "execute kept {exec_kept:#?}");
    assert!(exec_kept
        .iter()
        .all(|(_, r)| matches!(r, KeepReason::InUse { .. })));
    assert!(file.is_file() && dir.join("f").is_file());
    assert!(!free.exists(), "the free item was deleted");
}

/// A file mapped (its fd closed) inside a dir whose name holds a newline: `/proc/PID/maps`
/// writes the newline as `\012`. Beside it a dir named with those four bytes literally (maps
/// leaves a backslash as it is), a mapped file whose own name ends in ` (deleted)`, and a free
/// dir with a newline in its name, which must still go.
#[test]
fn a_mapped_file_under_a_newline_or_deleted_name_keeps_its_item() {
    let c = Case::new();
    let newline = c.base.join("nl\ndir");
    let literal = c.base.join("lit\\012dir");
    let deleted = c.base.join("m (deleted)");
    let free = c.base.join("free\ndir");
    for d in [&newline, &literal, &free] {
        fs::create_dir(d).unwrap();
        page_file(&d.join("lib.bin"));
    }
    page_file(&deleted);
    c.age();
    let holder = Holder::spawn(&[(
        HOLD_MAP,
        vec![
            newline.join("lib.bin"),
            literal.join("lib.bin"),
            deleted.clone(),
        ],
    )]);

    let (p, exec_kept) = c.run();

    assert_eq!(planned(&p), vec![free.clone()], "{}", kept_reasons(&p));
    for (item, path) in [
        (&newline, newline.join("lib.bin")),
        (&literal, literal.join("lib.bin")),
        (&deleted, deleted.clone()),
    ] {
        assert_eq!(
            reason_of(&p, item),
            &KeepReason::InUse {
                pid: holder.pid(),
                path
            },
            "{}",
            item.display()
        );
    }
    let mut kept: Vec<&PathBuf> = exec_kept.iter().map(|(p, _)| p).collect();
    kept.sort();
    let mut want = vec![&literal, &deleted, &newline];
    want.sort();
    assert_eq!(kept, want, "execute kept {exec_kept:#?}");
    assert!(newline.join("lib.bin").is_file() && literal.join("lib.bin").is_file());
    assert!(deleted.is_file());
    assert!(!free.exists(), "the free item was deleted");
}

/// A file held open at a path longer than the kernel names in `/proc/PID/fd` (a page): the link
/// cannot be read, so the file may lie anywhere; every item of the root is kept.
///
/// The root lies on `/dev/shm`, another file system than the temp dir the other tests' roots are
/// in: a file with no name keeps only roots that can hold its device, so theirs are not touched.
#[cfg(target_os = "linux")]
#[test]
fn a_held_file_too_deep_to_name_keeps_the_items_of_the_root() {
    let shm = Path::new("/dev/shm");
    let other_fs = |p: &Path| fs::metadata(p).map(|m| std::os::unix::fs::MetadataExt::dev(&m));
    if !shm.is_dir() || other_fs(shm).ok() == other_fs(&std::env::temp_dir()).ok() {
        println!("SKIPPED: needs /dev/shm on another file system than the temp dir");
        return;
    }
    let c = Case::in_dir(tempfile::tempdir_in(shm).unwrap());
    let item = c.base.join("deep");
    let free = c.base.join("free");
    let mut dir = item.clone();
    while dir.as_os_str().len() < 4200 {
        dir.push("d".repeat(200));
    }
    // Made one component at a time through a dir fd: the whole path is past PATH_MAX.
    let mut fds = vec![fs::File::open(&c.base).unwrap()];
    for comp in dir.strip_prefix(&c.base).unwrap().components() {
        let parent = fds.last().unwrap();
        rustix::fs::mkdirat(
            parent,
            comp.as_os_str(),
            rustix::fs::Mode::from_raw_mode(0o755),
        )
        .unwrap();
        let next = rustix::fs::openat(
            parent,
            comp.as_os_str(),
            rustix::fs::OFlags::DIRECTORY,
            rustix::fs::Mode::empty(),
        )
        .unwrap();
        fds.push(fs::File::from(next));
    }
    let f = rustix::fs::openat(
        fds.last().unwrap(),
        "f",
        rustix::fs::OFlags::CREATE | rustix::fs::OFlags::WRONLY,
        rustix::fs::Mode::from_raw_mode(0o644),
    )
    .unwrap();
    let mut f = fs::File::from(f);
    std::io::Write::write_all(&mut f, &[7u8; 4096]).unwrap();
    // Old enough, through the fds (the paths are too long to name).
    for held in fds.iter().skip(1).chain([&f]) {
        held.set_modified(c.now - HOUR).unwrap();
    }
    drop((f, fds));
    fs::create_dir(&free).unwrap();
    page_file(&free.join("f"));
    c.age();
    let holder = Holder::spawn(&[(HOLD_DEEP, vec![dir.join("f")])]);

    let (p, exec_kept) = c.run();

    assert!(planned(&p).is_empty(), "{}", kept_reasons(&p));
    assert_eq!(
        reason_of(&p, &item),
        &KeepReason::InUse {
            pid: holder.pid(),
            path: c.base.clone()
        }
    );
    let mut kept: Vec<&PathBuf> = exec_kept.iter().map(|(p, _)| p).collect();
    kept.sort();
    assert_eq!(kept, vec![&item, &free], "execute kept {exec_kept:#?}");
    assert!(item.is_dir() && free.join("f").is_file());
}
