//! `[[auto_reclaim]]` through the binary: `reclaim --rules [--dry-run]`, `history` listing the
//! runs, an unknown producer id naming the config file and line, and `watch` running the rules
//! (or not, with `--no-auto-reclaim`), counted in `/metrics` and announced on stdout.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use cachewatch::history::History;
use cachewatch_testkit::scrape;

const CONFIG: &str = r#"
[[producer]]
id = "my-tool"
name = "My tool scratch dirs"
root = "temp"
item = "my-tool-*"
kind = "leak"
reclaim = "manual"
evidence = ["https://example.invalid/1"]
examples = ["my-tool-1"]
counter_examples = ["other"]

[[auto_reclaim]]
producers = ["my-tool"]
older_than = "1h"
every = "1h"
"#;

struct Setup {
    dir: tempfile::TempDir,
    root: PathBuf,
    old: Vec<PathBuf>,
    young: PathBuf,
}

/// Three dirs two days old and one new, under a temp root; the config above.
fn setup(config: &str) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let old: Vec<PathBuf> = (0..3)
        .map(|i| {
            let d = root.join(format!("my-tool-{i}"));
            cachewatch_testkit::tree::write_file(&d.join("f"), 3000);
            cachewatch_testkit::tree::set_tree_mtime(&d, cachewatch_testkit::tree::days_ago(2));
            d
        })
        .collect();
    let young = root.join("my-tool-new");
    cachewatch_testkit::tree::write_file(&young.join("f"), 3000);
    std::fs::write(dir.path().join("config.toml"), config).unwrap();
    Setup {
        dir,
        root,
        old,
        young,
    }
}

impl Setup {
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_cachewatch"));
        c.arg("--config")
            .arg(self.dir.path().join("config.toml"))
            .arg("--data-dir")
            .arg(self.dir.path().join("data"))
            .args(args)
            .arg("--root")
            .arg(format!("temp={}", self.root.display()))
            .env_remove("RUST_LOG");
        c
    }

    fn run(&self, args: &[&str]) -> (i32, String, String) {
        let out = self.cmd(args).output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    fn db(&self) -> PathBuf {
        self.dir.path().join("data/cachewatch.db")
    }
}

#[test]
fn reclaim_rules_dry_run_then_run_and_history_lists_the_run() {
    let s = setup(CONFIG);
    let (code, out, err) = s.run(&["reclaim", "--rules", "--dry-run"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("rule my-tool: would delete 3 item(s)"),
        "{out}"
    );
    assert!(out.contains("1 too-young"), "{out}");
    assert!(s.old.iter().all(|d| d.exists()));
    assert!(!s.db().exists(), "a dry run writes nothing");

    // Without --yes and without a terminal, nothing is deleted (as for a plain reclaim).
    let (code, out, err) = s.run(&["reclaim", "--rules"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("Nothing deleted: run again with --yes"),
        "{out}"
    );
    assert!(s.old.iter().all(|d| d.exists()));

    let (code, out, err) = s.run(&["reclaim", "--rules", "--yes"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("rule my-tool: deleted 3 item(s)"), "{out}");
    assert!(s.old.iter().all(|d| !d.exists()) && s.young.exists());
    let h = History::open_read_only(&s.db()).unwrap();
    let rows = h.reclaims(SystemTime::UNIX_EPOCH).unwrap();
    let mut paths: Vec<&Path> = rows.iter().map(|r| r.path.as_path()).collect();
    paths.sort();
    assert_eq!(
        paths,
        s.old.iter().map(PathBuf::as_path).collect::<Vec<_>>()
    );
    assert!(rows.iter().all(|r| r.outcome == "deleted"));
    let runs = h.auto_runs(SystemTime::UNIX_EPOCH).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(
        (
            runs[0].trigger.as_str(),
            runs[0].deleted_items,
            runs[0].kept["too-young"]
        ),
        ("manual", 3, 1)
    );
    assert_eq!(
        runs[0].freed_bytes,
        rows.iter().map(|r| r.allocated_bytes).sum::<u64>()
    );

    let out = Command::new(env!("CARGO_BIN_EXE_cachewatch"))
        .arg("--data-dir")
        .arg(s.dir.path().join("data"))
        .args(["history", "--json"])
        .env("CACHEWATCH_CONFIG", s.dir.path().join("config.toml"))
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["auto_runs"][0]["rule"], "my-tool");
    assert_eq!(doc["auto_runs"][0]["deleted_items"], 3);
    let human = Command::new(env!("CARGO_BIN_EXE_cachewatch"))
        .arg("--data-dir")
        .arg(s.dir.path().join("data"))
        .arg("history")
        .env("CACHEWATCH_CONFIG", s.dir.path().join("config.toml"))
        .output()
        .unwrap();
    let human = String::from_utf8_lossy(&human.stdout);
    assert!(human.contains("Auto-reclaim runs in the last"), "{human}");
    assert!(human.contains("too-young 1"), "{human}");
}

#[test]
fn an_unknown_producer_in_a_rule_names_the_config_file_and_line() {
    let bad = CONFIG.replace("producers = [\"my-tool\"]", "producers = [\"my-tol\"]");
    // Hand count: line 1 is empty, the [[auto_reclaim]] table starts on line 13.
    let line = bad.lines().position(|l| l.contains("my-tol")).unwrap() + 1;
    assert_eq!(line, 14);
    let s = setup(&bad);
    // Every command validates the config the same way at load (a `scan` used to accept it).
    let every: [&[&str]; 5] = [
        &["reclaim", "--rules"],
        &["watch"],
        &["scan"],
        &["status"],
        &["reclaim", "--dry-run"],
    ];
    for args in every {
        let (code, _, err) = s.run(args);
        assert_ne!(code, 0, "{args:?}");
        assert!(
            err.contains("config.toml") && err.contains("line 14"),
            "{err}"
        );
        assert!(err.contains("unknown producer \"my-tol\""), "{err}");
    }
    assert!(s.old.iter().all(|d| d.exists()));
}

/// Starts `watch --metrics 127.0.0.1:0 ARGS` and returns it with its metrics address.
fn watch(
    s: &Setup,
    args: &[&str],
) -> (
    std::process::Child,
    String,
    std::sync::mpsc::Receiver<String>,
) {
    let mut child = s
        .cmd(&[&["watch", "--metrics", "127.0.0.1:0"][..], args].concat())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let addr = loop {
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("watch started");
        if let Some(addr) = scrape::addr_in(&line) {
            break addr;
        }
    };
    (child, addr, rx)
}

/// Polls `/metrics` until it has `line` (a bound against hanging, not a timing assertion).
fn wait_metrics(addr: &str, line: &str) -> String {
    scrape::wait_for(addr, line, Duration::from_secs(60))
}

fn stop(mut child: std::process::Child) -> String {
    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    child.wait().unwrap();
    out
}

#[test]
fn watch_runs_the_rules_counts_them_and_announces_once_and_not_with_no_auto_reclaim() {
    let s = setup(CONFIG);
    let (child, addr, _) = watch(&s, &["--no-auto-reclaim"]);
    let m = wait_metrics(&addr, "cachewatch_producer_items{producer=\"my-tool\"} 4");
    assert!(!m.contains("cachewatch_auto_reclaim_runs_total"), "{m}");
    stop(child);
    assert!(
        s.old.iter().all(|d| d.exists()),
        "--no-auto-reclaim deleted"
    );

    let (child, addr, _) = watch(&s, &[]);
    let m = wait_metrics(
        &addr,
        "cachewatch_auto_reclaim_runs_total{rule=\"my-tool\"} 1",
    );
    assert!(
        m.contains("cachewatch_reclaimed_items_total{producer=\"my-tool\"} 3"),
        "{m}"
    );
    let out = stop(child);
    assert!(s.old.iter().all(|d| !d.exists()) && s.young.exists());
    let said: Vec<&str> = out.lines().filter(|l| l.contains("Reclaimed")).collect();
    assert_eq!(said.len(), 1, "{out}");
    assert!(
        said[0].contains(": 3 items of My tool scratch dirs older than 1 h"),
        "{out}"
    );
}
