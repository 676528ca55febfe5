//! `scan` names the writer of a group from one sample of the process table: six copies of
//! `sleep` under a name of their own, four members each named with the copy's pid; two copies
//! exit before the scan, so their members are orphans, and the text says who wrote the rest.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Child, Command};

use serde_json::Value;

const WRITER: &str = "leakcli";

struct Sleeper(Child);

impl Drop for Sleeper {
    fn drop(&mut self) {
        self.0.kill().ok();
        self.0.wait().ok();
    }
}

fn cachewatch(dir: &Path, root: &Path, json: bool) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cachewatch"));
    cmd.arg("--config")
        .arg(dir.join("config.toml"))
        .arg("--data-dir")
        .arg(dir.join("data"))
        .arg("scan");
    if json {
        cmd.arg("--json");
    }
    let out = cmd
        .arg("--root")
        .arg(format!("temp={}", root.display()))
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let code = out.status.code().unwrap_or(-1);
    assert!(
        code == 0 || code == 3,
        "exit {code}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn scan_names_the_running_writer_by_the_pid_in_the_names() {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join(WRITER);
    std::fs::copy("/bin/sleep", &exe).unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap().join("root");
    std::fs::create_dir(&root).unwrap();
    let mut sleepers: Vec<Sleeper> = (0..6)
        .map(|_| Sleeper(Command::new(&exe).arg("600").spawn().unwrap()))
        .collect();
    // Born after their process started, as a writer's members are.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let ts = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    for s in &sleepers {
        for n in 0..4 {
            let d = root.join(format!("wrk_{}_{n}_{ts}", s.0.id()));
            std::fs::create_dir(&d).unwrap();
            std::fs::write(d.join("f"), "leak").unwrap();
        }
    }
    // Two writers exit before the scan: 8 members no running process explains.
    sleepers.truncate(4);

    let v: Value = serde_json::from_str(&cachewatch(dir.path(), &root, true)).unwrap();
    let groups = v["unattributed_groups"].as_array().unwrap();
    let g = groups
        .iter()
        .find(|g| g["shape"].as_str().unwrap().starts_with("wrk_"))
        .unwrap_or_else(|| panic!("no group: {v:#}"));
    assert_eq!(g["items"], 24);
    let e = g["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "pid-in-name")
        .unwrap_or_else(|| panic!("no pid-in-name evidence: {g:#}"));
    assert_eq!(e["name"], WRITER);
    assert_eq!(
        (e["agree"].as_u64(), e["total"].as_u64()),
        (Some(16), Some(24))
    );
    assert_eq!(e["orphans"], 8);
    assert_eq!(e["alive"], true);
    assert_eq!(
        e["exe"].as_str().map(std::path::PathBuf::from),
        Some(std::fs::canonicalize(&exe).unwrap())
    );
    assert!(
        g["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["kind"] != "created-at-launch"),
        "one sample cannot tell a launch: {g:#}"
    );

    let text = cachewatch(dir.path(), &root, false);
    assert!(
        text.contains(&format!("{WRITER} (pid in name, 16 of 24)")),
        "{text}"
    );
    drop(sleepers);
}
