//! Regression: `cachewatch reclaim --dry-run` planned an item holding a dir its user cannot
//! delete from (a root-owned subdir, mode 0755, with a file in it), and the real run then deleted
//! part of the item and failed on the rest with permission denied. The plan now keeps it
//! (`not-deletable`, naming the dir), in the dry run's text and JSON, and the real run leaves it
//! whole.
//!
//! Permissions do not stop root: the tree is built as root, handed to nobody (uid 65534) but for
//! the locked dir, and the binary runs as nobody (`setpriv`); where that cannot be done (not root,
//! or no usable `setpriv`) the test is skipped with a printed reason.

#![allow(clippy::unwrap_used)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use cachewatch_testkit::tree::{days_ago, set_tree_mtime, write_file};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_cachewatch");
const NOBODY: &str = "65534";

fn setpriv_usable() -> bool {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    euid == 0
        && Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "true"])
            .status()
            .is_ok_and(|s| s.success())
}

/// The binary as nobody, with its config, data dir and home in `base`.
fn as_nobody(base: &Path, args: &[&str]) -> Output {
    Command::new("setpriv")
        .args([
            &format!("--reuid={NOBODY}"),
            &format!("--regid={NOBODY}"),
            "--clear-groups",
        ])
        .arg(BIN)
        .arg("--config")
        .arg(base.join("config.toml"))
        .arg("--data-dir")
        .arg(base.join("data"))
        .args(args)
        .env_remove("CACHEWATCH_CONFIG")
        .env_remove("CACHEWATCH_DATA_DIR")
        .env_remove("RUST_LOG")
        .env("HOME", base)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The JSON a successful run printed.
fn json_of(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A reclaim's planned paths, in its order.
fn planned_paths(v: &Value) -> Vec<&str> {
    v["planned"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["path"].as_str().unwrap())
        .collect()
}

/// A reclaim's kept items as (path, reason, not_writable_path), sorted.
fn kept_not_deletable(v: &Value) -> Vec<(&str, &str, &str)> {
    let mut kept: Vec<(&str, &str, &str)> = v["kept"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            let s = |f: &str| k[f].as_str().unwrap_or("");
            (s("path"), s("reason"), s("not_writable_path"))
        })
        .collect();
    kept.sort();
    kept
}

fn chown(path: &Path, owner: &str) {
    let ok = Command::new("chown")
        .args(["-R", owner])
        .arg(path)
        .status()
        .unwrap()
        .success();
    assert!(ok, "chown {owner} {}", path.display());
}

#[test]
fn an_item_holding_a_root_owned_dir_is_kept_as_not_deletable() {
    if !setpriv_usable() {
        println!("SKIPPED: not root, or `setpriv --reuid=nobody` is not usable here");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let base = dir.path().join("base");
    let temp = base.join("temp");
    let free = temp.join("gradio/item-free");
    let stuck = temp.join("gradio/item-stuck");
    let locked = stuck.join("locked");
    // A dir holding no dir, itself not writable (the plan asks about it without listing it).
    let shut = temp.join("gradio/item-shut");
    write_file(&free.join("data.bin"), 4000);
    write_file(&shut.join("sealed.bin"), 2000);
    write_file(&stuck.join("mine.bin"), 3000);
    write_file(&locked.join("theirs.bin"), 5000);
    fs::create_dir_all(base.join("data")).unwrap();
    set_tree_mtime(&temp, days_ago(3));
    chown(&base, &format!("{NOBODY}:{NOBODY}"));
    chown(&locked, "0:0");
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(&shut, fs::Permissions::from_mode(0o555)).unwrap();
    let root_arg = format!("temp={}", temp.display());
    let reclaim = ["reclaim", "--older-than", "1d", "--root", &root_arg];

    // Dry run, JSON: the free item planned, the stuck one kept naming the locked dir, the shut one
    // naming itself.
    let v = json_of(&as_nobody(
        &base,
        &[&reclaim[..], &["--dry-run", "--json"]].concat(),
    ));
    let planned = planned_paths(&v);
    assert_eq!(planned, [free.to_str().unwrap()]);
    let kept = kept_not_deletable(&v);
    let want = [
        (
            shut.to_str().unwrap(),
            "not-deletable",
            shut.to_str().unwrap(),
        ),
        (
            stuck.to_str().unwrap(),
            "not-deletable",
            locked.to_str().unwrap(),
        ),
    ];
    assert_eq!(kept, want);

    // Dry run, text: the reason in words.
    let out = as_nobody(&base, &[&reclaim[..], &["--dry-run", "--list"]].concat());
    let text = String::from_utf8_lossy(&out.stdout);
    let said = format!("not deletable: {} is not writable by you", locked.display());
    assert!(text.contains(&said), "{text}");

    // The real run deletes the free item and leaves the stuck one whole, with no error.
    let v = json_of(&as_nobody(
        &base,
        &[&reclaim[..], &["--yes", "--json"]].concat(),
    ));
    assert_eq!(v["errors"].as_array().unwrap().len(), 0, "{v}");
    assert!(!free.exists());
    let left: Vec<PathBuf> = [
        stuck.join("mine.bin"),
        locked.join("theirs.bin"),
        shut.join("sealed.bin"),
    ]
    .into();
    assert!(left.iter().all(|p| p.is_file()), "{left:?}");
}

/// A sticky dir (mode 1777, as `/tmp`) lets its user remove only its own entries. Regression: the
/// plan asked only for write permission, so a dry run planned a root-owned item in a root-owned
/// sticky parent, and an item holding a root-owned sticky dir with someone else's file, and the
/// real run deleted part of the latter before failing. Now both are kept as not-deletable, naming
/// the sticky dir, and the real run leaves them whole with no error.
#[test]
fn items_a_sticky_dir_stops_are_kept_as_not_deletable() {
    if !setpriv_usable() {
        println!("SKIPPED: not root, or `setpriv --reuid=nobody` is not usable here");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let base = dir.path().join("base");
    let temp = base.join("temp");
    let gradio = temp.join("gradio");
    let mine = gradio.join("item-mine");
    let theirs = gradio.join("item-theirs");
    let deep = gradio.join("item-deep");
    let shared = deep.join("shared");
    write_file(&mine.join("a.bin"), 4000);
    write_file(&theirs.join("b.bin"), 3000);
    write_file(&deep.join("c.bin"), 2000);
    write_file(&shared.join("root.bin"), 5000);
    write_file(&shared.join("nobody.bin"), 1000);
    fs::create_dir_all(base.join("data")).unwrap();
    set_tree_mtime(&temp, days_ago(3));
    chown(&base, &format!("{NOBODY}:{NOBODY}"));
    // The parent: root's, sticky, writable by all (as /tmp).
    chown(&gradio, "0:0");
    chown(&mine, &format!("{NOBODY}:{NOBODY}"));
    chown(&deep, &format!("{NOBODY}:{NOBODY}"));
    for d in [&gradio, &theirs, &shared] {
        let mode = if d == &theirs { 0o777 } else { 0o1777 };
        fs::set_permissions(d, fs::Permissions::from_mode(mode)).unwrap();
    }
    // Inside nobody's item: a root-owned sticky dir holding root's file and nobody's.
    chown(&shared, "0:0");
    chown(&shared.join("nobody.bin"), &format!("{NOBODY}:{NOBODY}"));
    set_tree_mtime(&temp, days_ago(3));
    let root_arg = format!("temp={}", temp.display());
    let reclaim = ["reclaim", "--older-than", "1d", "--root", &root_arg];

    let v = json_of(&as_nobody(
        &base,
        &[&reclaim[..], &["--dry-run", "--json"]].concat(),
    ));
    let planned = planned_paths(&v);
    assert_eq!(planned, [mine.to_str().unwrap()]);
    let kept = kept_not_deletable(&v);
    let want = [
        (
            deep.to_str().unwrap(),
            "not-deletable",
            shared.to_str().unwrap(),
        ),
        (
            theirs.to_str().unwrap(),
            "not-deletable",
            gradio.to_str().unwrap(),
        ),
    ];
    assert_eq!(kept, want);

    let v = json_of(&as_nobody(
        &base,
        &[&reclaim[..], &["--yes", "--json"]].concat(),
    ));
    assert_eq!(v["errors"].as_array().unwrap().len(), 0, "{v}");
    assert!(!mine.exists());
    let left: Vec<PathBuf> = [
        theirs.join("b.bin"),
        deep.join("c.bin"),
        shared.join("root.bin"),
        shared.join("nobody.bin"),
    ]
    .into();
    assert!(left.iter().all(|p| p.is_file()), "{left:?}");
}
