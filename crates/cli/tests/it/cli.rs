//! The `cachewatch` binary on real temp trees, with its config and data dir in temp dirs.
//!
//! Expected figures come from `du`, from hand counts of what the test built, and from the disk.

#![allow(clippy::unwrap_used)]

use std::fs::{self, File};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use cachewatch_testkit::tree::{days_ago, set_tree_mtime, write_file};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_cachewatch");

/// A sandbox: a temp root, a cache root, a config path and a data dir, all under one temp dir.
struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        for d in ["temp", "cache", "data"] {
            fs::create_dir(dir.path().join(d)).unwrap();
        }
        Sandbox { dir }
    }
    fn temp(&self) -> PathBuf {
        self.dir.path().join("temp")
    }
    fn cache(&self) -> PathBuf {
        self.dir.path().join("cache")
    }
    fn config(&self) -> PathBuf {
        self.dir.path().join("config.toml")
    }
    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }
    fn roots(&self) -> Vec<String> {
        vec![
            "--root".into(),
            format!("temp={}", self.temp().display()),
            "--root".into(),
            format!("cache={}", self.cache().display()),
        ]
    }
    /// The binary with this sandbox's config and data dir, no stdin, none of the user's env.
    fn cmd(&self) -> Command {
        let mut c = Command::new(BIN);
        c.env_remove("CACHEWATCH_CONFIG")
            .env_remove("CACHEWATCH_DATA_DIR")
            .env_remove("RUST_LOG")
            .arg("--config")
            .arg(self.config())
            .arg("--data-dir")
            .arg(self.data())
            .stdin(Stdio::null());
        c
    }
    fn run(&self, args: &[&str]) -> Output {
        self.cmd().args(args).output().unwrap()
    }
    fn run_roots(&self, args: &[&str]) -> Output {
        self.cmd().args(args).args(self.roots()).output().unwrap()
    }
}

fn json(out: &Output) -> Value {
    assert!(
        out.status.code() == Some(0) || out.status.code() == Some(3),
        "status {:?}, stderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `du <flag> -s -x` of the paths together (`-c` total: hard links counted once across them).
fn du(flag: &str, paths: &[PathBuf]) -> u64 {
    cachewatch_testkit::du::total(flag, paths)
}

/// `n` Metal gpuarchiver dirs in the cache root, each with two files; returns their paths.
fn gpuarchiver_dirs(sb: &Sandbox, prefix: &str, n: usize) -> Vec<PathBuf> {
    (0..n)
        .map(|i| {
            let d = sb
                .cache()
                .join(format!("com.apple.gpuarchiver/gpuarchiver-{prefix}{i:04}"));
            write_file(&d.join("archive.metallib"), 3000 + i * 100);
            write_file(&d.join("sub/index"), 10);
            d
        })
        .collect()
}

fn producer<'a>(scan: &'a Value, id: &str) -> Option<&'a Value> {
    scan["producers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == id)
}

#[test]
fn scan_totals_equal_du() {
    let sb = Sandbox::new();
    write_file(&sb.temp().join("a/b/c/file"), 123_457);
    write_file(&sb.temp().join("small"), 1);
    write_file(&sb.temp().join("empty-ish"), 0);
    fs::create_dir_all(sb.temp().join("empty/dir")).unwrap();
    fs::hard_link(sb.temp().join("a/b/c/file"), sb.temp().join("hardlink")).unwrap();
    std::os::unix::fs::symlink("/etc", sb.temp().join("link-out")).unwrap();
    let sparse = File::create(sb.temp().join("sparse")).unwrap();
    sparse.set_len(10 << 20).unwrap();
    gpuarchiver_dirs(&sb, "x", 3);

    let out = sb.run_roots(&["scan", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = json(&out);
    for (i, root) in [sb.temp(), sb.cache()].iter().enumerate() {
        let r = &v["roots"][i];
        assert_eq!(r["path"], root.display().to_string());
        assert_eq!(
            r["allocated_bytes"],
            du("-B1", std::slice::from_ref(root)),
            "{root:?}"
        );
        assert_eq!(
            r["apparent_bytes"],
            du("-b", std::slice::from_ref(root)),
            "{root:?}"
        );
        assert_eq!(r["unreadable"], 0);
    }
    // Hand count of temp: dirs temp, a, a/b, a/b/c, empty, empty/dir; files: file, small,
    // empty-ish, link-out, sparse (`hardlink` is the inode of `file`: counted once, as du does).
    assert_eq!(v["roots"][0]["dirs"], 6);
    assert_eq!(v["roots"][0]["files"], 5);
    // Items of temp: top-level entries a, small, empty-ish, empty, hardlink, link-out, sparse.
    assert_eq!(v["roots"][0]["items"], 7);
}

#[test]
fn scan_counts_producers_as_built() {
    let sb = Sandbox::new();
    let gpu = gpuarchiver_dirs(&sb, "y", 7);
    let katago: Vec<PathBuf> = (0..4)
        .map(|i| {
            let d = sb.temp().join(format!(
                "model_{}_{}_1700000000{i:03}.mlmodelc",
                99_000 + i,
                i
            ));
            write_file(&d.join("model.mil"), 20_000);
            write_file(&d.join("weights/weight.bin"), 50_000 + i * 1000);
            d
        })
        .collect();
    write_file(&sb.temp().join("unknown-tool/blob"), 7777);

    let v = json(&sb.run_roots(&["scan", "--json"]));
    let g = producer(&v, "metal-gpuarchiver").expect("gpuarchiver producer listed");
    assert_eq!(g["items"], 7);
    assert_eq!(g["allocated_bytes"], du("-B1", &gpu));
    assert_eq!(g["apparent_bytes"], du("-b", &gpu));
    let k = producer(&v, "katago-coreml").expect("katago producer listed");
    assert_eq!(k["items"], 4);
    assert_eq!(k["allocated_bytes"], du("-B1", &katago));
    assert_eq!(k["apparent_bytes"], du("-b", &katago));
    assert_eq!(v["producers"].as_array().unwrap().len(), 2);
    let un: Vec<&str> = v["unattributed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["path"].as_str().unwrap())
        .collect();
    let unknown = sb.temp().join("unknown-tool");
    assert!(un.contains(&unknown.to_str().unwrap()), "{un:?}");
}

/// Replaces every number with "[n]", the values of path-like keys with "[path]" and the
/// catalogue's wording (`name`) with "[name]".
fn redact(v: &mut Value) {
    match v {
        Value::Number(_) => *v = Value::String("[n]".into()),
        Value::Array(a) => a.iter_mut().for_each(redact),
        Value::Object(o) => {
            for (k, val) in o.iter_mut() {
                if matches!(k.as_str(), "path" | "canonical" | "root") {
                    *val = Value::String("[path]".into());
                } else if k == "name" {
                    *val = Value::String("[name]".into());
                } else if k == "notes" || (k == "evidence" && val[0].is_string()) {
                    // The catalogue's words about a producer: not the shape under test.
                    *val = Value::String("[text]".into());
                } else if k == "history_key" {
                    // The hex of the root's path bytes and the shape: the sandbox's path varies.
                    *val = Value::String("[key]".into());
                } else {
                    redact(val);
                }
            }
        }
        _ => {}
    }
}

#[test]
fn scan_json_shape() {
    let sb = Sandbox::new();
    gpuarchiver_dirs(&sb, "z", 1);
    write_file(&sb.temp().join("other/file"), 10);
    // An unknown producer: 20 files of one name shape, a group instead of 20 entries.
    for i in 0..20u64 {
        let ms = 1_733_112_345_678 + i * 1_000;
        write_file(&sb.temp().join(format!("trace-{ms}.bin")), 10);
    }
    let mut v = json(&sb.run_roots(&["scan", "--json", "--top", "1"]));
    assert_eq!(v["unattributed"].as_array().unwrap().len(), 1);
    assert_eq!(
        v["unattributed"][0]["path"],
        sb.temp().join("other").display().to_string()
    );
    assert_eq!(v["unattributed_groups"][0]["items"], 20);
    redact(&mut v);
    insta::assert_json_snapshot!("scan_json", v);
}

fn reclaim_tree(sb: &Sandbox) -> (Vec<PathBuf>, PathBuf, PathBuf) {
    let old = gpuarchiver_dirs(sb, "old", 5);
    for d in &old {
        set_tree_mtime(d, days_ago(10));
    }
    let young = gpuarchiver_dirs(sb, "young", 1).remove(0);
    let unattributed = sb.temp().join("not-ours");
    write_file(&unattributed.join("keep-me"), 100);
    set_tree_mtime(&unattributed, days_ago(30));
    (old, young, unattributed)
}

fn paths(v: &Value, key: &str) -> Vec<String> {
    let mut p: Vec<String> = v[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["path"].as_str().unwrap().to_owned())
        .collect();
    p.sort();
    p
}

fn strings(p: &[PathBuf]) -> Vec<String> {
    let mut s: Vec<String> = p.iter().map(|p| p.display().to_string()).collect();
    s.sort();
    s
}

fn audit_rows(sb: &Sandbox) -> i64 {
    let db = sb.data().join("cachewatch.db");
    if !db.exists() {
        return 0;
    }
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row("SELECT count(*) FROM reclaims", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn reclaim_dry_run_deletes_nothing() {
    let sb = Sandbox::new();
    let (old, young, unattributed) = reclaim_tree(&sb);
    let before = du("-b", &[sb.temp(), sb.cache()]);
    let v = json(&sb.run_roots(&["reclaim", "--older-than", "1d", "--dry-run", "--json"]));
    assert_eq!(paths(&v, "planned"), strings(&old));
    assert_eq!(paths(&v, "deleted"), Vec::<String>::new());
    assert_eq!(v["executed"], false);
    assert_eq!(v["freed_bytes"], 0);
    let kept = &v["kept"].as_array().unwrap();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0]["path"], young.display().to_string());
    assert_eq!(kept[0]["reason"], "too-young");
    let parent = sb.cache().join("com.apple.gpuarchiver");
    for p in old.iter().chain([&young, &unattributed, &parent]) {
        assert!(p.exists(), "{p:?} was deleted by a dry run");
    }
    assert_eq!(du("-b", &[sb.temp(), sb.cache()]), before);
    assert_eq!(audit_rows(&sb), 0);
}

#[test]
fn reclaim_without_tty_or_yes_deletes_nothing() {
    let sb = Sandbox::new();
    let (old, young, _) = reclaim_tree(&sb);
    let out = sb.run_roots(&["reclaim", "--older-than", "1d"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("--yes"), "says how to proceed: {text}");
    for p in old.iter().chain([&young]) {
        assert!(p.exists(), "{p:?} deleted without --yes");
    }
    assert_eq!(audit_rows(&sb), 0);
}

#[test]
fn reclaim_yes_deletes_exactly_the_plan_and_audits_it() {
    let sb = Sandbox::new();
    let (old, young, unattributed) = reclaim_tree(&sb);
    let expected_freed = du("-B1", &old);
    let out = sb.run_roots(&[
        "reclaim",
        "--older-than",
        "1d",
        "--producer",
        "metal-gpuarchiver",
        "--yes",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = json(&out);
    assert_eq!(v["executed"], true);
    assert_eq!(paths(&v, "deleted"), strings(&old));
    assert_eq!(v["freed_bytes"], expected_freed);
    assert_eq!(v["errors"].as_array().unwrap().len(), 0);
    for p in &old {
        assert!(!p.exists(), "{p:?} planned but still there");
    }
    assert!(young.join("archive.metallib").exists());
    assert!(unattributed.join("keep-me").exists());
    assert!(sb.cache().join("com.apple.gpuarchiver").is_dir());
    assert_eq!(audit_rows(&sb), old.len() as i64);
}

#[test]
fn unknown_producer_is_an_error_naming_it() {
    let sb = Sandbox::new();
    let out = sb.run_roots(&[
        "reclaim",
        "--older-than",
        "1d",
        "--producer",
        "no-such-thing",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let e = stderr(&out);
    assert!(e.starts_with("cachewatch: error: "), "{e}");
    assert!(e.contains("\"no-such-thing\""), "{e}");
}

#[test]
fn bad_duration_is_a_usage_error() {
    let sb = Sandbox::new();
    let out = sb.run_roots(&["reclaim", "--older-than", "three days"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn bad_root_exits_1_naming_the_path() {
    let sb = Sandbox::new();
    let missing = sb.dir.path().join("no/such/dir");
    let arg = format!("temp={}", missing.display());
    let out = sb.run(&["scan", "--root", &arg]);
    assert_eq!(out.status.code(), Some(1));
    let e = stderr(&out);
    assert!(e.starts_with("cachewatch: error: "), "{e}");
    assert!(e.contains(missing.to_str().unwrap()), "{e}");
    assert_eq!(e.trim_end().lines().count(), 1, "one line: {e}");
}

#[test]
fn malformed_config_exits_1_naming_path_and_line() {
    let sb = Sandbox::new();
    // The bad key is on line 4.
    fs::write(sb.config(), "# mine\n\n[watch]\ndebounce_msecs = 3\n").unwrap();
    let out = sb.run_roots(&["scan"]);
    assert_eq!(out.status.code(), Some(1));
    let e = stderr(&out);
    assert!(e.contains(sb.config().to_str().unwrap()), "{e}");
    assert!(e.contains("line 4"), "{e}");
}

#[test]
fn bad_user_rule_names_the_config_line() {
    let sb = Sandbox::new();
    // The unknown field `colour` is on line 9 of the config file.
    let text = "[reclaim]\nolder_than = \"2d\"\n\n[[producer]]\nid = \"mine\"\nname = \"Mine\"\n\
                root = \"temp\"\nitem = \"mine-*\"\ncolour = \"red\"\nkind = \"leak\"\nreclaim = \"auto\"\n";
    fs::write(sb.config(), text).unwrap();
    let out = sb.run(&["producers"]);
    assert_eq!(out.status.code(), Some(1));
    let e = stderr(&out);
    assert!(e.contains(sb.config().to_str().unwrap()), "{e}");
    assert!(e.contains(":9") || e.contains("line 9"), "{e}");
}

#[test]
fn user_rule_from_config_is_listed_and_attributes() {
    let sb = Sandbox::new();
    let text = "[[producer]]\nid = \"zz-mine\"\nname = \"My tool\"\nroot = \"temp\"\n\
                item = \"mine-*\"\nkind = \"leak\"\nreclaim = \"auto\"\n\
                evidence = [\"https://example.invalid/1\"]\nexamples = [\"mine-1\"]\n";
    fs::write(sb.config(), text).unwrap();
    let list = json(&sb.run(&["producers", "--json"]));
    let builtin = fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../core/producers.toml"
    ))
    .unwrap();
    let builtin_count = builtin
        .lines()
        .filter(|l| l.trim() == "[[producer]]")
        .count();
    let rules = list.as_array().unwrap();
    assert_eq!(rules.len(), builtin_count + 1);
    let mine = rules.iter().find(|r| r["id"] == "zz-mine").unwrap();
    assert_eq!(mine["globs"], serde_json::json!(["mine-*"]));
    write_file(&sb.temp().join("mine-1/x"), 5000);
    write_file(&sb.temp().join("mine-2/y"), 6000);
    let v = json(&sb.run_roots(&["scan", "--json"]));
    let p = producer(&v, "zz-mine").unwrap();
    assert_eq!(p["items"], 2);
    assert_eq!(
        p["allocated_bytes"],
        du("-B1", &[sb.temp().join("mine-1"), sb.temp().join("mine-2")])
    );
}

#[test]
fn explain_names_the_rule_and_the_item() {
    let sb = Sandbox::new();
    let d = gpuarchiver_dirs(&sb, "e", 1).remove(0);
    let inside = d.join("sub/index");
    let v = json(&sb.run_roots(&["explain", "--json", inside.to_str().unwrap()]));
    assert_eq!(v["verdict"]["status"], "claimed");
    assert_eq!(v["verdict"]["producer"], "metal-gpuarchiver");
    assert_eq!(v["verdict"]["item"], d.display().to_string());
    let other = sb.temp().join("whatever/x");
    let v = json(&sb.run_roots(&["explain", "--json", other.to_str().unwrap()]));
    assert_eq!(v["verdict"]["status"], "unattributed");
    let v = json(&sb.run_roots(&["explain", "--json", "/definitely/elsewhere"]));
    assert_eq!(v["verdict"]["status"], "outside-roots");
}

/// How to run the binary so that a `chmod 000` dir is really unreadable.
enum Unprivileged {
    /// Root: re-exec through setpriv as nobody.
    Setpriv,
    /// Not root: permissions already apply.
    AsIs,
}

fn unprivileged() -> Option<Unprivileged> {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    if euid != 0 {
        return Some(Unprivileged::AsIs);
    }
    let ok = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "true"])
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(Unprivileged::Setpriv)
}

#[test]
fn unreadable_dir_gives_exit_3_and_is_reported() {
    let Some(mode) = unprivileged() else {
        println!(
            "SKIPPED: running as root and `setpriv` is not usable, so chmod 000 denies nothing"
        );
        return;
    };
    let sb = Sandbox::new();
    // nobody must be able to reach the root (tempfile makes 0700 dirs).
    fs::set_permissions(sb.dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(sb.temp(), fs::Permissions::from_mode(0o755)).unwrap();
    write_file(&sb.temp().join("readable/f"), 4000);
    write_file(&sb.temp().join("locked/secret"), 4000);
    fs::set_permissions(
        sb.temp().join("readable"),
        fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    fs::set_permissions(
        sb.temp().join("readable/f"),
        fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    fs::set_permissions(sb.temp().join("locked"), fs::Permissions::from_mode(0o000)).unwrap();
    let root_arg = format!("temp={}", sb.temp().display());
    let mut cmd = match mode {
        Unprivileged::Setpriv => {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN]);
            c
        }
        Unprivileged::AsIs => Command::new(BIN),
    };
    let out = cmd
        .env_remove("CACHEWATCH_CONFIG")
        .env_remove("CACHEWATCH_DATA_DIR")
        .args(["--config"])
        .arg(sb.config())
        .args(["scan", "--json", "--root", &root_arg])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    // Let the temp dir be cleaned up.
    fs::set_permissions(sb.temp().join("locked"), fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["roots"][0]["unreadable"], 1);
    let errors = v["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1);
    assert_eq!(
        errors[0]["path"],
        sb.temp().join("locked").display().to_string()
    );
    assert_eq!(errors[0]["kind"], "permission-denied");
    assert!(errors[0]["message"].as_str().is_some_and(|m| !m.is_empty()));
}

/// A deletion the plan cannot foresee fails at execute: exit 3, and the attempt is audited. (A dir
/// the user cannot write is foreseen and kept at planning, `not-deletable_cli.rs`; a root-owned
/// file in a root-owned sticky dir that anyone may write is not: `faccessat` says the dir is
/// writable, the sticky bit refuses the unlink.)
#[test]
fn failed_deletion_gives_exit_3_and_is_audited() {
    let Some(Unprivileged::Setpriv) = unprivileged() else {
        println!("SKIPPED: needs root and a usable `setpriv`, to run the reclaim as nobody");
        return;
    };
    let sb = Sandbox::new();
    let old = gpuarchiver_dirs(&sb, "old", 2);
    // Inside the second item, an immutable file (`chattr +i`): every permission allows its
    // deletion, so the plan cannot foresee that the OS refuses it (EPERM).
    let stuck = old[1].join("stuck");
    write_file(&stuck.join("file"), 100);
    for d in &old {
        set_tree_mtime(d, days_ago(10));
    }
    let root_arg = format!("cache={}", sb.cache().display());
    let walk = Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(sb.dir.path())
        .status()
        .unwrap();
    assert!(walk.success());
    let immutable = |flag: &str| {
        Command::new("chattr")
            .arg(flag)
            .arg(stuck.join("file"))
            .status()
            .is_ok_and(|s| s.success())
    };
    if !immutable("+i") {
        println!("SKIPPED: `chattr +i` is not supported here (file system or no chattr)");
        return;
    }
    fs::set_permissions(sb.dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let mut cmd = Command::new("setpriv");
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN]);
    let out = cmd
        .env_remove("CACHEWATCH_CONFIG")
        .env_remove("CACHEWATCH_DATA_DIR")
        .arg("--config")
        .arg(sb.config())
        .arg("--data-dir")
        .arg(sb.data())
        .args([
            "reclaim",
            "--older-than",
            "1d",
            "--yes",
            "--json",
            "--root",
            &root_arg,
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    // Mutable again before any assertion, so the sandbox can be removed.
    assert!(immutable("-i"));
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(paths(&v, "deleted"), strings(&old[..1]));
    let errors = v["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["path"], old[1].display().to_string());
    assert!(!old[0].exists());
    assert!(stuck.join("file").exists());
    // Both attempts are audited: the deletion and the failure.
    assert_eq!(audit_rows(&sb), 2);
}

/// Runs `cachewatch <args>` on a pseudo-terminal (util-linux `script`), typing `answer`.
fn run_on_tty(sb: &Sandbox, args: &[String], answer: &str) -> Option<Output> {
    let mut line = format!(
        "{BIN} --config {} --data-dir {}",
        sb.config().display(),
        sb.data().display()
    );
    for a in args {
        line.push(' ');
        line.push_str(a);
    }
    let mut child = Command::new("script")
        .args(["-q", "-e", "-c", &line, "/dev/null"])
        .env_remove("CACHEWATCH_CONFIG")
        .env_remove("CACHEWATCH_DATA_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(answer.as_bytes())
        .unwrap();
    Some(child.wait_with_output().unwrap())
}

#[test]
fn reclaim_on_a_terminal_asks_and_deletes_only_after_y() {
    let sb = Sandbox::new();
    let (old, young, _) = reclaim_tree(&sb);
    let mut args = vec!["reclaim".to_owned(), "--older-than".into(), "1d".into()];
    args.extend(sb.roots());
    let Some(out) = run_on_tty(&sb, &args, "n\n") else {
        println!("SKIPPED: util-linux `script` is not installed, so no terminal can be made");
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains("[y/N]"), "asked: {text}");
    assert!(old.iter().all(|p| p.exists()), "deleted after `n`: {text}");
    assert_eq!(audit_rows(&sb), 0);

    let out = run_on_tty(&sb, &args, "y\n").unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(old.iter().all(|p| !p.exists()), "kept after `y`: {text}");
    assert!(young.exists());
    assert_eq!(audit_rows(&sb), old.len() as i64);
}

/// Regression: an item whose name is not UTF-8 made `reclaim --json` (after deleting) and
/// `explain --json` fail with "path contains invalid UTF-8 characters" and a truncated document.
/// Paths are now written as text with U+FFFD for the odd bytes.
#[test]
fn non_utf8_item_name_does_not_break_reclaim_and_explain_json() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let sb = Sandbox::new();
    let name = OsStr::from_bytes(b"gpuarchiver-\xff\xfe");
    let odd = sb.cache().join("com.apple.gpuarchiver").join(name);
    write_file(&odd.join("archive.metallib"), 3000);
    set_tree_mtime(&odd, days_ago(10));
    let text = format!(
        "{}/gpuarchiver-\u{fffd}\u{fffd}",
        odd.parent().unwrap().display()
    );

    let out = sb.run_roots(&["reclaim", "--older-than", "1d", "--yes", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = json(&out);
    assert_eq!(paths(&v, "planned"), vec![text.clone()]);
    assert_eq!(paths(&v, "deleted"), vec![text.clone()]);
    assert!(!odd.exists());
    assert_eq!(audit_rows(&sb), 1);

    write_file(&odd.join("archive.metallib"), 3000);
    let out = sb
        .cmd()
        .arg("explain")
        .arg(odd.join("archive.metallib"))
        .arg("--json")
        .args(sb.roots())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = json(&out);
    assert_eq!(v["verdict"]["status"], "claimed");
    assert_eq!(v["verdict"]["item"], text);
}

/// The audit rows go in before anything is deleted: when they cannot be written (a trigger makes
/// every insert into `reclaims` fail), the reclaim fails naming the database and deletes nothing.
#[test]
fn reclaim_refuses_to_delete_when_the_audit_rows_cannot_be_written_first() {
    let sb = Sandbox::new();
    let (old, _, _) = reclaim_tree(&sb);
    let db = sb.data().join("cachewatch.db");
    drop(cachewatch::history::History::open(&db).unwrap());
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "CREATE TRIGGER no_audit BEFORE INSERT ON reclaims \
         BEGIN SELECT RAISE(ABORT, 'audit refused by the test'); END;",
    )
    .unwrap();
    drop(conn);
    let before = du("-b", &[sb.temp(), sb.cache()]);
    let out = sb.run_roots(&["reclaim", "--older-than", "1d", "--yes"]);
    assert_ne!(out.status.code(), Some(0));
    let err = stderr(&out);
    assert!(err.contains(&db.display().to_string()), "{err}");
    assert!(err.contains("nothing deleted"), "{err}");
    for p in &old {
        assert!(p.exists(), "{p:?} deleted without an audit row");
    }
    assert_eq!(du("-b", &[sb.temp(), sb.cache()]), before);
    assert_eq!(audit_rows(&sb), 0);
}

/// After a reclaim every audit row carries its real outcome: none is left at `attempt`.
#[test]
fn reclaim_fills_every_attempt_row_with_its_outcome() {
    let sb = Sandbox::new();
    let (old, _, _) = reclaim_tree(&sb);
    let out = sb.run_roots(&["reclaim", "--older-than", "1d", "--yes"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let conn = rusqlite::Connection::open(sb.data().join("cachewatch.db")).unwrap();
    let mut rows: Vec<(String, String)> = conn
        .prepare("SELECT path_text, outcome FROM reclaims")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    rows.sort();
    let want: Vec<(String, String)> = strings(&old)
        .into_iter()
        .map(|p| (p, "deleted".to_owned()))
        .collect();
    assert_eq!(rows, want);
}

/// A user rule that would claim the data dir (inside the temp root here) keeps it: the CLI passes
/// the data dir as protected.
#[test]
fn reclaim_keeps_the_data_dir_even_when_a_user_rule_claims_it() {
    let sb = Sandbox::new();
    let data = sb.temp().join("cachewatch-data");
    fs::create_dir(&data).unwrap();
    fs::write(
        sb.config(),
        "[[producer]]\nid = \"grabby\"\nname = \"Claims the data dir\"\nroot = \"temp\"\n\
         item = \"cachewatch-*\"\nkind = \"cache\"\nreclaim = \"auto\"\nmin_age_secs = 0\n",
    )
    .unwrap();
    let scratch = sb.temp().join("cachewatch-scratch");
    write_file(&scratch.join("f"), 100);
    write_file(&data.join("notes"), 100);
    set_tree_mtime(&sb.temp(), days_ago(10));
    let mut cmd = Command::new(BIN);
    cmd.env_remove("CACHEWATCH_CONFIG")
        .env_remove("CACHEWATCH_DATA_DIR")
        .env_remove("RUST_LOG")
        .arg("--config")
        .arg(sb.config())
        .arg("--data-dir")
        .arg(&data)
        .args(["reclaim", "--older-than", "1d", "--yes", "--json"])
        .args(sb.roots())
        .stdin(Stdio::null());
    let out = cmd.output().unwrap();
    let v = json(&out);
    let data_text = fs::canonicalize(&data).unwrap().display().to_string();
    let kept: Vec<&Value> = v["kept"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["path"] == data_text.as_str())
        .collect();
    assert_eq!(kept.len(), 1, "{v:#}");
    assert_eq!(kept[0]["reason"], "holds-protected");
    assert_eq!(kept[0]["protected_path"], data_text.as_str());
    assert!(!scratch.exists(), "{v:#}");
    assert!(data.join("notes").exists());
    assert!(data.join("cachewatch.db").exists());
}
