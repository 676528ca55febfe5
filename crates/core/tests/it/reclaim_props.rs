//! Property: on random trees with symlinks (inside and outside) and hard links (within items,
//! across items, to unplanned and outside files), execute deletes exactly the planned items, leaves
//! every other path with its content, and frees what `du -B1 -s` says the items held minus the
//! blocks of files that keep a link elsewhere (outside the root or in an unplanned dir).
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cachewatch_core::process::SystemProbe;
use cachewatch_core::reclaim::{execute, plan, Policy};
use cachewatch_core::scan::scan;
use cachewatch_core::{Catalogue, Root, RootKind};
use proptest::prelude::*;

/// What a path is, for comparing before and after.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    Dir,
    File(Vec<u8>),
    Link(PathBuf),
}

/// Every path under `dir` (not through symlinks) with what it is, except under `skip`.
fn snapshot(dir: &Path, skip: &[PathBuf], out: &mut BTreeMap<PathBuf, Entry>) {
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if skip.iter().any(|s| p.starts_with(s)) {
            continue;
        }
        let md = fs::symlink_metadata(&p).unwrap();
        if md.file_type().is_symlink() {
            out.insert(p.clone(), Entry::Link(fs::read_link(&p).unwrap()));
        } else if md.is_dir() {
            out.insert(p.clone(), Entry::Dir);
            snapshot(&p, skip, out);
        } else {
            out.insert(p.clone(), Entry::File(fs::read(&p).unwrap()));
        }
    }
}

/// `(dev, ino)` of every non-dir entry under `dir` (not through symlinks), `dir` included, with
/// its allocated bytes (`st_blocks * 512`).
fn inodes(dir: &Path, out: &mut HashMap<(u64, u64), u64>) {
    let md = fs::symlink_metadata(dir).unwrap();
    if !md.is_dir() {
        out.insert((md.dev(), md.ino()), md.blocks() * 512);
        return;
    }
    for e in fs::read_dir(dir).unwrap() {
        inodes(&e.unwrap().path(), out);
    }
}

fn du_bytes(paths: &[PathBuf]) -> u64 {
    cachewatch_testkit::du::allocated(paths)
}

/// A small deterministic generator driven by proptest's seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Fills `dir` with a few files of random size and maybe a subdir; returns the files made.
fn fill(dir: &Path, rng: &mut Rng, files: &mut Vec<PathBuf>) {
    fs::create_dir_all(dir).unwrap();
    for i in 0..rng.below(4) {
        let f = dir.join(format!("f{i}"));
        let len = rng.below(20_000);
        let byte = rng.below(250) as u8;
        fs::write(&f, vec![byte; len]).unwrap();
        files.push(f);
    }
    if rng.below(2) == 0 {
        let sub = dir.join("sub");
        fs::create_dir(&sub).unwrap();
        let f = sub.join("deep");
        fs::write(&f, vec![9u8; rng.below(9000)]).unwrap();
        files.push(f);
    }
}

fn run_case(seed: u64, n_items: usize, n_keep: usize) {
    let mut rng = Rng(seed | 1);
    let tdir = tempfile::tempdir().unwrap();
    let odir = tempfile::tempdir().unwrap();
    let root = Root::new(RootKind::Temp, tdir.path()).unwrap();
    let outside = fs::canonicalize(odir.path()).unwrap();
    let mut c = Command::new("true").spawn().unwrap();
    let dead = c.id();
    c.wait().unwrap();
    let ts = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();

    let mut files = vec![];
    let mut dirs = vec![outside.clone()];
    fill(&outside, &mut rng, &mut files);
    let items: Vec<PathBuf> = (0..n_items)
        .map(|i| {
            root.canonical
                .join(format!("model_{dead}_{i}_{ts}.mlmodelc"))
        })
        .collect();
    let keeps: Vec<PathBuf> = (0..n_keep)
        .map(|i| root.canonical.join(format!("keep-{i}")))
        .collect();
    for d in items.iter().chain(&keeps) {
        fill(d, &mut rng, &mut files);
        dirs.push(d.clone());
    }
    // Links placed anywhere (items, unattributed dirs, outside) to anything made so far.
    let all_dirs = dirs.clone();
    for n in 0..rng.below(8) {
        let at = &all_dirs[rng.below(all_dirs.len())];
        if rng.below(2) == 0 || files.is_empty() {
            let target = &all_dirs[rng.below(all_dirs.len())];
            std::os::unix::fs::symlink(target, at.join(format!("sl{n}"))).unwrap();
        } else {
            let target = files[rng.below(files.len())].clone();
            let link = at.join(format!("hl{n}"));
            fs::hard_link(&target, &link).unwrap();
            files.push(link);
        }
    }
    // Maybe one more item that is itself a symlink to an unattributed dir or outside.
    let mut planned_paths = items.clone();
    if rng.below(2) == 0 {
        let link = root
            .canonical
            .join(format!("model_{dead}_99_{ts}.mlmodelc"));
        let target = &all_dirs[rng.below(all_dirs.len())];
        std::os::unix::fs::symlink(target, &link).unwrap();
        planned_paths.push(link);
    }
    planned_paths.sort();

    let cat = Catalogue::builtin();
    let now = SystemTime::now();
    let inv = scan(std::slice::from_ref(&root), &cat, now);
    let policy = Policy {
        older_than: Duration::ZERO,
        producers: vec![],
        protected: vec![],
    };
    let p = plan(&inv, &cat, &policy, &SystemProbe::new(), now);
    let got: Vec<PathBuf> = p.items.iter().map(|i| i.path.clone()).collect();
    assert_eq!(got, planned_paths);

    let mut before = BTreeMap::new();
    snapshot(&root.canonical, &planned_paths, &mut before);
    snapshot(&outside, &[], &mut before);
    let mut planned_inodes = HashMap::new();
    for p in &planned_paths {
        inodes(p, &mut planned_inodes);
    }
    let du_planned = du_bytes(&planned_paths);

    let mut audits = 0;
    let r = execute(&p, &cat, &SystemProbe::new(), now, &mut |_| audits += 1);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(audits, planned_paths.len());
    assert_eq!(r.deleted.len(), planned_paths.len(), "{r:#?}");
    for p in &planned_paths {
        assert!(fs::symlink_metadata(p).is_err(), "{} survived", p.display());
    }
    let mut after = BTreeMap::new();
    snapshot(&root.canonical, &planned_paths, &mut after);
    snapshot(&outside, &[], &mut after);
    assert_eq!(before, after);
    // Files of the items still linked from a surviving path were not freed.
    let mut surviving = HashMap::new();
    inodes(&root.canonical, &mut surviving);
    inodes(&outside, &mut surviving);
    let kept_keys: HashSet<_> = surviving.keys().collect();
    let still_linked: u64 = planned_inodes
        .iter()
        .filter(|(k, _)| kept_keys.contains(k))
        .map(|(_, b)| b)
        .sum();
    assert_eq!(r.freed_bytes, du_planned - still_linked);
    assert!(root.canonical.is_dir());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn execute_deletes_exactly_the_plan_and_frees_what_du_counts(
        seed in any::<u64>(),
        n_items in 1usize..5,
        n_keep in 0usize..3,
    ) {
        run_case(seed, n_items, n_keep);
    }
}
