//! Regression: files CacheWatch writes were redirected through links another user planted, or
//! replaced devices. `scan --openmetrics --output FILE` canonicalized a symlinked FILE and renamed
//! its temporary over the target: root's run overwrote `/root/victim` through `cw.prom ->
//! /root/victim` planted by nobody in a sticky dir, replaced a character device by a regular file,
//! and `--output /dev/stdout` with stdout on `/dev/null` replaced `/dev/null`; `launchd-plist
//! --auto-reclaim --config LINK` wrote through the link the same way and replaced a dangling one;
//! a history database path swapped for a symlink made SQLite create a database at its target.
//!
//! The links are planted as nobody (uid 65534) through `setpriv`; device nodes are made only
//! inside a private mount namespace (`unshare -m`) on a scratch tmpfs, never in the real `/dev`.
//! Where that cannot be done (not root, no `setpriv` or `unshare`) the test is skipped with a
//! printed reason.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_cachewatch");
const NOBODY: u32 = 65534;

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// Runs `argv` as nobody; `false` (with the reason printed) when that cannot be done here.
fn as_nobody(argv: &[&str]) -> bool {
    if euid() != 0 {
        println!("skipped: not root, so no other user can plant a link");
        return false;
    }
    match Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .args(argv)
        .status()
    {
        Ok(s) if s.success() => true,
        other => {
            println!("skipped: setpriv cannot run {argv:?} as nobody: {other:?}");
            false
        }
    }
}

/// A test tree: `base` (0755) with `cache/` (a root with one archive), `config.toml`, `data/`, a
/// sticky world-writable `shared/` and a root-owned `root-only/victim`.
struct Tree {
    _tmp: tempfile::TempDir,
    base: PathBuf,
}

impl Tree {
    fn new() -> Tree {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().to_path_buf();
        fs::set_permissions(&base, fs::Permissions::from_mode(0o755)).unwrap();
        cachewatch_testkit::tree::make_archives(&base.join("cache/org.example.app"), "a", 2, 1);
        let shared = base.join("shared");
        fs::create_dir(&shared).unwrap();
        fs::set_permissions(&shared, fs::Permissions::from_mode(0o1777)).unwrap();
        fs::create_dir(base.join("root-only")).unwrap();
        fs::write(base.join("root-only/victim"), "precious\n").unwrap();
        fs::set_permissions(
            base.join("root-only/victim"),
            fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        Tree { _tmp: tmp, base }
    }

    fn p(&self, rel: &str) -> PathBuf {
        self.base.join(rel)
    }

    fn root_arg(&self) -> String {
        format!("cache={}", self.p("cache").display())
    }

    /// The binary, with this tree's config and data dir.
    fn cmd(&self) -> Command {
        let mut c = Command::new(BIN);
        c.arg("--config")
            .arg(self.p("config.toml"))
            .arg("--data-dir")
            .arg(self.p("data"))
            .env_remove("CACHEWATCH_CONFIG")
            .env_remove("CACHEWATCH_DATA_DIR")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null());
        c
    }

    fn scan_to(&self, output: &Path) -> Output {
        self.cmd()
            .args([
                "scan",
                "--root",
                &self.root_arg(),
                "--openmetrics",
                "--output",
            ])
            .arg(output)
            .output()
            .unwrap()
    }

    fn victim(&self) -> String {
        fs::read_to_string(self.p("root-only/victim")).unwrap()
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn is_link(p: &Path) -> bool {
    fs::symlink_metadata(p).unwrap().file_type().is_symlink()
}

/// Before: root's run wrote the metrics into `/root/victim` (its mode kept), exit 0.
/// After: exit 1, "owned by uid 65534", the victim and the link as they were.
#[test]
fn scan_output_through_a_link_nobody_planted_in_a_sticky_dir_is_refused() {
    let t = Tree::new();
    let link = t.p("shared/cw.prom");
    if !as_nobody(&[
        "ln",
        "-s",
        t.p("root-only/victim").to_str().unwrap(),
        link.to_str().unwrap(),
    ]) {
        return;
    }
    let out = t.scan_to(&link);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = stderr(&out);
    assert!(
        err.contains("symlink owned by uid 65534") && err.contains("shared/cw.prom"),
        "{err}"
    );
    assert_eq!(t.victim(), "precious\n");
    assert!(is_link(&link));
    assert_eq!(
        fs::read_dir(t.p("shared")).unwrap().count(),
        1,
        "a temporary was left"
    );
}

/// Before: `--output -` wrote a file named `-`; `/dev/stdout` was renamed over (with stdout on
/// /dev/null, /dev/null was replaced). After: both are standard output, no file is made.
#[test]
fn scan_output_dash_and_dev_stdout_write_to_standard_output() {
    let t = Tree::new();
    let plain = t
        .cmd()
        .args(["scan", "--root", &t.root_arg(), "--openmetrics"])
        .output()
        .unwrap();
    assert!(plain.status.success(), "{plain:?}");
    let text = String::from_utf8(plain.stdout).unwrap();
    assert!(
        text.contains("cachewatch_producer_items{producer=\"metal-gpuarchiver\"} 2"),
        "{text}"
    );
    for spelling in ["-", "/dev/stdout"] {
        let out = t
            .cmd()
            .current_dir(&t.base)
            .args([
                "scan",
                "--root",
                &t.root_arg(),
                "--openmetrics",
                "--output",
                spelling,
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{spelling}: {out:?}");
        assert_eq!(String::from_utf8(out.stdout).unwrap(), text, "{spelling}");
    }
    assert!(!t.p("-").exists(), "a file named - was written");
}

/// The config a nobody-planted link points to was overwritten by `launchd-plist --auto-reclaim`
/// (and a dangling link replaced by a regular file). Now refused; the link and its (missing)
/// target stay as they were.
#[test]
fn launchd_plist_does_not_write_the_config_through_a_planted_or_dangling_link() {
    let t = Tree::new();
    let link = t.p("shared/config.toml");
    let aim = t.p("root-only/made-by-root.toml");
    if !as_nobody(&["ln", "-s", aim.to_str().unwrap(), link.to_str().unwrap()]) {
        return;
    }
    let out = Command::new(BIN)
        .arg("--config")
        .arg(&link)
        .arg("--data-dir")
        .arg(t.p("data"))
        .args(["launchd-plist", "--auto-reclaim", "--program", "/opt/cw"])
        .env("HOME", &t.base)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        stderr(&out).contains("owned by uid 65534"),
        "{}",
        stderr(&out)
    );
    assert!(out.stdout.is_empty(), "a plist was printed: {out:?}");
    assert!(is_link(&link));
    assert!(!aim.exists(), "the link's target was created");

    // Our own dangling link, in a dir only we can write: not replaced, nothing created.
    let own = t.p("root-only/config.toml");
    std::os::unix::fs::symlink("missing.toml", &own).unwrap();
    let out = Command::new(BIN)
        .arg("--config")
        .arg(&own)
        .arg("--data-dir")
        .arg(t.p("data"))
        .args(["launchd-plist", "--auto-reclaim", "--program", "/opt/cw"])
        .env("HOME", &t.base)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        stderr(&out).contains("which does not exist"),
        "{}",
        stderr(&out)
    );
    assert!(is_link(&own));
    assert!(!t.p("root-only/missing.toml").exists());
}

/// A user other than root cannot keep the owner of a file it does not own: refused rather than
/// taking the file over (root's textfile in nobody's dir stays root's, as it was).
#[test]
fn another_users_file_is_not_taken_over() {
    let t = Tree::new();
    if euid() != 0 {
        println!("skipped: not root");
        return;
    }
    let dir = t.p("nobodys");
    fs::create_dir(&dir).unwrap();
    std::os::unix::fs::chown(&dir, Some(NOBODY), Some(NOBODY)).unwrap();
    let prom = dir.join("cw.prom");
    fs::write(&prom, "root's\n").unwrap();
    fs::set_permissions(&prom, fs::Permissions::from_mode(0o644)).unwrap();
    fs::set_permissions(t.p("cache"), fs::Permissions::from_mode(0o755)).unwrap();
    let out = match Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN])
        .arg("--config")
        .arg(dir.join("config.toml"))
        .arg("--data-dir")
        .arg(dir.join("data"))
        .args(["scan", "--root", &t.root_arg(), "--openmetrics", "--output"])
        .arg(&prom)
        .env("HOME", &dir)
        .stdin(Stdio::null())
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            println!("skipped: no setpriv: {e}");
            return;
        }
    };
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        stderr(&out).contains("is owned by uid 0"),
        "{}",
        stderr(&out)
    );
    assert_eq!(fs::read_to_string(&prom).unwrap(), "root's\n");
    assert_eq!(fs::metadata(&prom).unwrap().uid(), 0);
}

/// Inside a private mount namespace with a scratch tmpfs: a character device (1,3: a null device)
/// as `--output`, a link to it, and `--output /dev/stdout` with stdout on it. Before: the device
/// was replaced by a regular file. After: the first two are refused (exit 1, "character
/// device"), the third writes into the device; it stays a character device throughout.
#[test]
fn a_character_device_is_never_replaced() {
    if euid() != 0 {
        println!("skipped: not root (mknod and unshare need it)");
        return;
    }
    let t = Tree::new();
    let scratch = t.p("scratch");
    fs::create_dir(&scratch).unwrap();
    let script = r#"
        set -u
        d="$1"; shift
        mount -t tmpfs -o size=1m,mode=0755 scratch "$d" || exit 90
        mknod "$d/null" c 1 3 || exit 91
        ln -s null "$d/cw.prom"
        "$@" --output "$d/null" >/dev/null 2>"$d/err1"; echo "direct=$?"
        "$@" --output "$d/cw.prom" >/dev/null 2>"$d/err2"; echo "link=$?"
        "$@" --output /dev/stdout >"$d/null" 2>"$d/err3"; echo "stdout=$?"
        echo "type=$(stat -c %F "$d/null")"
        echo "link-type=$(stat -c %F "$d/cw.prom")"
        echo "err1=$(cat "$d/err1")"
        echo "err2=$(cat "$d/err2")"
        echo "err3=$(cat "$d/err3")"
        echo "files=$(ls -A "$d" | tr '\n' ' ')"
    "#;
    let out = match Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", script, "sh"])
        .arg(&scratch)
        .arg(BIN)
        .arg("--config")
        .arg(t.p("config.toml"))
        .arg("--data-dir")
        .arg(t.p("data"))
        .args(["scan", "--root", &t.root_arg(), "--openmetrics"])
        .stdin(Stdio::null())
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            println!("skipped: no unshare: {e}");
            return;
        }
    };
    if matches!(out.status.code(), Some(90 | 91)) || !out.status.success() {
        println!("skipped: cannot mount a scratch tmpfs in a private namespace: {out:?}");
        return;
    }
    let report = String::from_utf8(out.stdout).unwrap();
    let line = |key: &str| {
        report
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=")))
            .unwrap_or_else(|| panic!("no {key} in {report}"))
            .to_owned()
    };
    assert_eq!(line("direct"), "1", "{report}");
    assert_eq!(line("link"), "1", "{report}");
    assert_eq!(line("stdout"), "0", "{report}");
    assert_eq!(line("type"), "character special file", "{report}");
    assert_eq!(line("link-type"), "symbolic link", "{report}");
    assert!(
        line("err1").contains("is a character device, not a regular file"),
        "{report}"
    );
    assert!(line("err2").contains("is a character device"), "{report}");
    assert_eq!(line("err3"), "", "{report}");
    assert_eq!(line("files"), "cw.prom err1 err2 err3 null ", "{report}");
    // The namespace's tmpfs is gone with it: the scratch dir here is empty.
    assert_eq!(fs::read_dir(&scratch).unwrap().count(), 0);
}

/// The history database path swapped for a symlink: SQLite followed it and created a database at
/// the link's target. Now refused before SQLite opens it; the target is not created.
#[test]
fn a_history_database_that_is_a_symlink_is_refused() {
    let t = Tree::new();
    fs::create_dir(t.p("data")).unwrap();
    let aim = t.p("root-only/elsewhere.db");
    std::os::unix::fs::symlink(&aim, t.p("data/cachewatch.db")).unwrap();
    fs::write(
        t.p("config.toml"),
        "[[auto_reclaim]]\nname = \"m\"\nproducers = [\"metal-gpuarchiver\"]\nolder_than = \"1h\"\nevery = \"1h\"\n",
    )
    .unwrap();
    let out = t
        .cmd()
        .args(["reclaim", "--rules", "--yes", "--root", &t.root_arg()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = stderr(&out);
    assert!(
        err.contains("cachewatch.db") && err.contains("is a symlink"),
        "{err}"
    );
    assert!(
        !aim.exists(),
        "SQLite created a database at the link's target"
    );
    assert!(is_link(&t.p("data/cachewatch.db")));
}
