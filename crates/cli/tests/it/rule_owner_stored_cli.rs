//! `rules suggest` takes a rule's owner from the writers the history database remembers too, as
//! the monitor does: a group whose writer the monitor saw start right before each member was
//! born (`created-at-launch`), and which has exited since, gets a rule owned by that program,
//! though nothing holding the members runs now. Without the database the same group gets no
//! owner; a database that cannot be read is said on stderr and the suggestion still comes. The
//! `report` draft names the same writer.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
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

fn suggest(dir: &Path, data: &Path, root: &Path) -> (Value, String) {
    let (v, stderr) = run_json(dir, data, root, &["rules", "suggest"]);
    let s = v
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["shape"].as_str().unwrap().starts_with("own_"))
        .unwrap_or_else(|| panic!("no suggestion for the own_ group: {v:#}"))
        .clone();
    (s, stderr)
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
