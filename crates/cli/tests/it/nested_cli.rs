//! A leak one level down, through the binary: `tool-out/<ISO time>/` x 40 is one group of
//! `scan` inside `tool-out` (which is then not also listed), `rules suggest` proposes a
//! `tool-out/<glob>` rule that claims exactly its members, and once `rules add` wrote it, `scan`
//! shows a producer of those 40 items with `du`'s bytes while the same template in a sibling dir
//! and another template in a third dir stay unclaimed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use cachewatch_testkit::hostile::Rng;
use cachewatch_testkit::{du, tree};
use serde_json::Value;

/// `n` dirs of ISO-time names (`:` as `-`) under `dir`, each with a few files.
fn iso_dirs(dir: &Path, n: usize, seed: u64) -> Vec<PathBuf> {
    let mut r = Rng::new(seed);
    let mut out = Vec::new();
    while out.len() < n {
        let p = dir.join(format!(
            "2026-{:02}-{:02}T{:02}-{:02}-{:02}",
            r.range(1, 12),
            r.range(1, 28),
            r.range(0, 23),
            r.range(0, 59),
            r.range(0, 59)
        ));
        if p.exists() {
            continue;
        }
        let i = out.len();
        tree::write_file(&p.join("trace.zip"), 4000 + i * 2999);
        tree::write_file(&p.join("results.json"), 300 + i * 17);
        out.push(p);
    }
    out
}

fn cachewatch(dir: &Path, root: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_cachewatch"))
        .arg("--config")
        .arg(dir.join("config.toml"))
        .arg("--data-dir")
        .arg(dir.join("data"))
        .args(args)
        .arg("--root")
        .arg(format!("temp={}", root.display()))
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json(dir: &Path, root: &Path, args: &[&str]) -> Value {
    let (code, out, err) = cachewatch(dir, root, args);
    assert!(code == 0 || code == 3, "exit {code}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

fn sum(v: &Value, key: &str, field: &str) -> u64 {
    v[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x[field].as_u64().unwrap())
        .sum()
}

#[test]
fn a_group_one_level_down_is_shown_suggested_and_claimed_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(tmp.path()).unwrap();
    let root = dir.join("root");
    let tool = iso_dirs(&root.join("tool-out"), 40, 3);
    // The same template in a sibling, and another template in a third dir.
    let other = iso_dirs(&root.join("other-out"), 40, 5);
    let jobs: Vec<PathBuf> = (0..40)
        .map(|i| root.join("jobs").join(format!("job-{}", 7000 + i * 13)))
        .collect();
    for (i, j) in jobs.iter().enumerate() {
        tree::write_file(&j.join("out.log"), 700 + i * 101);
    }
    tree::write_file(&root.join("notes.txt"), 999);
    std::fs::write(dir.join("config.toml"), "# mine\n").unwrap();

    let v = json(&dir, &root, &["scan", "--json", "--top", "1000"]);
    let groups = v["unattributed_groups"].as_array().unwrap();
    assert_eq!(groups.len(), 3, "{groups:#?}");
    let g = groups
        .iter()
        .find(|g| g["shape"].as_str().unwrap().starts_with("tool-out/"))
        .expect("a group inside tool-out");
    assert_eq!(g["items"], 40);
    // tool-out holds only its members: its own entry counts in the group.
    assert_eq!(
        g["allocated_bytes"],
        du::allocated(&[root.join("tool-out")])
    );
    let lone: Vec<&str> = v["unattributed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["path"].as_str().unwrap())
        .collect();
    assert_eq!(lone, vec![root.join("notes.txt").to_str().unwrap()]);
    // Nothing counted twice: groups, lone entries and the root's own entry are the root.
    let own = std::fs::symlink_metadata(&root).unwrap();
    let own = std::os::unix::fs::MetadataExt::blocks(&own) * 512;
    assert_eq!(
        sum(&v, "unattributed_groups", "allocated_bytes")
            + sum(&v, "unattributed", "allocated_bytes")
            + own,
        du::allocated(&[&root])
    );

    let v = json(&dir, &root, &["rules", "suggest", "--json"]);
    let sugg = v.as_array().unwrap();
    let s = sugg
        .iter()
        .find(|s| s["shape"] == g["shape"])
        .expect("a suggestion for the group");
    assert_eq!(s["refused"], Value::Null, "{s}");
    assert_eq!(s["wrongly_claimed"], serde_json::json!([]), "{s}");
    assert_eq!(s["missed"], serde_json::json!([]), "{s}");
    let item = s["rule"]["item"].as_array().unwrap();
    assert_eq!(item.len(), 1, "{s}");
    // The dir's name, `-` escaped as the globs escape it, then the members' glob.
    assert!(
        item[0].as_str().unwrap().starts_with("tool\\-out/2026"),
        "{s}"
    );

    let shape = g["shape"].as_str().unwrap();
    // The report on it finds it as `scan` lists it, one level down.
    let r = json(&dir, &root, &["report", shape, "--json"]);
    assert_eq!(r["template"], g["shape"], "{r}");
    assert_eq!(r["items"], g["items"], "{r}");
    assert_eq!(r["allocated_bytes"], g["allocated_bytes"], "{r}");
    let (code, out, err) = cachewatch(
        &dir,
        &root,
        &["rules", "add", shape, "--id", "local-tool-out"],
    );
    assert_eq!(code, 0, "{out}{err}");
    let config = std::fs::read_to_string(dir.join("config.toml")).unwrap();
    assert!(config.contains("# mine\n"), "{config}");
    assert!(config.contains("tool-out/"), "{config}");

    let v = json(&dir, &root, &["scan", "--json", "--top", "1000"]);
    let producers = v["producers"].as_array().unwrap();
    assert_eq!(producers.len(), 1, "{producers:#?}");
    let p = &producers[0];
    assert_eq!(p["id"], "local-tool-out");
    assert_eq!(p["items"], 40);
    assert_eq!(p["allocated_bytes"], du::allocated(&tool));
    assert_eq!(p["apparent_bytes"], du::apparent(&tool));
    // The sibling of the same template and the other template stay groups of their own.
    let shapes: Vec<&str> = v["unattributed_groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["shape"].as_str().unwrap())
        .collect();
    assert_eq!(shapes.len(), 2, "{shapes:?}");
    assert!(
        shapes.iter().any(|s| s.starts_with("other-out/")),
        "{shapes:?}"
    );
    assert!(shapes.iter().any(|s| s.starts_with("jobs/")), "{shapes:?}");
    let other_g = v["unattributed_groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["shape"].as_str().unwrap().starts_with("other-out/"))
        .unwrap();
    assert_eq!(other_g["items"], 40);
    assert_eq!(
        other_g["allocated_bytes"],
        du::allocated(&[root.join("other-out")])
    );
    assert_eq!(other.len(), 40);
    // tool-out is left with its own entry, now outside any group: a lone entry of that size.
    let own_tool = std::fs::symlink_metadata(root.join("tool-out")).unwrap();
    let t = v["unattributed"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["path"] == root.join("tool-out").to_str().unwrap())
        .expect("tool-out's own entry");
    assert_eq!(
        t["allocated_bytes"],
        std::os::unix::fs::MetadataExt::blocks(&own_tool) * 512
    );
    assert_eq!(
        sum(&v, "producers", "allocated_bytes")
            + sum(&v, "unattributed_groups", "allocated_bytes")
            + sum(&v, "unattributed", "allocated_bytes")
            + own,
        du::allocated(&[&root])
    );
}

#[test]
fn a_group_one_level_down_of_names_that_are_not_utf8_is_shown_and_its_rule_refused() {
    use std::os::unix::ffi::OsStringExt;
    let tmp = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(tmp.path()).unwrap();
    let root = dir.join("root");
    let mut members = Vec::new();
    for i in 0..30 {
        let mut name = vec![0xff];
        name.extend(format!("run-{}", 1000 + i * 37).bytes());
        let m = root
            .join("tool-out")
            .join(std::ffi::OsString::from_vec(name));
        tree::write_file(&m.join("f"), 100 + i * 313);
        members.push(m);
    }
    std::fs::write(dir.join("config.toml"), "").unwrap();

    let v = json(&dir, &root, &["scan", "--json"]);
    let groups = v["unattributed_groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "{groups:#?}");
    assert_eq!(groups[0]["items"], 30);
    assert!(
        groups[0]["shape"]
            .as_str()
            .unwrap()
            .starts_with("tool-out/\\xffrun-"),
        "{}",
        groups[0]["shape"]
    );

    let v = json(&dir, &root, &["rules", "suggest", "--json"]);
    let s = &v.as_array().unwrap()[0];
    assert_eq!(s["rule"], Value::Null, "{s}");
    let why = s["refused"].as_str().unwrap();
    assert!(why.contains("not UTF-8"), "{why}");
    let shape = groups[0]["shape"].as_str().unwrap();
    let (code, out, err) = cachewatch(&dir, &root, &["rules", "add", shape, "--id", "local-odd"]);
    assert_ne!(code, 0, "{out}");
    assert!(err.contains("not UTF-8"), "{err}");
    assert_eq!(
        std::fs::read_to_string(dir.join("config.toml")).unwrap(),
        ""
    );
}
