//! `--root container-temp=<containers dir>` through the `cachewatch` binary: every sandboxed app's
//! `Data/tmp` is scanned with the temp rules, shown under one heading, and a container that cannot
//! be read is reported by path without failing the run.

#![allow(clippy::unwrap_used)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_cachewatch");

fn write(p: &Path, len: usize) {
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, vec![1u8; len]).unwrap();
}

/// True when the binary can be run as a user that file permissions apply to (`nobody` through
/// `setpriv` when running as root).
fn setpriv_usable() -> bool {
    Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "true"])
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs the binary (as `nobody` when `as_nobody`) with a config and data dir in `dir`.
fn run(dir: &Path, as_nobody: bool, args: &[&str]) -> Output {
    let mut c = if as_nobody {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN]);
        c
    } else {
        Command::new(BIN)
    };
    c.env_remove("CACHEWATCH_CONFIG")
        .env_remove("CACHEWATCH_DATA_DIR")
        .env_remove("RUST_LOG")
        .arg("--config")
        .arg(dir.join("config.toml"))
        .arg("--data-dir")
        .arg(dir.join("data"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn container_temp_roots_are_scanned_grouped_and_an_unreadable_one_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let containers = dir.path().join("Containers");
    let go = containers.join("com.example.GoHost/Data/tmp");
    write(
        &go.join("model_4242_0_1700000000.mlmodelc/coremldata.bin"),
        20_000,
    );
    write(&go.join("scratch.bin"), 3000);
    let notes = containers.join("com.example.Notes/Data/tmp");
    write(&notes.join("draft.txt"), 100);
    let locked = containers.join("com.example.Locked/Data/tmp");
    write(&locked.join("secret"), 100);
    // Readable by nobody, except the locked container's temp dir (when setpriv can drop root).
    let nobody = setpriv_usable() && unsafe { libc::geteuid() } == 0;
    for p in [dir.path(), &containers] {
        fs::set_permissions(p, fs::Permissions::from_mode(0o755)).unwrap();
    }
    if nobody {
        fs::create_dir(dir.path().join("data")).unwrap();
        fs::set_permissions(dir.path().join("data"), fs::Permissions::from_mode(0o777)).unwrap();
        fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).unwrap();
    }
    let arg = format!("container-temp={}", containers.display());

    let out = run(dir.path(), nobody, &["scan", "--json", "--root", &arg]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let roots = v["roots"].as_array().unwrap();
    let bundles: Vec<&str> = roots
        .iter()
        .map(|r| r["bundle"].as_str().unwrap())
        .collect();
    let mut want = vec!["com.example.GoHost", "com.example.Notes"];
    if !nobody {
        want.insert(0, "com.example.Locked");
    }
    assert_eq!(bundles, want);
    assert!(roots.iter().all(|r| r["kind"] == "container-temp"));
    let katago = v["producers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == "katago-coreml")
        .unwrap();
    assert_eq!(katago["items"], 1);
    if nobody {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&*locked.to_string_lossy()) && stderr.contains("cannot be listed"),
            "{stderr}"
        );
    }

    // Human output: one `container-temp` row for all of them, then the containers by bundle id.
    let out = run(dir.path(), nobody, &["scan", "--root", &arg]);
    let text = String::from_utf8(out.stdout).unwrap();
    let heading = format!("{} ({} containers)", containers.display(), want.len());
    assert_eq!(
        text.lines()
            .filter(|l| l.starts_with("container-temp"))
            .count(),
        1,
        "{text}"
    );
    assert!(text.contains(&heading), "{text}");
    assert!(text.contains("CONTAINER TEMP (container-temp)"), "{text}");
    assert!(text.contains("com.example.GoHost"), "{text}");

    let e = run(
        dir.path(),
        false,
        &[
            "explain",
            go.join("model_4242_0_1700000000.mlmodelc")
                .to_str()
                .unwrap(),
            "--root",
            &arg,
        ],
    );
    let text = String::from_utf8(e.stdout).unwrap();
    assert!(
        text.contains("bundle in its path: com.example.GoHost"),
        "{text}"
    );
    assert!(
        text.contains("owner pid 4242 from its name decides alone"),
        "{text}"
    );
    assert!(
        text.contains("(the rule's processes katago do not apply to it)"),
        "{text}"
    );
    if nobody {
        fs::set_permissions(&locked, fs::Permissions::from_mode(0o755)).unwrap();
    }
}

#[test]
fn the_config_switch_adds_every_container_temp_dir_of_the_home_dir() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let go = home.join("Library/Containers/com.example.GoHost/Data/tmp");
    write(
        &go.join("model_4242_0_1700000000.mlmodelc/coremldata.bin"),
        20_000,
    );
    let temp = dir.path().join("temp");
    fs::create_dir(&temp).unwrap();
    let scan = |switch: bool| -> Value {
        let config = format!(
            "roots = [{{ kind = \"temp\", path = {:?} }}]\ncontainer_temp = {switch}\n",
            temp.display().to_string()
        );
        fs::write(dir.path().join("config.toml"), config).unwrap();
        let out = Command::new(BIN)
            .env("HOME", &home)
            .env_remove("CACHEWATCH_CONFIG")
            .env_remove("CACHEWATCH_DATA_DIR")
            .arg("--config")
            .arg(dir.path().join("config.toml"))
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .args(["scan", "--json"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let kinds = |v: &Value| -> Vec<String> {
        v["roots"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                format!(
                    "{} {}",
                    r["kind"].as_str().unwrap(),
                    r["path"].as_str().unwrap()
                )
            })
            .collect()
    };
    let off = scan(false);
    assert_eq!(kinds(&off), vec![format!("temp {}", temp.display())]);
    let on = scan(true);
    assert_eq!(
        kinds(&on),
        vec![
            format!("temp {}", temp.display()),
            format!("container-temp {}", go.display())
        ]
    );
    assert_eq!(on["roots"][1]["bundle"], "com.example.GoHost");
}
