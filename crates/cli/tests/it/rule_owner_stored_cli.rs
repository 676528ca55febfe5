//! `rules suggest` takes a rule's owner from the writers the history database remembers too, as
//! the monitor does: a group whose writer the monitor saw start right before each member was
//! born (`created-at-launch`), and which has exited since, gets a rule owned by that program,
//! though nothing holding the members runs now. Without the database the same group gets no
//! owner; a database that cannot be read is said on stderr and the suggestion still comes. The
//! `report` draft names the same writer.
//!
//! The same for a writer named by the pid in the members' names (`pid-in-name`), all exited: the
//! stored evidence keeps which digit run is the pid, so the rule gets `owner.pid_in_name` and the
//! `pid` capture on that run, as when the writers ran; without the database, or from a row that
//! has no run (a schema-3 database, read as it is), it gets neither.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cachewatch::api::catalogue::Catalogue;
use cachewatch::api::process::EvidenceKind;
use cachewatch::api::roots::{Root, RootKind};
use cachewatch::api::scan::{scan_root_each_found, ScanProgress, Tally};
use cachewatch::history::{group_key, GroupSample, History, StoredWriter};
use serde_json::Value;

/// The remembered writer: no process of that name runs on a test machine.
const WRITER: &str = "katagoexited";
const MEMBERS: u64 = 24;

/// Runs `cachewatch ARGS --json` over `root` with the data dir `data`: its JSON and stderr.
fn run_json(dir: &Path, data: &Path, root: &Path, args: &[&str]) -> (Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_cachewatch"))
        .arg("--config")
        .arg(dir.join("config.toml"))
        .arg("--data-dir")
        .arg(data)
        .args(args)
        .arg("--json")
        .arg("--root")
        .arg(format!("temp={}", root.display()))
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "exit {:?}: {stderr}", out.status);
    let v: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    (v, stderr)
}

/// Runs `cachewatch ARGS` (no `--json`) over `root` with the data dir `data`: its stdout.
fn run_text(dir: &Path, data: &Path, root: &Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_cachewatch"))
        .arg("--config")
        .arg(dir.join("config.toml"))
        .arg("--data-dir")
        .arg(data)
        .args(args)
        .arg("--root")
        .arg(format!("temp={}", root.display()))
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "exit {:?}: {stderr}", out.status);
    stdout
}

fn suggest(dir: &Path, data: &Path, root: &Path) -> (Value, String) {
    suggest_for("own_", dir, data, root)
}

/// The suggestion `rules suggest --json` makes for the group whose shape starts with `prefix`.
fn suggest_for(prefix: &str, dir: &Path, data: &Path, root: &Path) -> (Value, String) {
    let (v, stderr) = run_json(dir, data, root, &["rules", "suggest"]);
    let s = v
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["shape"].as_str().unwrap().starts_with(prefix))
        .unwrap_or_else(|| panic!("no suggestion for the {prefix} group: {v:#}"))
        .clone();
    (s, stderr)
}

/// Stores in a new history database at `data` the group of `root` whose shape starts with
/// `prefix`, sampled an hour ago, and `writer` as its writer (the group's key filled in).
fn store_group(root: &Path, data: &Path, prefix: &str, writer: StoredWriter) -> PathBuf {
    let root_ = Root::new(RootKind::Temp, root).unwrap();
    let mut tally = Tally::new(0);
    scan_root_each_found(&root_, &Catalogue::builtin(), &ScanProgress::new(), |f| {
        tally.add_found(&root_, &f)
    });
    let groups = tally.unattributed_groups();
    let g = groups
        .iter()
        .find(|g| g.group.shown().starts_with(prefix))
        .unwrap();
    let key = group_key(&g.root, g.group.within.as_deref(), &g.group.key);
    std::fs::create_dir(data).unwrap();
    let db = data.join("cachewatch.db");
    let an_hour_ago = SystemTime::now() - Duration::from_secs(3600);
    History::open(&db)
        .unwrap()
        .record_groups(
            an_hour_ago,
            &[GroupSample {
                key: key.clone(),
                label: g.group.shown(),
                allocated_bytes: g.group.measure.allocated_bytes,
                items: g.group.items,
            }],
            &[StoredWriter { key, ..writer }],
        )
        .unwrap();
    db
}

#[test]
fn a_writer_the_history_remembers_owns_the_suggested_rule() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(dir.path().join("config.toml"), "# mine\n").unwrap();
    let ts = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    // Numbers no process has (above Linux's default pid_max and any pid macOS gives): no pid in
    // the names names anybody now.
    for i in 0..MEMBERS {
        let d = root.join(format!("own_{}_{}_{ts}", 4_200_000 + i * 17, i % 2));
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join("f"), "leak").unwrap();
    }

    // Without history: nothing names the writer, the rule has no owner.
    let (s, _) = suggest(dir.path(), &dir.path().join("no-data"), &root);
    assert_eq!(s["items"], MEMBERS);
    assert_eq!(
        s["rule"]["owner"]["processes"],
        serde_json::json!([]),
        "{s:#}"
    );
    assert_eq!(s["rule"]["owner"]["pid_in_name"], false, "{s:#}");

    // The monitor stored the group with its writer, seen starting before each member was born.
    let root_ = Root::new(RootKind::Temp, &root).unwrap();
    let mut tally = Tally::new(0);
    scan_root_each_found(&root_, &Catalogue::builtin(), &ScanProgress::new(), |f| {
        tally.add_found(&root_, &f)
    });
    let groups = tally.unattributed_groups();
    let g = groups
        .iter()
        .find(|g| g.group.shown().starts_with("own_"))
        .unwrap();
    let key = group_key(&g.root, g.group.within.as_deref(), &g.group.key);
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let db = data.join("cachewatch.db");
    let an_hour_ago = SystemTime::now() - Duration::from_secs(3600);
    History::open(&db)
        .unwrap()
        .record_groups(
            an_hour_ago,
            &[GroupSample {
                key: key.clone(),
                label: g.group.shown(),
                allocated_bytes: g.group.measure.allocated_bytes,
                items: MEMBERS,
            }],
            &[StoredWriter {
                key,
                kind: EvidenceKind::CreatedAtLaunch,
                name: WRITER.to_owned(),
                exe: Some(format!("/opt/{WRITER}/bin/{WRITER}").into()),
                app: None,
                app_version: None,
                agree: MEMBERS,
                total: MEMBERS,
                first_seen: an_hour_ago,
                last_seen: Some(an_hour_ago),
                pid_run: None,
            }],
        )
        .unwrap();

    let (s, _) = suggest(dir.path(), &data, &root);
    assert_eq!(s["items"], MEMBERS);
    assert_eq!(
        s["rule"]["owner"]["processes"],
        serde_json::json!([WRITER]),
        "{s:#}"
    );

    let shape = s["shape"].as_str().unwrap().to_owned();
    let (r, _) = run_json(dir.path(), &data, &root, &["report", &shape]);
    assert_eq!(r["writer"]["name"], WRITER, "{r:#}");
    assert_eq!(
        r["writer"]["exe"],
        format!("/opt/{WRITER}/bin/{WRITER}").as_str(),
        "{r:#}"
    );

    // A history that cannot be read: said, and the suggestion comes without it.
    std::fs::write(&db, b"not a database, just bytes").unwrap();
    let (s, stderr) = suggest(dir.path(), &data, &root);
    assert_eq!(s["items"], MEMBERS);
    assert_eq!(
        s["rule"]["owner"]["processes"],
        serde_json::json!([]),
        "{s:#}"
    );
    assert_eq!(s["rule"]["owner"]["pid_in_name"], false, "{s:#}");
    assert!(
        stderr.contains(&format!("the history at {} cannot be read", db.display())),
        "{stderr}"
    );
}

/// The exited pid-in-name writer the monitor stored.
const PID_WRITER: &str = "pinexited";

#[test]
fn a_pid_in_name_writer_the_history_remembers_gives_the_rule_pid_in_name() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(dir.path().join("config.toml"), "# mine\n").unwrap();
    let ts = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    // `pin_<pid>_<n>_<ts>`: pids no process has (above Linux's default pid_max and any pid macOS
    // gives), so no live process names the writer now; the pid is the first digit run.
    for i in 0..MEMBERS {
        let d = root.join(format!("pin_{}_{}_{ts}", 4_200_000 + i * 17, i % 2));
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join("f"), "leak").unwrap();
    }
    let an_hour_ago = SystemTime::now() - Duration::from_secs(3600);
    let writer = StoredWriter {
        key: Vec::new(),
        kind: EvidenceKind::PidInName,
        name: PID_WRITER.to_owned(),
        exe: Some(format!("/opt/{PID_WRITER}/bin/{PID_WRITER}").into()),
        app: None,
        app_version: None,
        agree: MEMBERS,
        total: MEMBERS,
        first_seen: an_hour_ago,
        last_seen: Some(an_hour_ago),
        pid_run: Some(0),
    };

    // Without history: the pids name nobody, the rule has no owner and no capture.
    let (s, _) = suggest_for("pin_", dir.path(), &dir.path().join("no-data"), &root);
    assert_eq!(s["items"], MEMBERS);
    assert_eq!(s["rule"]["owner"]["pid_in_name"], false, "{s:#}");
    assert_eq!(
        s["rule"]["owner"]["processes"],
        serde_json::json!([]),
        "{s:#}"
    );
    let regex = s["rule"]["name_regex"].as_str().unwrap();
    assert!(!regex.contains("(?P<pid>"), "{regex}");

    // A row with no run (as a schema-3 database holds it, read as it is): no pid_in_name.
    let v3 = dir.path().join("v3");
    let db = store_group(&root, &v3, "pin_", writer.clone());
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch("ALTER TABLE group_writers DROP COLUMN pid_run; PRAGMA user_version = 3;")
        .unwrap();
    let (s, stderr) = suggest_for("pin_", dir.path(), &v3, &root);
    assert!(!stderr.contains("cannot be read"), "{stderr}");
    assert_eq!(s["rule"]["owner"]["pid_in_name"], false, "{s:#}");

    // The monitor stored the writer with the run holding the pid: the rule is owned by the pid in
    // the name, captured from the first digit run, as when the writers ran.
    let data = dir.path().join("data");
    store_group(&root, &data, "pin_", writer);
    let (s, stderr) = suggest_for("pin_", dir.path(), &data, &root);
    assert!(!stderr.contains("cannot be read"), "{stderr}");
    assert_eq!(s["items"], MEMBERS);
    assert_eq!(s["wrongly_claimed"], serde_json::json!([]), "{s:#}");
    assert_eq!(s["missed"], serde_json::json!([]), "{s:#}");
    assert_eq!(s["rule"]["owner"]["pid_in_name"], true, "{s:#}");
    let regex = s["rule"]["name_regex"].as_str().unwrap();
    assert!(regex.starts_with("^pin_(?P<pid>[0-9]"), "{regex}");
    assert_eq!(regex.matches("(?P<pid>").count(), 1, "{regex}");

    // As text too.
    let text = run_text(dir.path(), &data, &root, &["rules", "suggest"]);
    assert!(text.contains("pid_in_name = true"), "{text}");
    assert!(text.contains("^pin_(?P<pid>[0-9]"), "{text}");

    let shape = s["shape"].as_str().unwrap().to_owned();
    let (r, _) = run_json(dir.path(), &data, &root, &["report", &shape]);
    assert_eq!(r["writer"]["name"], PID_WRITER, "{r:#}");

    // `rules add` writes the owner.
    let out = run_text(
        dir.path(),
        &data,
        &root,
        &["rules", "add", &shape, "--id", "local-pin"],
    );
    assert!(out.contains(&format!("({MEMBERS} items")), "{out}");
    let config = std::fs::read_to_string(dir.path().join("config.toml")).unwrap();
    assert!(config.contains("# mine\n"), "{config}");
    assert!(
        config.contains("owner = { pid_in_name = true }"),
        "{config}"
    );
    assert!(config.contains("^pin_(?P<pid>[0-9]"), "{config}");
}
