//! What only a Mac can show: the `getattrlistbulk` scan against BSD `du` on a real APFS tree, the
//! private size of a `cp -c` clone, the temp and cache dirs from `confstr` against `getconf`, and
//! libproc seeing a child's open file and mapped executable. Compiled everywhere with
//! `cargo check --tests --target aarch64-apple-darwin`; run on the macOS CI job.

#![cfg(target_os = "macos")]
#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cachewatch_core::platform;
use cachewatch_core::scan::scan_root;
use cachewatch_core::{Catalogue, Root, RootKind};

/// `/usr/bin/du -s -k -x` of `p` (BSD du: KiB rounded up, hard links once, one device).
fn bsd_du_kib(p: &Path) -> u64 {
    let out = Command::new("/usr/bin/du")
        .args(["-s", "-k", "-x"])
        .arg(p)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    text.split_whitespace().next().unwrap().parse().unwrap()
}

fn write(p: &Path, len: usize) {
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, vec![0x5a_u8; len]).unwrap();
}

#[test]
fn the_bulk_listing_scan_equals_du_on_a_real_tree() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    // A flat dir of many entries (several bulk calls; past the scan's serial part), a nested
    // tree, hard links, symlinks, a non-UTF-8 name.
    for i in 0..3000 {
        write(&r.join(format!("flat/entry-{i:05}")), i % 7 * 1000);
    }
    for i in 0..40 {
        write(&r.join(format!("deep/a/b/c/{i}")), 50_000);
    }
    write(&r.join("big"), 5 << 20);
    fs::hard_link(r.join("big"), r.join("big-again")).unwrap();
    std::os::unix::fs::symlink("big", r.join("link")).unwrap();
    std::os::unix::fs::symlink(r.join("deep"), r.join("deep-link")).unwrap();
    write(&r.join("odd-\u{e9}"), 10);
    let root = Root::new(RootKind::Temp, r).unwrap();
    let scan = scan_root(&root, &Catalogue::builtin());
    assert!(scan.issues.is_empty(), "{:?}", scan.issues);
    assert_eq!(scan.total.allocated_bytes.div_ceil(1024), bsd_du_kib(r));
    // `find -x` counts, as BSD find prints them.
    let count = |ty: &str| {
        let out = Command::new("/usr/bin/find")
            .arg(r)
            .args(["-x", "-type", ty])
            .output()
            .unwrap();
        out.stdout.iter().filter(|b| **b == b'\n').count() as u64
    };
    assert_eq!(scan.total.dirs, count("d"));
    assert_eq!(scan.total.files, count("f") + count("l"));
}

#[test]
fn a_cp_c_clone_frees_nothing_until_its_source_goes() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("source.bin");
    write(&src, 4 << 20);
    let clone = t.path().join("clone.bin");
    let ok = Command::new("/bin/cp")
        .arg("-c")
        .arg(&src)
        .arg(&clone)
        .status()
        .unwrap();
    assert!(ok.success());
    assert!(
        platform::can_share_blocks(t.path()),
        "the temp dir is not on APFS"
    );
    assert_eq!(platform::private_bytes(&clone).unwrap(), 0);
    assert_eq!(platform::private_bytes(&src).unwrap(), 0);
    // Written to, the clone owns the blocks it rewrote.
    fs::write(&clone, vec![1u8; 4 << 20]).unwrap();
    assert!(platform::private_bytes(&clone).unwrap() >= 4 << 20);
}

fn getconf(name: &str) -> PathBuf {
    let out = Command::new("/usr/bin/getconf").arg(name).output().unwrap();
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

#[test]
fn temp_and_cache_roots_are_the_dirs_confstr_names() {
    let roots = cachewatch_core::roots::default_root_paths();
    let of = |k: RootKind| roots.iter().find(|(kind, _)| *kind == k).unwrap().1.clone();
    let canon = |p: PathBuf| fs::canonicalize(p).unwrap();
    assert_eq!(
        canon(of(RootKind::Temp)),
        canon(getconf("DARWIN_USER_TEMP_DIR"))
    );
    assert_eq!(
        canon(of(RootKind::Cache)),
        canon(getconf("DARWIN_USER_CACHE_DIR"))
    );
    // The code-sign clone dir is `X`, beside `T`.
    let t = canon(of(RootKind::Temp));
    assert_eq!(of(RootKind::CodeSignClones).file_name().unwrap(), "X");
    assert_eq!(
        canon(of(RootKind::CodeSignClones).parent().unwrap().to_path_buf()),
        t.parent().unwrap()
    );
}

#[test]
fn libproc_sees_a_child_s_open_file_and_mapped_executable() {
    let t = tempfile::tempdir().unwrap();
    let held = t.path().join("held.txt");
    fs::write(&held, b"open while the child runs").unwrap();
    // A copy of sleep(1) run from the temp dir: its executable is a file mapping of that path.
    let exe = t.path().join("cw-sleep");
    fs::copy("/bin/sleep", &exe).unwrap();
    let mut child = Command::new(&exe)
        .arg("30")
        .stdin(Stdio::from(fs::File::open(&held).unwrap()))
        .spawn()
        .unwrap();
    let pid = child.id();
    let (held, exe) = (
        fs::canonicalize(&held).unwrap(),
        fs::canonicalize(&exe).unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    let (mut saw_open, mut saw_map) = (false, false);
    while Instant::now() < deadline && !(saw_open && saw_map) {
        let open = platform::open_files();
        saw_open = open.files.iter().any(|(p, f)| *p == pid && *f == held);
        saw_map = open.files.iter().any(|(p, f)| *p == pid && *f == exe);
        std::thread::sleep(Duration::from_millis(100));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        saw_open,
        "libproc did not report {} open in {pid}",
        held.display()
    );
    assert!(
        saw_map,
        "libproc did not report {} mapped in {pid}",
        exe.display()
    );
}
