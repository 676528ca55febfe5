//! `cachewatch reclaim` names the native command of a producer whose tool manages its cache, before
//! asking (text) and as `managed_by` (JSON).

#![allow(clippy::unwrap_used)]

use std::fs::{File, FileTimes};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

#[test]
fn reclaim_names_the_tool_command_of_a_managed_producer() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let old = SystemTime::now() - Duration::from_secs(3 * 86_400);
    for sub in ["ab", "cd"] {
        let d = cache.join("go-build").join(sub);
        std::fs::create_dir_all(&d).unwrap();
        let f = d.join(format!("{sub}{}-a", "0".repeat(62)));
        std::fs::write(&f, b"entry").unwrap();
        File::options()
            .write(true)
            .open(&f)
            .unwrap()
            .set_times(FileTimes::new().set_accessed(old).set_modified(old))
            .unwrap();
    }
    let run = |json: bool| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_cachewatch"));
        c.args([
            "reclaim",
            "--dry-run",
            "--producer",
            "go-build-cache-xdg",
            "--older-than",
            "1d",
            "--root",
        ])
        .arg(format!("cache={}", cache.display()))
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .arg("--config")
        .arg(dir.path().join("config.toml"))
        .env_remove("RUST_LOG")
        .stdin(Stdio::null());
        if json {
            c.arg("--json");
        }
        let out = c.output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let text = run(false);
    assert!(
        text.contains("go-build-cache-xdg is managed by its tool: `go clean -cache`"),
        "{text}"
    );
    let doc: serde_json::Value = serde_json::from_str(&run(true)).unwrap();
    assert_eq!(doc["planned"].as_array().unwrap().len(), 2, "{doc:#}");
    assert_eq!(
        doc["managed_by"],
        serde_json::json!({"go-build-cache-xdg": "go clean -cache"})
    );
}
