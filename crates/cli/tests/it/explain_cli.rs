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

/// The text of `cachewatch explain PATH` (no `--json`).
fn explain_text(dir: &std::path::Path, roots: &[String], path: &std::path::Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_cachewatch"))
        .arg("--data-dir")
        .arg(dir.join("data"))
        .arg("--config")
        .arg(dir.join("config.toml"))
        .arg("explain")
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
    String::from_utf8(out.stdout).unwrap()
}

/// A yarn wrapper dir whose mtime a backup restore reset read "created (from its name):
/// 2023-11-14" in explain while reclaim said "too young: 0 s old, needs 86400 s". Explain now says
/// the age, which clock decided it and why, with the floor in human units; an app-owned cache says
/// its owner check, and a managed cache its tool's command.
#[test]
fn explain_says_the_age_its_clock_the_owner_and_the_tools_command() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t");
    let lc = dir.path().join("lc");
    let yarn = t.join("yarn--1700000000000-0.1");
    write_file(&yarn.join("node"), 10);
    let e5rt = lc.join("com.example.transcriber/com.apple.e5rt.e5bundlecache/24F74/4F1C0A9B2D");
    write_file(&e5rt.join("x.bundle"), 10);
    let brew = lc.join("Homebrew/downloads/0123abcd--wget-1.24.5.arm64_sonoma.bottle.tar.gz");
    write_file(&brew, 10);
    let roots = vec![
        format!("temp={}", t.display()),
        format!("library-caches={}", lc.display()),
    ];
    let text = explain_text(dir.path(), &roots, &yarn);
    assert!(text.contains("age floor 1 d"), "{text}");
    assert!(
        text.contains("from its newest change")
            && text.contains("later than the time in its name, 2023-11-14")
            && text.contains("age counts from the later of the two"),
        "{text}"
    );
    let text = explain_text(dir.path(), &roots, &e5rt);
    assert!(
        text.contains("owned by the app in its path, com.example.transcriber: kept while"),
        "{text}"
    );
    let text = explain_text(dir.path(), &roots, &brew);
    assert!(text.contains("run `brew cleanup` first"), "{text}");
    assert!(!text.contains(" s old"), "{text}");
}
