//! `cachewatch explain` resolves `..` before it answers.

#![allow(clippy::unwrap_used)]

use std::process::Command;

use cachewatch_testkit::tree::write_file;

fn explain(dir: &std::path::Path, roots: &[String], path: &std::path::Path) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_cachewatch"))
        .arg("--data-dir")
        .arg(dir.join("data"))
        .arg("--config")
        .arg(dir.join("config.toml"))
        .args(["explain", "--json"])
        .args(roots.iter().flat_map(|r| ["--root", r.as_str()]))
        .arg(path)
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `explain item/../../../outside/keep.txt` said "inside item … of producer metal-gpuarchiver" for
/// a file outside every root; `t/../c/…/gpuarchiver-X` was "unattributed entry t/..".
#[test]
fn explain_resolves_dot_dot_before_it_answers() {
    let dir = tempfile::tempdir().unwrap();
    let c = dir.path().join("c");
    let t = dir.path().join("t");
    let item = c.join("com.apple.gpuarchiver/gpuarchiver-AB12C3");
    write_file(&item.join("f"), 10);
    write_file(&dir.path().join("outside/keep.txt"), 10);
    std::fs::create_dir(&t).unwrap();
    let roots = vec![
        format!("cache={}", c.display()),
        format!("temp={}", t.display()),
    ];
    let v = explain(dir.path(), &roots, &item.join("../../../outside/keep.txt"));
    assert_eq!(v["verdict"]["status"], "outside-roots", "{v:#}");
    let v = explain(
        dir.path(),
        &roots,
        &t.join("../c/com.apple.gpuarchiver/gpuarchiver-AB12C3"),
    );
    assert_eq!(v["verdict"]["status"], "claimed", "{v:#}");
    assert_eq!(v["verdict"]["producer"], "metal-gpuarchiver");
    // A path that does not exist yet is still explained, `..` resolved lexically past what exists.
    let v = explain(
        dir.path(),
        &roots,
        &c.join("com.apple.gpuarchiver/new/../gpuarchiver-ZZ9999"),
    );
    assert_eq!(v["verdict"]["status"], "claimed", "{v:#}");
}
