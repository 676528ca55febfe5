use super::*;
use std::collections::HashMap;
use std::fs;

/// Claims `big/g-*` (depth 2).
struct BigRule;

impl Classify for BigRule {
    fn max_depth(&self, _kind: RootKind) -> usize {
        2
    }

    fn classify(&self, _kind: RootKind, rel: &Path) -> Option<Claim> {
        let mut parts = rel.iter();
        let claimed = parts.next()? == "big"
            && parts.next()?.to_str()?.starts_with("g-")
            && parts.next().is_none();
        claimed.then(|| Claim {
            producer: "big".to_owned(),
            captures: Captures::default(),
        })
    }

    fn item_of(&self, kind: RootKind, rel: &Path) -> Option<(PathBuf, Claim)> {
        let prefix: PathBuf = rel.iter().take(2).collect();
        self.classify(kind, &prefix).map(|c| (prefix, c))
    }
}

/// `du -s -x FLAG` of each path, keyed by path.
fn du_each(flag: &str, paths: &[PathBuf]) -> HashMap<PathBuf, u64> {
    paths
        .iter()
        .cloned()
        .zip(cachewatch_testkit::du::each(flag, paths))
        .collect()
}

fn write(p: &Path, len: usize) {
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, vec![b'x'; len]).unwrap();
}

/// Dirs far past the serial listing threshold and several parallel `lstat` chunks, with claimed
/// and plain entries mixed: every item measures what `du` says and items come in path order.
#[test]
fn big_dirs_listed_in_parallel_give_du_sizes_per_item_in_path_order() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path().canonicalize().unwrap();
    let big = r.join("big");
    for i in 0..700 {
        write(&big.join(format!("g-{i:03}/a")), i * 37 % 9000);
        if i % 7 == 0 {
            write(&big.join(format!("g-{i:03}/sub/b")), 5000 + i);
        }
        if i % 3 == 0 {
            write(&big.join(format!("f-{i:03}")), i * 11);
        }
    }
    for i in 0..150 {
        write(&r.join(format!("t-{i:03}")), i * 101);
    }
    for i in 0..80 {
        write(&r.join(format!("d-{i:02}/x")), 4097 + i);
    }
    let root = Root::new(RootKind::Cache, &r).unwrap();
    let scan = scan_root_with(&root, &BigRule);
    assert!(scan.issues.is_empty(), "{:?}", scan.issues);
    assert_eq!(scan.items.len(), 700 + 1 + 150 + 80);
    for pair in scan.items.windows(2) {
        assert!(
            pair[0].path < pair[1].path,
            "{:?}",
            (&pair[0].path, &pair[1].path)
        );
    }
    // du counts a dir once across its arguments: `big` (which holds the claimed dirs) apart.
    let paths: Vec<PathBuf> = scan
        .items
        .iter()
        .map(|i| i.path.clone())
        .filter(|p| *p != big)
        .collect();
    let (alloc, apparent) = (du_each("-B1", &paths), du_each("-b", &paths));
    let big_alloc = du_each("-B1", std::slice::from_ref(&big))[&big];
    let big_apparent = du_each("-b", std::slice::from_ref(&big))[&big];
    let claimed: Vec<&PathBuf> = paths.iter().filter(|p| p.starts_with(&big)).collect();
    assert_eq!(claimed.len(), 700);
    let claimed_alloc: u64 = claimed.iter().map(|p| alloc[*p]).sum();
    let claimed_apparent: u64 = claimed.iter().map(|p| apparent[*p]).sum();
    for item in &scan.items {
        let (want_alloc, want_apparent) = if item.path == big {
            assert_eq!(item.producer, None);
            (big_alloc - claimed_alloc, big_apparent - claimed_apparent)
        } else {
            (alloc[&item.path], apparent[&item.path])
        };
        assert_eq!(item.measure.allocated_bytes, want_alloc, "{:?}", item.path);
        assert_eq!(
            item.measure.apparent_bytes, want_apparent,
            "{:?}",
            item.path
        );
    }
    let whole = du_each("-B1", std::slice::from_ref(&r));
    assert_eq!(scan.total.allocated_bytes, whole[&r]);
    assert_eq!(
        scan.items.iter().filter(|i| i.producer.is_some()).count(),
        700
    );
}

#[test]
fn path_order_equals_path_cmp_on_walk_built_paths() {
    let names = [
        "a",
        "a-b",
        "a.b",
        "a b",
        "ab",
        "a/b",
        "a/b-c",
        "a/b/c",
        "a-b/c",
        "a0/b",
        "b",
        "A",
        "é",
        "é/x",
        "\u{7f}",
        "a/\u{1}",
        "com.apple.gpuarchiver/gpuarchiver-zz",
        "com.apple.gpuarchiver/gpuarchiver-zz/x",
        "com.apple.gpuarchiver-x",
        "com.apple.gpuarchiver/gpuarchiver-",
        "0123456789abcdef/x",
        "0123456789abcdef",
        "0123456789abcdeg",
        "0123456789abcde/x",
    ];
    let roots = ["/", "/r", "/r/s t"];
    let mut paths: Vec<PathBuf> = Vec::new();
    for root in roots {
        for n in names {
            paths.push(Path::new(root).join(n));
        }
    }
    let mut checked = 0;
    for a in &paths {
        for b in &paths {
            assert_eq!(path_order(a, b, 0), a.cmp(b), "{a:?} vs {b:?}");
            let root = a.iter().next().unwrap().len();
            if b.as_os_str().len() >= root {
                assert_eq!(path_order(a, b, root), a.cmp(b), "{a:?} vs {b:?}");
            }
            checked += 1;
        }
    }
    assert_eq!(checked, paths.len() * paths.len());
}

/// The streaming scan hands over the same items as the collecting one (each once), its summary
/// has the same totals, and its progress counted every entry below the root.
#[test]
fn streaming_scan_visits_each_item_once_with_the_collected_totals_and_counts_entries() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path().canonicalize().unwrap();
    for i in 0..300 {
        write(&r.join(format!("big/g-{i:03}/a")), i * 13);
    }
    for i in 0..20 {
        write(&r.join(format!("t-{i:02}")), i * 101);
    }
    let root = Root::new(RootKind::Cache, &r).unwrap();
    let collected = scan_root_with(&root, &BigRule);
    let progress = ScanProgress::new();
    let mut seen = Vec::new();
    let summary = scan_root_each(&root, &BigRule, &progress, |item| seen.push(item));
    seen.sort_by(|a, b| a.path.cmp(&b.path));
    assert_eq!(seen, collected.items);
    assert_eq!(summary.items, 300 + 1 + 20);
    assert_eq!(summary.total, collected.total);
    assert!(!summary.cancelled);
    // 300 dirs + 300 files + `big` + 20 files below the root; the root's own entry is not listed.
    assert_eq!(progress.entries(), 300 + 300 + 1 + 20);
    assert_eq!(progress.entries(), summary.total.entries() - 1);
    assert_eq!(progress.items(), 321);
    let whole = du_each("-B1", std::slice::from_ref(&r));
    assert_eq!(summary.total.allocated_bytes, whole[&r]);
}

/// A cancel before the walk lists nothing: the summary says so and holds only the root's entry.
#[test]
fn a_cancelled_scan_stops_before_the_next_dir_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path().canonicalize().unwrap();
    write(&r.join("big/g-001/a"), 10);
    let root = Root::new(RootKind::Cache, &r).unwrap();
    let progress = ScanProgress::new();
    progress.cancel();
    let mut visited = 0;
    let summary = scan_root_each(&root, &BigRule, &progress, |_| visited += 1);
    assert!(summary.cancelled);
    assert_eq!(visited, 0);
    assert_eq!(summary.items, 0);
    assert_eq!(progress.entries(), 0);
    assert_eq!(summary.total.dirs, 1);
}

/// The tally's producers and top unattributed entries equal the inventory's own lists (which sort
/// every item), ties included.
#[test]
fn tally_keeps_the_same_producers_and_largest_unattributed_as_the_full_lists() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path().canonicalize().unwrap();
    for i in 0..120 {
        write(&r.join(format!("big/g-{i:03}/a")), i * 7);
    }
    // Fewer than a group's minimum of one shape (`t-<digits>`), so every one is a lone entry,
    // as the full list has them.
    const LONE: usize = crate::shapes::GROUP_MIN_ITEMS as usize - 1;
    for i in 0..LONE {
        // Sizes repeat every 9 entries: ties broken by path.
        write(&r.join(format!("t-{i:02}")), (i % 9) * 5000);
    }
    let root = Root::new(RootKind::Cache, &r).unwrap();
    let inv = Inventory {
        roots: vec![scan_root_with(&root, &BigRule)],
        scanned_at: SystemTime::UNIX_EPOCH,
    };
    for top in [0, 1, 5, 7, 61, 100] {
        let mut tally = Tally::new(top);
        for (root, item) in inv.items() {
            tally.add(root, item);
        }
        assert_eq!(tally.producers(), inv.producers());
        let want: Vec<&PathBuf> = inv
            .unattributed()
            .into_iter()
            .take(top)
            .map(|(_, i)| &i.path)
            .collect();
        let got = tally.unattributed();
        let got: Vec<&PathBuf> = got.iter().map(|u| &u.path).collect();
        assert_eq!(got, want, "top {top}");
    }
}

/// A hard-linked file in two items: its bytes count once (in whichever item the walk met it
/// first), and its mtime is in both items' newest mtime, whatever the walk's order (reclaim's
/// re-check compares the newest mtime of everything in the item).
#[test]
fn a_file_linked_into_two_items_counts_once_and_dates_both() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path().canonicalize().unwrap();
    write(&r.join("big/g-1/shared"), 40_000);
    write(&r.join("big/g-2/own"), 10);
    fs::hard_link(r.join("big/g-1/shared"), r.join("big/g-2/link")).unwrap();
    let newest = SystemTime::now() + std::time::Duration::from_secs(3600);
    fs::File::options()
        .write(true)
        .open(r.join("big/g-1/shared"))
        .unwrap()
        .set_modified(newest)
        .unwrap();
    let root = Root::new(RootKind::Cache, &r).unwrap();
    for _ in 0..20 {
        let scan = scan_root_with(&root, &BigRule);
        let items: Vec<&Item> = scan.items.iter().filter(|i| i.producer.is_some()).collect();
        assert_eq!(items.len(), 2);
        for i in &items {
            assert_eq!(i.measure.newest_mtime, Some(newest), "{:?}", i.path);
        }
        let shared_counted = items
            .iter()
            .filter(|i| i.measure.apparent_bytes >= 40_000)
            .count();
        assert_eq!(shared_counted, 1, "{items:?}");
        let whole = du_each("-B1", std::slice::from_ref(&r));
        assert_eq!(scan.total.allocated_bytes, whole[&r]);
    }
}
