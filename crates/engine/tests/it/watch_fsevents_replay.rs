//! FSEvents, replayed on Linux: the `notify::Event` values notify's FSEvents backend makes
//! (`notify/src/fsevent.rs`, `translate_flags`: one event per flag of a record, each with the
//! record's path) are fed to a live monitor through the entry point its watcher feeds
//! (`MonitorHandle::inject_watch_event`), and after each sequence the snapshot must equal `du`.
//!
//! The monitor must see the changes through these events alone, so its own inotify watch is made
//! blind: the root is a dir the watcher watches, then a read-only bind mount of a tmpfs (where the
//! test writes) is put over it. inotify watches the covered dir, so it reports nothing; the scans
//! read the tmpfs through the mount; the flush marker cannot be written there, so a flush just
//! processes what has arrived. The root is given through a symlink (standing in for
//! `/var` -> `/private/var`): FSEvents reports canonical paths, so the events name the canonical
//! path, never the spelling the user gave. Needs root (`mount`); skipped with a printed reason
//! otherwise.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use cachewatch::monitor::{self, MonitorHandle, MonitorOptions};
use cachewatch::snapshot::Snapshot;
use cachewatch_core::{Catalogue, Root, RootKind};
use notify::event::{
    CreateKind, DataChange, Event, EventKind, Flag, ModifyKind, RemoveKind, RenameMode,
};

const GPU: &str = "metal-gpuarchiver";

/// The events of one FSEvents record (`path`, `flags`), as notify 8's `translate_flags` makes
/// them, in its order.
#[derive(Clone, Copy)]
enum Fse {
    /// `kFSEventStreamEventFlagMustScanSubDirs`, alone or with `UserDropped`/`KernelDropped`.
    MustScanSubDirs(Option<&'static str>),
    /// `kFSEventStreamEventFlagRootChanged`.
    RootChanged,
    /// `ItemCreated | ItemIsDir`.
    DirCreated,
    /// `ItemCreated | ItemIsFile`.
    FileCreated,
    /// `ItemRemoved | ItemIsDir`.
    DirRemoved,
    /// `ItemRemoved | ItemIsFile`.
    FileRemoved,
    /// `ItemRenamed` (each side of a rename is its own record; nothing pairs them).
    Renamed,
    /// `ItemRemoved | ItemRenamed | ItemIsDir`: a dir renamed, then removed, coalesced.
    RenamedRemovedDir,
    /// `ItemModified | ItemIsFile`.
    Modified,
    /// `ItemCreated | ItemRemoved | ItemModified | ItemIsFile`: a file created, written and removed
    /// between two callbacks, coalesced into one record.
    CreatedModifiedRemoved,
    /// `ItemCreated | ItemIsHardlink` (neither file nor dir flag).
    HardlinkCreated,
}

fn events(rec: Fse, path: &Path) -> Vec<Event> {
    let one = |kind| Event::new(kind).add_path(path.to_path_buf());
    match rec {
        Fse::MustScanSubDirs(why) => {
            let e = Event::new(EventKind::Other).set_flag(Flag::Rescan);
            let e = match why {
                Some(info) => e.set_info(info),
                None => e,
            };
            vec![e.add_path(path.to_path_buf())]
        }
        Fse::RootChanged => vec![
            Event::new(EventKind::Modify(ModifyKind::Name(RenameMode::From)))
                .set_info("root changed")
                .add_path(path.to_path_buf()),
        ],
        Fse::DirCreated => vec![one(EventKind::Create(CreateKind::Folder))],
        Fse::FileCreated => vec![one(EventKind::Create(CreateKind::File))],
        Fse::DirRemoved => vec![one(EventKind::Remove(RemoveKind::Folder))],
        Fse::FileRemoved => vec![one(EventKind::Remove(RemoveKind::File))],
        Fse::Renamed => vec![one(EventKind::Modify(ModifyKind::Name(RenameMode::Any)))],
        Fse::RenamedRemovedDir => vec![
            one(EventKind::Remove(RemoveKind::Folder)),
            one(EventKind::Modify(ModifyKind::Name(RenameMode::Any))),
        ],
        Fse::Modified => vec![one(EventKind::Modify(ModifyKind::Data(
            DataChange::Content,
        )))],
        Fse::CreatedModifiedRemoved => vec![
            one(EventKind::Create(CreateKind::File)),
            one(EventKind::Remove(RemoveKind::File)),
            one(EventKind::Modify(ModifyKind::Data(DataChange::Content))),
        ],
        Fse::HardlinkCreated => vec![Event::new(EventKind::Create(CreateKind::Other))
            .set_info("is: hardlink")
            .add_path(path.to_path_buf())],
    }
}

/// A root the monitor's inotify watch cannot see into (see the module docs); unmounted on drop.
struct Blind {
    _tmp: tempfile::TempDir,
    /// Where the test writes: a dir of a tmpfs, the root's contents.
    store: PathBuf,
    /// A dir of the same tmpfs outside the root (renames in and out of the root).
    outside: PathBuf,
    /// The tmpfs.
    fs: PathBuf,
    /// The root's canonical path: FSEvents' spelling of every event path.
    real: PathBuf,
    /// The spelling the root is given in (a symlink to `real`).
    alias: PathBuf,
    mounted: Vec<PathBuf>,
}

fn mount(args: &[&str]) -> bool {
    Command::new("mount")
        .args(args)
        .status()
        .is_ok_and(|s| s.success())
}

impl Blind {
    fn new() -> Option<Blind> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: needs root to mount the tmpfs that blinds inotify");
            return None;
        }
        let tmp = tempfile::tempdir().unwrap();
        let fs = tmp.path().join("fs");
        let real = tmp.path().join("real");
        let alias = tmp.path().join("alias");
        std::fs::create_dir(&fs).unwrap();
        std::fs::create_dir(&real).unwrap();
        std::os::unix::fs::symlink(&real, &alias).unwrap();
        let mut b = Blind {
            real: real.canonicalize().unwrap(),
            _tmp: tmp,
            store: fs.join("root"),
            outside: fs.join("outside"),
            fs,
            alias,
            mounted: Vec::new(),
        };
        if !mount(&["-t", "tmpfs", "-o", "size=64m", "tmpfs", b.fs.to_str()?]) {
            eprintln!("skipped: cannot mount a tmpfs");
            return None;
        }
        b.mounted.push(b.fs.clone());
        std::fs::create_dir(&b.store).unwrap();
        std::fs::create_dir(&b.outside).unwrap();
        Some(b)
    }

    /// Puts the tmpfs, read-only, over the watched dir.
    fn cover(&mut self) {
        let (store, real) = (self.store.to_str().unwrap(), self.real.to_str().unwrap());
        assert!(mount(&["--bind", store, real]));
        self.mounted.push(self.real.clone());
        assert!(mount(&["-o", "remount,bind,ro", real]));
    }
}

impl Drop for Blind {
    fn drop(&mut self) {
        for m in self.mounted.iter().rev() {
            let _ = Command::new("umount").arg("-l").arg(m).status();
        }
    }
}

fn du_total(paths: &[PathBuf]) -> u64 {
    cachewatch_testkit::du::allocated(paths)
}

fn producer(s: &Snapshot, id: &str) -> (u64, u64) {
    s.producers
        .iter()
        .find(|p| p.id == id)
        .map_or((0, 0), |p| (p.items, p.allocated_bytes))
}

/// The `gpuarchiver-*` dirs under `dir` (in the store), as the root's canonical paths.
fn archives(b: &Blind) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![b.store.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if !e.file_type().unwrap().is_dir() {
                continue;
            }
            let name = e.file_name();
            if name.to_string_lossy().starts_with("gpuarchiver-") {
                out.push(b.real.join(p.strip_prefix(&b.store).unwrap()));
            } else {
                stack.push(p);
            }
        }
    }
    out
}

/// The canonical spelling (`real/...`) of a store path.
fn seen(b: &Blind, p: &Path) -> PathBuf {
    b.real.join(p.strip_prefix(&b.store).unwrap())
}

struct Replay {
    b: Blind,
    m: MonitorHandle,
}

impl Replay {
    async fn start() -> Option<Replay> {
        let mut b = Blind::new()?;
        let root = Root::new(RootKind::Cache, &b.alias).unwrap();
        assert_eq!(root.canonical, b.real);
        let mut opts = MonitorOptions::new(vec![root], Arc::new(Catalogue::builtin()));
        opts.debounce = Duration::from_millis(50);
        let m = monitor::spawn(opts).unwrap();
        m.flush().await.unwrap();
        b.cover();
        Some(Replay { b, m })
    }

    fn feed(&self, recs: &[(Fse, &Path)]) {
        for (rec, store_path) in recs {
            for e in events(*rec, &seen(&self.b, store_path)) {
                self.m.inject_watch_event(0, Ok(e)).unwrap();
            }
        }
    }

    /// After a sequence: the root's total and the archives' figures are `du`'s.
    async fn assert_du(&self, after: &str) -> Arc<Snapshot> {
        self.m.flush().await.unwrap();
        let s = self.m.snapshot();
        let dirs = archives(&self.b);
        assert_eq!(
            s.roots[0].allocated_bytes,
            du_total(std::slice::from_ref(&self.b.real)),
            "root total after {after}"
        );
        assert_eq!(
            producer(&s, GPU),
            (dirs.len() as u64, du_total(&dirs)),
            "archives after {after}"
        );
        s
    }
}

fn archive(parent: &Path, name: &str, len: usize) -> (PathBuf, PathBuf) {
    let d = parent.join(name);
    std::fs::create_dir_all(&d).unwrap();
    let f = d.join("PersistentState");
    std::fs::write(&f, vec![7u8; len]).unwrap();
    (d, f)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fsevents_sequences_keep_the_snapshot_equal_to_du() {
    let Some(r) = Replay::start().await else {
        return;
    };
    let store = r.b.store.clone();
    let g = store.join("org.julialang.julia/com.apple.gpuarchiver");

    // 0. The control: inotify is blind here, so without events nothing changes.
    let base = r.m.snapshot().roots[0].allocated_bytes;
    let (a0, _) = archive(&g, "gpuarchiver-A0", 50_000);
    r.m.flush().await.unwrap();
    let s = r.m.snapshot();
    assert_eq!(
        (s.roots[0].allocated_bytes, producer(&s, GPU)),
        (base, (0, 0))
    );
    assert!(du_total(std::slice::from_ref(&r.b.real)) > 50_000);

    // 1. The blind mount brought a tree the monitor never saw; FSEvents says so with
    //    MustScanSubDirs (the kernel dropped events): a rescan.
    let rescans0 = r.m.snapshot().roots[0].rescans;
    r.feed(&[(Fse::MustScanSubDirs(Some("rescan: kernel dropped")), &store)]);
    let s = r.assert_du("a kernel-dropped rescan").await;
    assert_eq!(s.roots[0].rescans, rescans0 + 1);
    assert_eq!(producer(&s, GPU).0, 1);

    // 2. New items, one record per created entry (kFSEventStreamCreateFlagFileEvents).
    let mut recs = Vec::new();
    let made: Vec<(PathBuf, PathBuf)> = (1..=3)
        .map(|i| archive(&g, &format!("gpuarchiver-N{i}"), 10_000 * i))
        .collect();
    for (d, f) in &made {
        recs.push((Fse::DirCreated, d.as_path()));
        recs.push((Fse::FileCreated, f.as_path()));
    }
    r.feed(&recs);
    let s = r.assert_du("creations").await;
    assert_eq!(producer(&s, GPU).0, 4);

    // 3. Coalesced records: a file created, written and removed between callbacks (one record,
    //    three events, the last a Modify of a path that no longer exists), and a file written
    //    twice reported once.
    let tmpfile = made[0].0.join("scratch");
    std::fs::write(&tmpfile, vec![1u8; 70_000]).unwrap();
    std::fs::remove_file(&tmpfile).unwrap();
    std::fs::write(&made[1].1, vec![9u8; 123_456]).unwrap();
    std::fs::write(&made[1].1, vec![9u8; 234_567]).unwrap();
    r.feed(&[
        (Fse::CreatedModifiedRemoved, &tmpfile),
        (Fse::Modified, &made[1].1),
    ]);
    r.assert_du("coalesced records").await;

    // 4. A rename inside the root: two unpaired records, new side first (FSEvents gives no
    //    order); then a rename out of the root (only the old side is under the watched path).
    let renamed = g.join("gpuarchiver-R1");
    std::fs::rename(&made[2].0, &renamed).unwrap();
    r.feed(&[(Fse::Renamed, &renamed), (Fse::Renamed, &made[2].0)]);
    let s = r.assert_du("a rename inside the root").await;
    assert_eq!(producer(&s, GPU).0, 4, "no item lost, none counted twice");
    let gone = store.join("trash-me");
    std::fs::rename(&renamed, &gone).unwrap();
    std::fs::remove_dir_all(&gone).unwrap();
    r.feed(&[(Fse::Renamed, &renamed), (Fse::RenamedRemovedDir, &gone)]);
    let s = r.assert_du("a rename then removal").await;
    assert_eq!(producer(&s, GPU).0, 3);
    let (o, _) = archive(&g, "gpuarchiver-O", 8_000);
    r.feed(&[
        (Fse::DirCreated, &o),
        (Fse::FileCreated, &o.join("PersistentState")),
    ]);
    r.assert_du("one more").await;
    std::fs::rename(&o, r.b.outside.join("gpuarchiver-O")).unwrap();
    r.feed(&[(Fse::Renamed, &o)]);
    let s = r.assert_du("a rename out of the root").await;
    assert_eq!(producer(&s, GPU).0, 3);

    // 5. A tree moved in whole from outside the root: one record for its top dir (the old side
    //    is outside the watched path), none for what is inside it; the items inside are found by
    //    searching the dir.
    let staging = r.b.outside.join("com.foo.app");
    for i in 0..4 {
        archive(
            &staging.join("com.apple.gpuarchiver"),
            &format!("gpuarchiver-M{i}"),
            20_000,
        );
    }
    let moved = store.join("com.foo.app");
    std::fs::rename(&staging, &moved).unwrap();
    r.feed(&[(Fse::Renamed, &moved)]);
    let s = r.assert_du("a tree moved in").await;
    assert_eq!(producer(&s, GPU).0, 7);

    // 6. A second link to an archive's file (ItemIsHardlink, no file flag): its bytes counted
    //    once; then removal records for a whole archive dir and its file.
    let link = made[1].0.join("linked");
    std::fs::hard_link(&made[1].1, &link).unwrap();
    r.feed(&[(Fse::HardlinkCreated, &link)]);
    r.assert_du("a hard link").await;
    std::fs::remove_dir_all(&a0).unwrap();
    r.feed(&[
        (Fse::FileRemoved, &a0.join("PersistentState")),
        (Fse::DirRemoved, &a0),
    ]);
    let s = r.assert_du("a removal").await;
    assert_eq!(producer(&s, GPU).0, 6);

    // 7. Events dropped in user space for a subdir (MustScanSubDirs | UserDropped on it), with
    //    changes that sent nothing else: the root is rescanned.
    for i in 0..5 {
        archive(&g, &format!("gpuarchiver-U{i}"), 3_000);
    }
    std::fs::remove_dir_all(g.join("gpuarchiver-N1")).unwrap();
    r.feed(&[(Fse::MustScanSubDirs(Some("rescan: user dropped")), &g)]);
    let s = r.assert_du("a user-dropped rescan of a subdir").await;
    assert_eq!(producer(&s, GPU).0, 10);

    // 8. The same record many times over (FSEvents may repeat a path): no double count.
    let dup: Vec<(Fse, &Path)> = (0..50)
        .map(|_| (Fse::Modified, made[1].1.as_path()))
        .collect();
    r.feed(&dup);
    r.assert_du("repeated records").await;

    // 9. RootChanged on the root path: the root's contents were replaced wholesale (with
    //    kFSEventStreamCreateFlagWatchRoot FSEvents reports nothing below it). A rescan.
    for e in std::fs::read_dir(&store).unwrap().flatten() {
        let p = e.path();
        if e.file_type().unwrap().is_dir() {
            std::fs::remove_dir_all(&p).unwrap();
        } else {
            std::fs::remove_file(&p).unwrap();
        }
    }
    let fresh = store.join("org.other.app/com.apple.gpuarchiver");
    archive(&fresh, "gpuarchiver-Z0", 40_000);
    archive(&fresh, "gpuarchiver-Z1", 40_000);
    r.feed(&[(Fse::RootChanged, &store)]);
    let s = r.assert_du("root changed").await;
    assert_eq!(producer(&s, GPU).0, 2);

    r.m.shutdown().await;
}
