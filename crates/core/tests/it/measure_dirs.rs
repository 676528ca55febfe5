//! `measure_entry_with` returns, with the measure, the own entries of the dirs it counted while it
//! classified their entries, as the walk `lstat`ed them: checked against `lstat` and `du`.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use cachewatch_core::scan::measure_entry_with;
use cachewatch_core::{Catalogue, Root, RootKind};
use cachewatch_testkit::du;

fn write(path: &Path, len: usize) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, vec![3u8; len]).unwrap();
}

/// `(st_blocks * 512, st_size)` of `path`.
fn own(path: &Path) -> (u64, u64) {
    let md = fs::symlink_metadata(path).unwrap();
    (md.blocks() * 512, md.size())
}

#[test]
fn an_app_dir_measure_returns_the_own_entries_of_its_dirs_as_lstat_reads_them() {
    let t = tempfile::tempdir().unwrap();
    let root = Root::new(RootKind::Cache, t.path()).unwrap();
    let r = root.canonical.clone();
    let app = r.join("org.julialang.julia");
    let gpu = app.join("com.apple.gpuarchiver");
    let archives: Vec<PathBuf> = (0..300)
        .map(|i| gpu.join(format!("gpuarchiver-{i:05}")))
        .collect();
    for a in &archives {
        write(&a.join("PersistentState"), 700);
    }
    write(&gpu.join("stray/a/b/c/d/e/f/g/x"), 5000);
    write(&app.join("notes.txt"), 9000);
    let cat = Catalogue::builtin();

    let got = measure_entry_with(&root, &cat, &app.join("notes.txt"))
        .unwrap()
        .unwrap();
    let item = got.item.unwrap();
    assert_eq!(item.path, app);
    // The app dir less its archives, by du.
    let want = du::allocated(&[&app]) - du::allocated(&archives);
    assert_eq!(item.measure.allocated_bytes, want);

    let dirs: BTreeMap<PathBuf, (u64, u64)> = got
        .dirs
        .iter()
        .map(|d| (d.rel.clone(), (d.allocated_bytes, d.apparent_bytes)))
        .collect();
    let rel = |p: &Path| p.strip_prefix(&r).unwrap().to_path_buf();
    // The dirs whose entries were classified: the app dir, its structure dir, and the dirs in
    // `stray` less deep than the catalogue's deepest rule; not the deeper ones, measured whole.
    let max = cat.max_depth(RootKind::Cache);
    let mut want: BTreeMap<PathBuf, (u64, u64)> = BTreeMap::new();
    let mut p = gpu.join("stray/a/b/c/d/e/f/g");
    while p.starts_with(&app) {
        if rel(&p).components().count() < max {
            want.insert(rel(&p), own(&p));
        }
        p.pop();
    }
    assert!(want.len() >= 3 && want.len() < 10, "{want:?}");
    assert_eq!(dirs, want);
    assert!(own(&gpu).0 > 4096, "the structure dir spans blocks");

    // A claimed item: no dir of its own is classified.
    let got = measure_entry_with(&root, &cat, &archives[7])
        .unwrap()
        .unwrap();
    assert_eq!(got.item.unwrap().path, archives[7]);
    assert!(got.dirs.is_empty());
}

#[test]
fn a_top_level_structure_dir_is_no_item_but_its_own_entry_is_returned() {
    let t = tempfile::tempdir().unwrap();
    let root = Root::new(RootKind::Cache, t.path()).unwrap();
    let gpu = root.canonical.join("com.apple.gpuarchiver");
    for i in 0..5 {
        write(&gpu.join(format!("gpuarchiver-{i}/PersistentState")), 100);
    }
    let got = measure_entry_with(&root, &Catalogue::builtin(), &gpu)
        .unwrap()
        .unwrap();
    assert!(got.item.is_none());
    assert_eq!(got.dirs.len(), 1);
    assert_eq!(got.dirs[0].rel, Path::new("com.apple.gpuarchiver"));
    assert_eq!(
        (got.dirs[0].allocated_bytes, got.dirs[0].apparent_bytes),
        own(&gpu)
    );

    fs::remove_dir_all(&gpu).unwrap();
    assert!(measure_entry_with(&root, &Catalogue::builtin(), &gpu)
        .unwrap()
        .is_none());
}
