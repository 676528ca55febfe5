//! A leak two levels down, through the binary: `tool/<project>/logs-<ISO time>/` in a few
//! project dirs is one group per project dir of `scan` (the tool dir listing only what is left
//! of it), `rules suggest` proposes a `tool/<project>/<glob>` rule that claims exactly one
//! project's members, and once `rules add` wrote it, `scan` shows a producer of those items with
//! `du`'s bytes while the other project's group stays. Nothing is counted twice.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use cachewatch_testkit::hostile::Rng;
use cachewatch_testkit::{du, tree};
use serde_json::Value;

/// `n` dirs `logs-<ISO time>` (`:` as `-`) under `dir`, each with a few files.
fn log_dirs(dir: &Path, n: usize, seed: u64) -> Vec<PathBuf> {
    let mut r = Rng::new(seed);
    let mut out = Vec::new();
    while out.len() < n {
        let p = dir.join(format!(
            "logs-2026-{:02}-{:02}T{:02}-{:02}-{:02}",
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
        tree::write_file(&p.join("server.log"), 5000 + i * 3001);
        tree::write_file(&p.join("meta.json"), 200 + i * 13);
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

fn own_bytes(p: &Path) -> u64 {
    std::fs::symlink_metadata(p).unwrap().blocks() * 512
}

fn group<'v>(v: &'v Value, prefix: &str) -> Option<&'v Value> {
    v["unattributed_groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["shape"].as_str().unwrap().starts_with(prefix))
}

fn lone(v: &Value, path: &Path) -> Option<u64> {
    v["unattributed"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["path"] == path.to_str().unwrap())
        .map(|u| u["allocated_bytes"].as_u64().unwrap())
}

#[test]
fn a_group_two_levels_down_is_shown_per_project_suggested_and_claimed_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(tmp.path()).unwrap();
    let root = dir.join("root");
    let tool = root.join("tool");
    let alpha = log_dirs(&tool.join("proj-alpha"), 30, 11);
    let beta = log_dirs(&tool.join("proj-beta"), 25, 12);
    // A project with too few logs for a group, and files of the tool's own.
    let gamma = log_dirs(&tool.join("proj-gamma"), 3, 13);
    tree::write_file(&tool.join("proj-gamma").join("settings.json"), 777);
    tree::write_file(&tool.join("tool.db"), 12_345);
    // A top-level dir holding one project dir of logs and nothing else.
    let runs = log_dirs(&root.join("runs").join("ci-main"), 22, 14);
    tree::write_file(&root.join("notes.txt"), 999);
    std::fs::write(dir.join("config.toml"), "# mine\n").unwrap();
    assert_eq!(gamma.len(), 3);

    let v = json(&dir, &root, &["scan", "--json", "--top", "1000"]);
    let groups = v["unattributed_groups"].as_array().unwrap();
    assert_eq!(groups.len(), 3, "{groups:#?}");
    let ga = group(&v, "tool/proj-alpha/logs-").expect("a group in tool/proj-alpha");
    let gb = group(&v, "tool/proj-beta/logs-").expect("a group in tool/proj-beta");
    let gr = group(&v, "runs/ci-main/logs-").expect("a group in runs/ci-main");
    assert_eq!(ga["items"], 30);
    assert_eq!(gb["items"], 25);
    assert_eq!(gr["items"], 22);
    assert_eq!(ga["allocated_bytes"], du::allocated(&alpha));
    assert_eq!(ga["apparent_bytes"], du::apparent(&alpha));
    assert_eq!(gb["allocated_bytes"], du::allocated(&beta));
    // `runs` holds nothing but its project dir of logs: those two dirs' own entries count in the
    // group, and `runs` is not listed.
    assert_eq!(gr["allocated_bytes"], du::allocated(&[root.join("runs")]));
    assert_eq!(lone(&v, &root.join("runs")), None);
    // `tool` lists only what is left of it: the groups' members taken out.
    let rest = du::allocated(&[&tool]) - du::allocated(&alpha) - du::allocated(&beta);
    assert_eq!(lone(&v, &tool), Some(rest));
    assert_eq!(
        lone(&v, &root.join("notes.txt")),
        Some(du::allocated(&[root.join("notes.txt")]))
    );
    // Nothing counted twice: groups, lone entries and the root's own entry are the root.
    assert_eq!(
        sum(&v, "unattributed_groups", "allocated_bytes")
            + sum(&v, "unattributed", "allocated_bytes")
            + own_bytes(&root),
        du::allocated(&[&root])
    );

    let v2 = json(&dir, &root, &["rules", "suggest", "--json"]);
    let s = v2
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["shape"] == ga["shape"])
        .expect("a suggestion for the alpha group");
    assert_eq!(s["refused"], Value::Null, "{s}");
    assert_eq!(s["wrongly_claimed"], serde_json::json!([]), "{s}");
    assert_eq!(s["missed"], serde_json::json!([]), "{s}");
    let item = s["rule"]["item"].as_array().unwrap();
    assert_eq!(item.len(), 1, "{s}");
    assert!(
        item[0]
            .as_str()
            .unwrap()
            .starts_with("[t]ool/proj\\-alpha/logs\\-"),
        "{s}"
    );

    let shape = ga["shape"].as_str().unwrap();
    let (code, out, err) = cachewatch(&dir, &root, &["rules", "add", shape, "--id", "local-alpha"]);
    assert_eq!(code, 0, "{out}{err}");
    let config = std::fs::read_to_string(dir.join("config.toml")).unwrap();
    assert!(config.contains("# mine\n"), "{config}");

    let v = json(&dir, &root, &["scan", "--json", "--top", "1000"]);
    let producers = v["producers"].as_array().unwrap();
    assert_eq!(producers.len(), 1, "{producers:#?}");
    let p = &producers[0];
    assert_eq!(p["id"], "local-alpha");
    assert_eq!(p["items"], 30);
    assert_eq!(p["allocated_bytes"], du::allocated(&alpha));
    assert_eq!(p["apparent_bytes"], du::apparent(&alpha));
    // The other project's group and the runs group stay; the alpha one is gone.
    assert!(group(&v, "tool/proj-alpha/").is_none(), "{v:#}");
    assert_eq!(group(&v, "tool/proj-beta/logs-").unwrap()["items"], 25);
    assert_eq!(group(&v, "runs/ci-main/logs-").unwrap()["items"], 22);
    assert_eq!(
        sum(&v, "producers", "allocated_bytes")
            + sum(&v, "unattributed_groups", "allocated_bytes")
            + sum(&v, "unattributed", "allocated_bytes")
            + own_bytes(&root),
        du::allocated(&[&root])
    );
    assert_eq!(runs.len(), 22);
}
