//! The scanner against `du -x` on real trees: totals to the byte (allocated `du -B1`, apparent
//! `du -b`), hard links, sparse files, symlinks, unreadable dirs, odd names, and attribution of
//! items to producers.

#![allow(clippy::unwrap_used)]

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use cachewatch_core::inventory::{IssueKind, Measure, RootScan};
use cachewatch_core::scan::{measure_item_with, scan_root_with, Claim, Classify};
use cachewatch_core::{Root, RootKind};

/// Test rules: per producer, item patterns as components (`*`, `prefix*` or a literal).
struct Rules(Vec<(&'static str, Vec<&'static str>)>);

fn component_matches(pat: &str, name: &OsStr) -> bool {
    let name = name.as_bytes();
    match pat.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix.as_bytes()),
        None => name == pat.as_bytes(),
    }
}

impl Classify for Rules {
    fn max_depth(&self, _kind: RootKind) -> usize {
        self.0.iter().map(|(_, p)| p.len()).max().unwrap_or(0)
    }

    fn classify(&self, _kind: RootKind, rel: &Path) -> Option<Claim> {
        let comps: Vec<&OsStr> = rel.iter().collect();
        self.0
            .iter()
            .find(|(_, pats)| {
                pats.len() == comps.len()
                    && pats
                        .iter()
                        .zip(&comps)
                        .all(|(p, c)| component_matches(p, c))
            })
            .map(|(id, _)| Claim {
                producer: (*id).to_owned(),
                captures: Default::default(),
            })
    }

    fn item_of(&self, kind: RootKind, rel: &Path) -> Option<(PathBuf, Claim)> {
        let mut prefix = PathBuf::new();
        for c in rel.iter() {
            prefix.push(c);
            if let Some(claim) = self.classify(kind, &prefix) {
                return Some((prefix, claim));
            }
        }
        None
    }
}

fn no_rules() -> Rules {
    Rules(Vec::new())
}

fn gpu_rules() -> Rules {
    Rules(vec![
        ("katago-coreml", vec!["model_*"]),
        (
            "metal-gpuarchiver",
            vec!["com.apple.gpuarchiver", "gpuarchiver-*"],
        ),
        (
            "metal-gpuarchiver",
            vec!["*", "com.apple.gpuarchiver", "gpuarchiver-*"],
        ),
    ])
}

/// `du -s -x` of `paths` with `flag` (`-B1` allocated, `-b` apparent): the last line's total
/// (`-c`), so a hard link shared by two paths counts once, as du does.
fn du(flag: &str, paths: &[&Path]) -> u64 {
    cachewatch_testkit::du::total(flag, paths)
}

fn du_alloc(p: &Path) -> u64 {
    du("-B1", &[p])
}

fn du_apparent(p: &Path) -> u64 {
    du("-b", &[p])
}

/// `find -xdev` counts of dirs and non-dirs under `p` (itself included).
fn find_count(p: &Path, dirs: bool) -> u64 {
    let ty: &[&str] = if dirs {
        &["-type", "d"]
    } else {
        &["!", "-type", "d"]
    };
    let out = Command::new("find")
        .arg(p)
        .arg("-xdev")
        .args(ty)
        .arg("-printf")
        .arg("x\n")
        .output()
        .expect("run find");
    out.stdout.iter().filter(|b| **b == b'\n').count() as u64
}

fn scan_dir(dir: &Path, rules: &Rules) -> RootScan {
    let root = Root::new(RootKind::Cache, dir).unwrap();
    scan_root_with(&root, rules)
}

/// The totals equal du's, and equal the root's own entry plus the sum of the items.
fn assert_like_du(scan: &RootScan, dir: &Path) {
    assert_eq!(
        scan.total.allocated_bytes,
        du_alloc(dir),
        "allocated vs du -B1"
    );
    assert_eq!(
        scan.total.apparent_bytes,
        du_apparent(dir),
        "apparent vs du -b"
    );
    let md = fs::symlink_metadata(dir).unwrap();
    let mut sum = Measure {
        allocated_bytes: md.blocks() * 512,
        apparent_bytes: md.size(),
        dirs: 1,
        ..Measure::default()
    };
    for item in &scan.items {
        sum.add(&item.measure);
    }
    assert_eq!(
        sum.allocated_bytes, scan.total.allocated_bytes,
        "root + items"
    );
    assert_eq!(
        sum.apparent_bytes, scan.total.apparent_bytes,
        "root + items"
    );
    assert_eq!(sum.files, scan.total.files);
    assert_eq!(sum.dirs, scan.total.dirs);
}

fn write(p: &Path, len: usize) {
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, vec![b'x'; len]).unwrap();
}

#[test]
fn plain_tree_matches_du_and_find() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    for (i, len) in [0usize, 1, 511, 4095, 4097, 70_000, 1 << 20]
        .iter()
        .enumerate()
    {
        write(&r.join(format!("a/b{}/f{i}", i % 3)), *len);
    }
    write(&r.join("top.txt"), 12_345);
    fs::create_dir_all(r.join("a/empty/deeper/still")).unwrap();
    let scan = scan_dir(r, &no_rules());
    assert_like_du(&scan, r);
    assert_eq!(scan.total.files, find_count(r, false));
    assert_eq!(scan.total.dirs, find_count(r, true));
    assert!(scan.issues.is_empty(), "{:?}", scan.issues);
    // Without rules every top-level entry is one unattributed item.
    let names: Vec<_> = scan
        .items
        .iter()
        .map(|i| i.path.file_name().unwrap())
        .collect();
    assert_eq!(names, ["a", "top.txt"]);
    assert!(scan.items.iter().all(|i| i.producer.is_none()));
    let a = &scan.items[0];
    assert_eq!(a.measure.allocated_bytes, du_alloc(&r.join("a")));
    assert_eq!(a.measure.apparent_bytes, du_apparent(&r.join("a")));
    assert_eq!(a.measure.files, find_count(&r.join("a"), false));
    assert_eq!(a.measure.dirs, find_count(&r.join("a"), true));
    let md = fs::symlink_metadata(r.join("a")).unwrap();
    assert_eq!((a.dev, a.ino), (md.dev(), md.ino()));
}

#[test]
fn hard_links_count_once_per_scan_like_du() {
    let t = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let r = t.path().join("root");
    // Within one item.
    write(&r.join("one/orig"), 100_000);
    fs::hard_link(r.join("one/orig"), r.join("one/link")).unwrap();
    // Across two items.
    write(&r.join("two/orig"), 200_000);
    fs::create_dir(r.join("three")).unwrap();
    fs::hard_link(r.join("two/orig"), r.join("three/link")).unwrap();
    // To a file outside the root: the inside link is the only one du -x sees, so it counts.
    write(&outside.path().join("big"), 300_000);
    fs::hard_link(outside.path().join("big"), r.join("from-outside")).unwrap();

    let scan = scan_dir(&r, &no_rules());
    assert_like_du(&scan, &r);
    let item = |name: &str| {
        scan.items
            .iter()
            .find(|i| i.path.file_name() == Some(OsStr::new(name)))
            .unwrap()
    };
    assert_eq!(
        item("one").measure.allocated_bytes,
        du_alloc(&r.join("one"))
    );
    assert_eq!(
        item("one").measure.files,
        1,
        "two links of one inode: one file"
    );
    let two_three = item("two").measure.allocated_bytes + item("three").measure.allocated_bytes;
    assert_eq!(two_three, du("-B1", &[&r.join("two"), &r.join("three")]));
    assert_eq!(
        item("from-outside").measure.apparent_bytes,
        du_apparent(&r.join("from-outside"))
    );
    assert_eq!(item("from-outside").measure.apparent_bytes, 300_000);
}

#[test]
fn sparse_file_counts_allocated_blocks_and_apparent_size() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    let f = fs::File::create(r.join("sparse")).unwrap();
    f.set_len(1 << 30).unwrap();
    use std::os::unix::fs::FileExt;
    f.write_all_at(b"hello", 123_456_789).unwrap();
    f.sync_all().unwrap();
    let scan = scan_dir(r, &no_rules());
    assert_like_du(&scan, r);
    let item = &scan.items[0].measure;
    assert_eq!(item.apparent_bytes, 1 << 30);
    assert!(item.allocated_bytes < 1 << 20, "{}", item.allocated_bytes);
}

#[test]
fn symlink_to_outside_dir_counts_the_link_not_the_target() {
    let t = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    write(&outside.path().join("payload"), 5 << 20);
    let r = t.path();
    std::os::unix::fs::symlink(outside.path(), r.join("model_1_2_3.mlmodelc")).unwrap();
    write(&r.join("dir/file"), 10);
    std::os::unix::fs::symlink(outside.path(), r.join("dir/link")).unwrap();
    let scan = scan_dir(r, &gpu_rules());
    assert_like_du(&scan, r);
    let link = &scan.items[1];
    assert_eq!(link.path.file_name().unwrap(), "model_1_2_3.mlmodelc");
    assert_eq!(link.producer.as_deref(), Some("katago-coreml"));
    assert!(link.is_symlink);
    let md = fs::symlink_metadata(r.join("model_1_2_3.mlmodelc")).unwrap();
    assert_eq!(link.measure.apparent_bytes, md.size());
    assert_eq!(
        link.measure.apparent_bytes,
        outside.path().as_os_str().len() as u64
    );
    assert_eq!((link.measure.files, link.measure.dirs), (1, 0));
    assert!(scan.total.apparent_bytes < 1 << 20, "target not counted");
}

#[test]
fn ten_thousand_entries_in_one_dir() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    fs::create_dir(r.join("many")).unwrap();
    for i in 0..10_000 {
        fs::write(r.join(format!("many/f{i:05}")), vec![b'y'; i % 7000]).unwrap();
    }
    let scan = scan_dir(r, &no_rules());
    assert_like_du(&scan, r);
    assert_eq!(scan.total.files, 10_000);
    assert_eq!(scan.total.dirs, 2);
}

#[test]
fn empty_root_and_empty_dirs() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    let scan = scan_dir(r, &gpu_rules());
    assert_like_du(&scan, r);
    assert!(scan.items.is_empty());
    assert_eq!((scan.total.files, scan.total.dirs), (0, 1));
    fs::create_dir_all(r.join("e1/e2/e3")).unwrap();
    fs::create_dir_all(r.join("com.apple.gpuarchiver/gpuarchiver-EMPTY")).unwrap();
    let scan = scan_dir(r, &gpu_rules());
    assert_like_du(&scan, r);
    assert_eq!(scan.items.len(), 3);
    assert_eq!(scan.total.dirs, find_count(r, true));
}

#[test]
fn non_utf8_names_are_measured_and_counted() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    let odd = OsStr::from_bytes(b"caf\xe9");
    write(&r.join(odd).join("inner"), 3000);
    write(&r.join("ok").join(OsStr::from_bytes(b"\xff\xfe")), 5000);
    let scan = scan_dir(r, &no_rules());
    assert_like_du(&scan, r);
    assert_eq!(scan.non_utf8_names, 2);
    assert_eq!(scan.total.files, 2);
}

#[test]
fn vanished_root_is_an_issue_and_an_empty_scan() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path().join("gone");
    fs::create_dir(&r).unwrap();
    let root = Root::new(RootKind::Temp, &r).unwrap();
    fs::remove_dir(&r).unwrap();
    let scan = scan_root_with(&root, &no_rules());
    assert_eq!(scan.total, Measure::default());
    assert_eq!(scan.issues.len(), 1);
    assert_eq!(scan.issues[0].path, root.canonical);
}

/// A tree where gpuarchiver dirs live at depth 2 and 3, KataGo bundles at depth 1, with stray
/// entries next to the claimed ones.
fn attribution_tree(r: &Path) {
    let g = r.join("com.apple.gpuarchiver");
    write(&g.join("gpuarchiver-AAAAAA/PersistentState"), 40_000);
    write(&g.join("gpuarchiver-AAAAAA/sub/x"), 9_000);
    write(&g.join("gpuarchiver-BBBBBB/PersistentState"), 300_000);
    write(&g.join("stray.log"), 6_000);
    write(
        &r.join("com.foo.app/com.apple.gpuarchiver/gpuarchiver-CCCCCC/a"),
        77_000,
    );
    write(&r.join("com.foo.app/other/b"), 1_000);
    write(&r.join("model_10_20_30.mlmodelc/weights.bin"), 2 << 20);
    write(&r.join("model_11_20_31.mlmodelc/weights.bin"), 1 << 20);
    write(&r.join("unknown/junk"), 123_456);
}

#[test]
fn items_are_grouped_per_producer_with_du_sizes() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    attribution_tree(r);
    let scan = scan_dir(r, &gpu_rules());
    assert_like_du(&scan, r);
    assert!(scan.issues.is_empty(), "{:?}", scan.issues);
    let claimed: Vec<_> = scan.items.iter().filter(|i| i.producer.is_some()).collect();
    let gpu: Vec<_> = claimed
        .iter()
        .filter(|i| i.producer.as_deref() == Some("metal-gpuarchiver"))
        .collect();
    let kata: Vec<_> = claimed
        .iter()
        .filter(|i| i.producer.as_deref() == Some("katago-coreml"))
        .collect();
    assert_eq!((gpu.len(), kata.len(), claimed.len()), (3, 2, 5));
    for item in &claimed {
        assert_eq!(
            item.measure.allocated_bytes,
            du_alloc(&item.path),
            "{:?}",
            item.path
        );
        assert_eq!(
            item.measure.apparent_bytes,
            du_apparent(&item.path),
            "{:?}",
            item.path
        );
        assert_eq!(item.measure.files, find_count(&item.path, false));
        assert_eq!(item.measure.dirs, find_count(&item.path, true));
    }
    // Unattributed top-level entries count only what lies outside claimed items.
    let unattributed: Vec<_> = scan.items.iter().filter(|i| i.producer.is_none()).collect();
    let names: Vec<_> = unattributed
        .iter()
        .map(|i| i.path.file_name().unwrap())
        .collect();
    assert_eq!(names, ["com.apple.gpuarchiver", "com.foo.app", "unknown"]);
    for u in unattributed {
        let inside: Vec<_> = claimed
            .iter()
            .filter(|c| c.path.starts_with(&u.path))
            .collect();
        let minus = |flag: &str| -> u64 { inside.iter().map(|c| du(flag, &[&c.path])).sum() };
        assert_eq!(u.measure.allocated_bytes, du_alloc(&u.path) - minus("-B1"));
        assert_eq!(u.measure.apparent_bytes, du_apparent(&u.path) - minus("-b"));
    }
    let gpu_dir = &scan.items[0];
    assert_eq!(
        gpu_dir.path,
        r.canonicalize().unwrap().join("com.apple.gpuarchiver")
    );
    assert_eq!((gpu_dir.measure.dirs, gpu_dir.measure.files), (1, 1));
}

#[test]
fn measure_item_agrees_with_the_scan() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    attribution_tree(r);
    let root = Root::new(RootKind::Cache, r).unwrap();
    let rules = gpu_rules();
    let scan = scan_root_with(&root, &rules);
    let inner = r.join("com.apple.gpuarchiver/gpuarchiver-AAAAAA/sub/x");
    let got = measure_item_with(&root, &rules, &inner).unwrap().unwrap();
    let want = scan.items.iter().find(|i| i.path == got.item.path).unwrap();
    assert_eq!(&got.item, want);
    assert!(got.item.path.ends_with("gpuarchiver-AAAAAA"));
    let stray = r.join("com.apple.gpuarchiver/stray.log");
    let got = measure_item_with(&root, &rules, &stray).unwrap().unwrap();
    assert!(got.item.producer.is_none());
    let want = scan.items.iter().find(|i| i.path == got.item.path).unwrap();
    assert_eq!(&got.item, want);
    fs::remove_dir_all(r.join("model_11_20_31.mlmodelc")).unwrap();
    let gone = r.join("model_11_20_31.mlmodelc/weights.bin");
    assert!(measure_item_with(&root, &rules, &gone).unwrap().is_none());
    let outside = tempfile::tempdir().unwrap();
    let err = measure_item_with(&root, &rules, outside.path()).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
}

#[test]
fn newest_mtime_and_birth_time_of_an_item() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    write(&r.join("d/old"), 10);
    write(&r.join("d/sub/new"), 10);
    let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000);
    let new = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_900_000_000);
    let set = |p: &Path, t| {
        fs::File::options()
            .write(true)
            .open(p)
            .unwrap()
            .set_modified(t)
            .unwrap()
    };
    set(&r.join("d/old"), old);
    set(&r.join("d/sub/new"), new);
    let scan = scan_dir(r, &no_rules());
    let m = scan.items[0].measure;
    assert_eq!(m.newest_mtime, Some(new));
    match fs::symlink_metadata(r.join("d")).unwrap().created() {
        Ok(born) => assert_eq!(m.birth_time, Some(born)),
        Err(_) => assert_eq!(m.birth_time, Some(old), "no btime here: the oldest mtime"),
    }
}

/// Unprivileged part of [`unreadable_dirs_are_issues_and_their_own_entry_counts`]: runs in a child
/// process as `nobody` (when the tests run as root) or directly.
fn check_unreadable(r: &Path) {
    let scan = scan_dir(r, &no_rules());
    assert_like_du(&scan, r);
    let mut denied: Vec<_> = scan
        .issues
        .iter()
        .filter(|i| i.kind == IssueKind::PermissionDenied)
        .map(|i| i.path.strip_prefix(r).unwrap().to_path_buf())
        .collect();
    denied.sort();
    // `ok/deep/locked` is opened relative to its parent's fd: reported with its whole path.
    let want: Vec<PathBuf> = [
        "none",
        "noread",
        "nosearch/f",
        "nosearch/sub",
        "ok/deep/locked",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    assert_eq!(denied, want, "{:?}", scan.issues);
    assert_eq!(scan.issues.len(), 5);
}

#[test]
fn unreadable_dirs_are_issues_and_their_own_entry_counts() {
    if let Some(tree) = std::env::var_os("CACHEWATCH_TEST_UNREADABLE_TREE") {
        check_unreadable(Path::new(&tree));
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let r = t.path().join("root");
    for d in ["none", "noread", "nosearch", "ok"] {
        write(&r.join(d).join("f"), 10_000);
        fs::create_dir(r.join(d).join("sub")).unwrap();
    }
    let set_mode = |p: &Path, mode: u32| {
        fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
    };
    // Modes for the owner and for others alike, so the same tree works as root and as nobody.
    set_mode(t.path(), 0o755);
    set_mode(&r, 0o755);
    set_mode(&r.join("none"), 0o000);
    set_mode(&r.join("noread"), 0o333);
    set_mode(&r.join("nosearch"), 0o666);
    write(&r.join("ok/deep/locked/f"), 3000);
    set_mode(&r.join("ok/deep/locked"), 0o000);
    let is_root = unsafe_free_euid_is_root();
    if !is_root {
        check_unreadable(&r);
    } else {
        // As root nothing is denied: re-run this test as nobody. Copy the test binary where nobody
        // can execute it.
        let exe = std::env::current_exe().unwrap();
        let copy = t.path().join("scan_du_test");
        fs::copy(&exe, &copy).unwrap();
        set_mode(&copy, 0o755);
        let out = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&copy)
            .args([
                "--exact",
                &crate::support::test_path(
                    module_path!(),
                    "unreadable_dirs_are_issues_and_their_own_entry_counts",
                ),
                "--test-threads=1",
            ])
            .env("CACHEWATCH_TEST_UNREADABLE_TREE", &r)
            .output()
            .expect("setpriv is installed (util-linux)");
        let text = String::from_utf8_lossy(&out.stdout);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "child failed:\n{text}\n{err}");
        assert!(text.contains("1 passed"), "child ran the test:\n{text}");
    }
    for d in ["none", "noread", "nosearch", "ok/deep/locked"] {
        set_mode(&r.join(d), 0o755);
    }
}

/// True when this process runs as root (reads `/proc/self/status`, so no `unsafe` libc call).
fn unsafe_free_euid_is_root() -> bool {
    let status = fs::read_to_string("/proc/self/status").unwrap();
    let uid_line = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
    uid_line.split_whitespace().nth(2) == Some("0")
}
