use super::*;
use crate::inventory::Captures;
use crate::roots::RootKind;
use std::time::SystemTime;

fn item(path: &Path, producer: Option<&str>, allocated_bytes: u64, files: u64) -> Item {
    Item {
        path: path.to_path_buf(),
        producer: producer.map(str::to_owned),
        captures: Captures::default(),
        measure: Measure {
            allocated_bytes,
            apparent_bytes: allocated_bytes / 2,
            freeable_bytes: allocated_bytes,
            files,
            dirs: 1,
            newest_mtime: None,
            birth_time: None,
        },
        is_symlink: false,
        dev: 0,
        ino: 0,
    }
}

#[test]
fn totals_follow_adds_replacements_and_removals() {
    let dir = tempfile::tempdir().unwrap();
    let root = Root::new(RootKind::Cache, dir.path()).unwrap();
    let mut st = RootState::new(root.clone());
    let a = root.canonical.join("g/a");
    let b = root.canonical.join("g/b");
    assert_eq!(st.apply(&a, Some(item(&a, Some("p"), 4096, 2))), 4096);
    assert_eq!(st.apply(&b, Some(item(&b, Some("p"), 8192, 3))), 8192);
    assert_eq!(st.apply(&a, Some(item(&a, Some("p"), 12288, 5))), 8192);
    assert_eq!(st.total.allocated_bytes, 12288 + 8192);
    assert_eq!(st.total.files, 8);
    // Removing a dir drops every item below it.
    assert_eq!(st.apply(&root.canonical.join("g"), None), -(12288 + 8192));
    assert_eq!(st.item_count(), 0);
    assert!(st.producers().is_empty());
    assert_eq!(st.total, Measure::default());
}

/// Items, allocated bytes and the largest items of one group.
type Recount = (u64, u64, Vec<(u64, PathBuf)>);

/// Totals and largest-item lists kept by deltas equal those recomputed from the items.
#[test]
fn groups_follow_updates_like_a_recount() {
    let dir = tempfile::tempdir().unwrap();
    let root = Root::new(RootKind::Cache, dir.path()).unwrap();
    let mut st = RootState::new(root.clone());
    // A fixed pseudo-random sequence of sets, shrinks, moves between producers and removals.
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for step in 0..3000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let n = x % 40;
        let path = root.canonical.join(format!("g/i{n:02}"));
        let producer = ["p", "q", "none"][(x >> 8) as usize % 3];
        let producer = (producer != "none").then_some(producer);
        if (x >> 16) % 5 == 0 {
            st.apply(&path, None);
        } else {
            let bytes = ((x >> 20) % 64) * 4096;
            st.apply(&path, Some(item(&path, producer, bytes, 1)));
        }
        st.refresh_tops();
        let mut want: BTreeMap<Option<String>, Recount> = BTreeMap::new();
        for (rel, e) in st.items() {
            let w = want.entry(e.producer.clone()).or_default();
            w.0 += 1;
            w.1 += e.measure.allocated_bytes;
            w.2.push((e.measure.allocated_bytes, rel));
        }
        let mut got: BTreeMap<Option<String>, Recount> = st
            .producers()
            .iter()
            .map(|(id, g)| (Some(id.to_string()), g))
            .chain((st.unattributed().totals.items > 0).then_some((None, st.unattributed())))
            .map(|(id, g)| {
                let top = g.top.items.iter().map(|(b, p)| (*b, p.to_path_buf()));
                (
                    id,
                    (
                        g.totals.items,
                        g.totals.measure.allocated_bytes,
                        top.collect(),
                    ),
                )
            })
            .collect();
        for (id, w) in &mut want {
            w.2.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
            w.2.truncate(if id.is_some() {
                TOP_ITEMS
            } else {
                TOP_UNATTRIBUTED
            });
        }
        got.retain(|_, g| g.0 > 0);
        assert_eq!(got, want, "after step {step}");
        let sum: u64 = st
            .items()
            .iter()
            .map(|(_, e)| e.measure.allocated_bytes)
            .sum();
        assert_eq!(st.total.allocated_bytes, sum, "after step {step}");
    }
}

/// Sets the mtime of `path` (a file or a dir) to `t`.
fn set_mtime(path: &Path, t: SystemTime) {
    std::fs::File::open(path).unwrap().set_modified(t).unwrap();
}

/// A poll reports the items whose top entry moved, the items gone and the new entries of a dir
/// whose mtime moved, and nothing else (here, with every mtime set back to 2020 before the load).
#[test]
fn a_poll_reports_only_what_moved() {
    let dir = tempfile::tempdir().unwrap();
    let root = Root::new(RootKind::Cache, dir.path()).unwrap();
    let gpu = root
        .canonical
        .join("com.example.runner/com.apple.gpuarchiver");
    std::fs::create_dir_all(&gpu).unwrap();
    let old = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_577_836_800);
    for n in ["a", "b", "c", "d"] {
        let d = gpu.join(format!("gpuarchiver-{n}"));
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join("PersistentState"), n.repeat(5000)).unwrap();
        set_mtime(&d.join("PersistentState"), old);
        set_mtime(&d, old);
    }
    for d in [&gpu, gpu.parent().unwrap(), &root.canonical] {
        set_mtime(d, old);
    }
    let catalogue = crate::catalogue::Catalogue::builtin();
    let mut st = RootState::new(root.clone());
    st.load_scan(crate::scan::scan_root(&root, &catalogue), SystemTime::now());
    assert_eq!(st.item_count(), 5, "{:?}", st.items()); // 4 archives + com.example.runner
    let quiet = st.poll_dirs(PollScope::Every);
    assert_eq!(quiet.changed, Vec::<PathBuf>::new());
    // Items and the dirs between the root and them (root, com.example.runner, gpuarchiver dir).
    assert_eq!(quiet.stats, 5 + 3);
    assert_eq!(quiet.listed, 0);

    std::fs::write(gpu.join("gpuarchiver-a/more"), b"x").unwrap();
    std::fs::remove_dir_all(gpu.join("gpuarchiver-b")).unwrap();
    std::fs::create_dir(gpu.join("gpuarchiver-e")).unwrap();
    let mut got = st.poll_dirs(PollScope::Every).changed;
    got.sort();
    let want: Vec<PathBuf> = ["a", "b", "e"]
        .iter()
        .map(|n| gpu.join(format!("gpuarchiver-{n}")))
        .collect();
    assert_eq!(got, want);
    // The dir's new mtime is the baseline now: only the items that still differ come back.
    let mut again = st.poll_dirs(PollScope::Every).changed;
    again.sort();
    assert_eq!(again, want[..2].to_vec());
}

/// A poll of the recent items re-stats the dirs and the items written within the cutoff, not the
/// old ones: a file added to an old item waits for the sweep. An item missing from the listing of
/// its dir (removed) is reported, old or not; a new entry is found either way; the items of a dir
/// that is gone are all re-stat'ed.
#[test]
fn a_poll_of_recent_items_leaves_old_ones_to_the_sweep_but_finds_removals() {
    let dir = tempfile::tempdir().unwrap();
    let root = Root::new(RootKind::Cache, dir.path()).unwrap();
    let gpu = root.canonical.join("com.apple.gpuarchiver");
    std::fs::create_dir_all(&gpu).unwrap();
    let old = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_577_836_800);
    let archive = |n: &str| gpu.join(format!("gpuarchiver-{n}"));
    for n in ["a", "b", "c", "d", "e"] {
        std::fs::create_dir(archive(n)).unwrap();
        std::fs::write(archive(n).join("PersistentState"), n.repeat(5000)).unwrap();
        if ["a", "b", "c"].contains(&n) {
            set_mtime(&archive(n).join("PersistentState"), old);
            set_mtime(&archive(n), old);
        }
    }
    for d in [&gpu, &root.canonical] {
        set_mtime(d, old);
    }
    let catalogue = crate::catalogue::Catalogue::builtin();
    let mut st = RootState::new(root.clone());
    st.load_scan(crate::scan::scan_root(&root, &catalogue), SystemTime::now());
    assert_eq!(st.item_count(), 5, "{:?}", st.items());
    let recent = PollScope::WrittenSince(SystemTime::now() - std::time::Duration::from_secs(3600));
    let sorted = |mut v: Vec<PathBuf>| {
        v.sort();
        v
    };

    let quiet = st.poll_dirs(recent);
    assert_eq!(quiet.changed, Vec::<PathBuf>::new());
    // The root and the gpuarchiver dir, and d and e; a, b and c are left out.
    assert_eq!((quiet.stats, quiet.skipped, quiet.listed), (2 + 2, 3, 0));

    // A file added into old `a` and into recent `d`: only `d` is seen until a sweep.
    std::fs::write(archive("a").join("more"), b"x").unwrap();
    std::fs::write(archive("d").join("more"), b"x").unwrap();
    assert_eq!(st.poll_dirs(recent).changed, vec![archive("d")]);
    let swept = st.poll_dirs(PollScope::Every);
    assert_eq!(sorted(swept.changed), vec![archive("a"), archive("d")]);
    assert_eq!((swept.stats, swept.skipped), (2 + 5, 0));

    // A new item: its dir is listed, every known item is in it, the old ones stay left out.
    std::fs::create_dir(archive("f")).unwrap();
    let found = st.poll_dirs(recent);
    assert_eq!(sorted(found.changed), vec![archive("d"), archive("f")]);
    assert_eq!((found.listed, found.skipped), (1, 3));

    // An old item removed: the listing misses it, so it is reported without an `lstat`; the
    // other old items stay left out.
    std::fs::remove_dir_all(archive("b")).unwrap();
    let lost = st.poll_dirs(recent);
    assert_eq!(
        sorted(lost.changed),
        // `f` is still unknown to the state (nobody re-measured it here).
        vec![archive("b"), archive("d"), archive("f")]
    );
    assert_eq!((lost.stats, lost.listed, lost.skipped), (2 + 2, 1, 2));

    // The dir itself gone: every item in it is re-stat'ed (and fails), old or not.
    std::fs::remove_dir_all(&gpu).unwrap();
    let gone = st.poll_dirs(recent);
    let mut want: Vec<PathBuf> = ["a", "b", "c", "d", "e"].map(archive).to_vec();
    want.push(gpu.clone());
    assert_eq!(sorted(gone.changed), sorted(want));
    assert_eq!(gone.skipped, 0);
}

/// What does not fit in a slot (freeable below allocated, another device, a `ts` capture, a time
/// before 1970, an inode past 2^32, more files than 65535, bytes not a multiple of 512 or past
/// 4 GiB apparent) comes back exactly, and so does what fits, names with and without a prefix.
#[test]
fn items_come_back_exactly_as_they_went_in() {
    let dir = tempfile::tempdir().unwrap();
    let root = Root::new(RootKind::Cache, dir.path()).unwrap();
    let mut st = RootState::new(root.clone());
    st.begin_load();
    let t = |s: u64, n: u32| Some(SystemTime::UNIX_EPOCH + std::time::Duration::new(s, n));
    let dev = std::os::unix::fs::MetadataExt::dev(&std::fs::metadata(&root.canonical).unwrap());
    let mut items = Vec::new();
    let long = format!("cache-{}", "x".repeat(240));
    let names = [
        "plain",
        "shared",
        "otherdev",
        "ts",
        "old",
        "bundle",
        "bigino",
        "manyfiles",
        "oddbytes",
        "bigapparent",
        "nopid",
        "gpuarchiver-AbC123",
        "gpuarchiver-ZzZ999",
        "com.apple.x",
        long.as_str(),
    ];
    for (i, name) in names.iter().enumerate() {
        let path = root.canonical.join(format!("x/{name}"));
        let mut it = item(&path, Some("p"), 8192 * (i as u64 + 1), 3);
        it.measure.newest_mtime = t(1_700_000_000 + i as u64, 999_999_999);
        it.measure.birth_time = t(1_600_000_000, 1);
        it.ino = 1000 + i as u64;
        it.dev = dev;
        it.captures.pid = Some(4242);
        match *name {
            "shared" => it.measure.freeable_bytes = 4096,
            "otherdev" => it.dev = 77,
            "ts" => it.captures.ts = t(1_650_000_000, 0),
            "old" => {
                it.measure.birth_time =
                    Some(SystemTime::UNIX_EPOCH - std::time::Duration::from_secs(5))
            }
            "bundle" => it.captures.bundle = Some("com.example.runner".into()),
            "bigino" => it.ino = u32::MAX as u64 + 7,
            "manyfiles" => it.measure.files = 70_000,
            "oddbytes" => {
                it.measure.allocated_bytes = 1000;
                it.measure.freeable_bytes = 1000
            }
            "bigapparent" => it.measure.apparent_bytes = 5 << 30,
            "nopid" => it.captures.pid = None,
            _ => {}
        }
        st.load_item(&it);
        items.push(it);
    }
    let got: Vec<Item> = st.items().into_iter().map(|(_, i)| i).collect();
    let mut want = items.clone();
    want.sort_by(|a, b| a.path.cmp(&b.path));
    assert_eq!(got, want);
}

/// A top-level structure dir still there but measured as no item keeps the items below it, and its
/// own entry is counted once: directly while it is no item, inside its measure while it is one.
#[test]
fn a_structure_dir_measured_as_no_item_keeps_its_items() {
    let dir = tempfile::tempdir().unwrap();
    let root = Root::new(RootKind::Cache, dir.path()).unwrap();
    let mut st = RootState::new(root.clone());
    let s = root.canonical.join("com.apple.gpuarchiver");
    std::fs::create_dir(&s).unwrap();
    let own = DirEntryStat {
        allocated_bytes: 4096,
        apparent_bytes: 4096,
    };
    let a = s.join("gpuarchiver-1");
    st.apply(&a, Some(item(&a, Some("g"), 8192, 1)));
    assert_eq!(st.apply_not_item(&s, Some(own)), 4096);
    assert_eq!(st.apply_not_item(&s, Some(own)), 0);
    assert_eq!(st.total.allocated_bytes, 8192 + 4096);
    // Something unclaimed in it: an unattributed item whose measure holds the own entry.
    assert_eq!(st.apply(&s, Some(item(&s, None, 4096 + 512, 1))), 512);
    assert_eq!(st.apply_not_item(&s, Some(own)), -512);
    assert_eq!(st.item_count(), 1);
    assert_eq!(st.producers()["g"].totals.items, 1);
    // Gone: its items and its own entry go.
    std::fs::remove_dir(&s).unwrap();
    assert_eq!(st.apply_not_item(&s, None), -(8192 + 4096));
    assert_eq!(st.item_count(), 0);
    assert_eq!(st.total.allocated_bytes, 0);
}

/// An archive below `julia/com.apple.gpuarchiver` reaches the state before `julia` is an item (its
/// ancestors get baselines, the nested dir's own entry is counted nowhere yet); the nested dir
/// then grows (ext4 turns a dir of one block into three as it passes ~150 entries). That growth
/// must not reach the total: the measure that makes `julia` an item counts the dir at its new
/// size. The total is then the root's, `julia`'s and the nested dir's own entries (`lstat`) plus
/// the item, each once.
#[test]
fn a_nested_dir_growing_before_its_top_is_an_item_is_counted_once() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let root = Root::new(RootKind::Cache, dir.path()).unwrap();
    let mut st = RootState::new(root.clone());
    let julia = root.canonical.join("org.julialang.julia");
    let cag = julia.join("com.apple.gpuarchiver");
    std::fs::create_dir_all(&cag).unwrap();
    // As a first scan of the root leaves it: the root dir's own entry counted, its baseline kept.
    st.set_dir_stat(Path::new(""), DirEntryStat::of(&root.canonical));
    st.total.allocated_bytes = std::fs::symlink_metadata(&root.canonical).unwrap().blocks() * 512;
    let a = cag.join("gpuarchiver-a00000");
    std::fs::create_dir(&a).unwrap();
    let rel_a = root.relative(&a).unwrap().to_path_buf();
    st.restat_ancestors(&rel_a);
    st.apply(&a, Some(item(&a, Some("g"), 4096, 0)));
    let small = std::fs::symlink_metadata(&cag).unwrap().blocks() * 512;
    for i in 1..400 {
        std::fs::create_dir(cag.join(format!("gpuarchiver-a{i:05}"))).unwrap();
    }
    let grown = std::fs::symlink_metadata(&cag).unwrap().blocks() * 512;
    assert!(grown > small, "the dir grew: {small} -> {grown}");
    st.restat_ancestors(&rel_a);
    // `julia` measured: its own entry and the nested dir's, as the measure saw them.
    let own = |p: &Path| std::fs::symlink_metadata(p).unwrap().blocks() * 512;
    let (j, c, r) = (own(&julia), own(&cag), own(&root.canonical));
    st.restat_ancestors(Path::new("org.julialang.julia"));
    st.apply(&julia, Some(item(&julia, None, j + c, 0)));
    st.set_dir_stat(Path::new("org.julialang.julia"), DirEntryStat::of(&julia));
    st.set_dir_stat(
        Path::new("org.julialang.julia/com.apple.gpuarchiver"),
        DirEntryStat::of(&cag),
    );
    assert_eq!(st.total.allocated_bytes, r + j + c + 4096);
    // Later growth moves the total by exactly the growth.
    for i in 400..800 {
        std::fs::create_dir(cag.join(format!("gpuarchiver-a{i:05}"))).unwrap();
    }
    st.restat_ancestors(&rel_a);
    assert_eq!(st.total.allocated_bytes, r + j + own(&cag) + 4096);
}

/// A top-level `com.apple.gpuarchiver` holding something unclaimed is its rule's item (its measure
/// holds its own entry); archives added in it grow that entry. The growth reaches the item and the
/// total once, and a later measure of the item (its entry at the new size) does not count it
/// twice. (With the growth kept out of a claimed top item the total fell behind `du`.)
#[test]
fn a_structure_dir_that_is_its_rules_item_carries_its_growth_once() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let root = Root::new(RootKind::Cache, dir.path()).unwrap();
    let mut st = RootState::new(root.clone());
    let top = root.canonical.join("com.apple.gpuarchiver");
    std::fs::create_dir(&top).unwrap();
    std::fs::write(top.join("stray"), b"x").unwrap();
    let a = top.join("gpuarchiver-a00000");
    std::fs::create_dir(&a).unwrap();
    let own = |p: &Path| std::fs::symlink_metadata(p).unwrap().blocks() * 512;
    st.apply(
        &top,
        Some(item(&top, Some("metal-gpuarchiver"), own(&top) + 4096, 1)),
    );
    st.apply(&a, Some(item(&a, Some("metal-gpuarchiver"), 4096, 0)));
    st.total.allocated_bytes += own(&root.canonical);
    st.set_dir_stat(Path::new(""), DirEntryStat::of(&root.canonical));
    st.set_dir_stat(Path::new("com.apple.gpuarchiver"), DirEntryStat::of(&top));
    let (before, small) = (st.total.allocated_bytes, own(&top));
    for i in 1..400 {
        std::fs::create_dir(top.join(format!("gpuarchiver-a{i:05}"))).unwrap();
    }
    let grown = own(&top) - small;
    assert!(grown > 0, "the dir grew");
    let rel_a = root.relative(&a).unwrap().to_path_buf();
    st.restat_ancestors(&rel_a);
    assert_eq!(st.total.allocated_bytes, before + grown, "grown {grown}");
    st.apply(
        &top,
        Some(item(&top, Some("metal-gpuarchiver"), own(&top) + 4096, 1)),
    );
    assert_eq!(
        st.total.allocated_bytes,
        before + grown,
        "after the re-measure"
    );
}

/// Names keep their bytes through the prefix table, its overflow (past 256 prefixes names are kept
/// whole) and the compaction after many removals; each is found again by its path.
#[test]
fn names_survive_prefixes_their_overflow_and_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let root = Root::new(RootKind::Cache, dir.path()).unwrap();
    let mut st = RootState::new(root.clone());
    let name = |i: usize| match i % 4 {
        0 => format!("p{i}-tail"),
        1 => format!("gpuarchiver-{i:06}"),
        2 => format!("noseparator{i}"),
        _ => format!("{}.{i}", "long".repeat(20)),
    };
    let n = 40_000;
    for i in 0..n {
        let p = root.canonical.join("d").join(name(i));
        st.apply(&p, Some(item(&p, Some("p"), 512 * (i as u64 + 1), 1)));
    }
    // Removing most items compacts the arena (more than half of it garbage).
    for i in (0..n).filter(|i| i % 5 != 0) {
        st.apply(&root.canonical.join("d").join(name(i)), None);
    }
    let want: BTreeSet<PathBuf> = (0..n)
        .filter(|i| i % 5 == 0)
        .map(|i| PathBuf::from("d").join(name(i)))
        .collect();
    let got: BTreeSet<PathBuf> = st.items().into_iter().map(|(p, _)| p).collect();
    assert_eq!(got, want);
    for rel in &want {
        assert!(st.measure_at(rel).is_some(), "{rel:?} not found");
    }
    // Compacted: at most half of the arena is garbage (without compaction, 4/5 of it would be).
    assert!(st.names.arena.len() >= 1 << 16);
    assert!(st.names.arena.garbage * 2 < st.names.arena.len());
    assert_eq!(
        st.total.allocated_bytes,
        (0..n as u64)
            .filter(|i| i % 5 == 0)
            .map(|i| 512 * (i + 1))
            .sum::<u64>()
    );
}

/// Past the bundle names a slot holds (15 per root), items keep their bundle in the side table.
#[test]
fn many_bundles_come_back_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let root = Root::new(RootKind::Cache, dir.path()).unwrap();
    let mut st = RootState::new(root.clone());
    st.begin_load();
    let dev = std::os::unix::fs::MetadataExt::dev(&std::fs::metadata(&root.canonical).unwrap());
    let mut want = Vec::new();
    for i in 0..40 {
        let path = root.canonical.join(format!("x/clone-{i:02}"));
        let mut it = item(&path, Some("p"), 4096, 1);
        it.dev = dev;
        it.captures.bundle = Some(format!("com.example.app{}", i % 20));
        st.load_item(&it);
        want.push(it);
    }
    let got: Vec<Item> = st.items().into_iter().map(|(_, i)| i).collect();
    assert_eq!(got, want);
}
