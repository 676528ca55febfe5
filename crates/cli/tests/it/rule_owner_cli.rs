//! A rule made from a group knows its owner: a renamed copy of `sh` launched 16 times, each
//! launch leaving two `lkw_<pid>_<n>_<ts>` dirs. `rules suggest` names the copy by the pid in the
//! names (one sample of the process table: the launches still run then) and proposes a rule with
//! `owner.pid_in_name` whose regex captures that pid; `rules add` writes it. Then all launches but
//! one exit, and `reclaim --dry-run` with the rule plans exactly the dirs of the exited ones
//! while the one still running keeps its dirs.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cachewatch_testkit::du;
use serde_json::Value;

/// The writer: a copy of `sh` under a name no other process has.
const WRITER: &str = "lkwowner";
/// Each launch makes two members named with its own pid, then waits on its stdin (a builtin) and
/// exits when the test closes it.
const SCRIPT: &str = r#"for n in 0 1; do d="$1/lkw_$$_${n}_$2"; mkdir "$d" && echo leak > "$d/f"; done; read x; exit 0"#;

struct Launch {
    child: Child,
    stdin: Option<ChildStdin>,
}

impl Launch {
    /// Closes its stdin and waits for it to exit.
    fn finish(&mut self) {
        self.stdin.take();
        self.child.wait().unwrap();
    }
}

impl Drop for Launch {
    fn drop(&mut self) {
        self.stdin.take();
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

fn launch(exe: &Path, root: &Path) -> Launch {
    let ts = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let mut child = Command::new(exe)
        .arg("-c")
        .arg(SCRIPT)
        .arg(WRITER)
        .arg(root)
        .arg(ts.to_string())
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take();
    Launch { child, stdin }
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

/// The `lkw_` dirs of `root` with the pid in each name, by hand: the first digit run.
fn members(root: &Path) -> Vec<(PathBuf, u32)> {
    let mut out: Vec<(PathBuf, u32)> = std::fs::read_dir(root)
        .unwrap()
        .filter_map(|e| {
            let e = e.unwrap();
            let name = e.file_name().into_string().ok()?;
            let pid = name.strip_prefix("lkw_")?.split('_').next()?.parse().ok()?;
            Some((e.path(), pid))
        })
        .collect();
    out.sort();
    out
}

#[test]
fn a_rule_made_from_a_pid_named_group_reclaims_only_the_exited_launches() {
    const LAUNCHES: usize = 16;
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join(WRITER);
    std::fs::copy("/bin/sh", &exe).unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("notes.txt"), "not a member").unwrap();
    std::fs::write(dir.path().join("config.toml"), "# mine\n").unwrap();

    let mut launches: Vec<Launch> = (0..LAUNCHES).map(|_| launch(&exe, &root)).collect();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while members(&root).len() < 2 * LAUNCHES
        || members(&root).iter().any(|(p, _)| !p.join("f").exists())
    {
        assert!(std::time::Instant::now() < deadline, "launches too slow");
        std::thread::sleep(Duration::from_millis(50));
    }

    let sugg = json(dir.path(), &root, &["rules", "suggest", "--json"]);
    let s = sugg
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["shape"].as_str().unwrap().starts_with("lkw_"))
        .unwrap_or_else(|| panic!("no suggestion for the lkw_ group: {sugg:#}"));
    assert_eq!(s["items"], 2 * LAUNCHES as u64);
    assert_eq!(s["wrongly_claimed"], serde_json::json!([]), "{s:#}");
    assert_eq!(s["missed"], serde_json::json!([]), "{s:#}");
    assert_eq!(s["rule"]["owner"]["pid_in_name"], true, "{s:#}");
    let regex = s["rule"]["name_regex"].as_str().unwrap();
    assert!(regex.starts_with("^lkw_(?P<pid>[0-9]"), "{regex}");
    let shape = s["shape"].as_str().unwrap().to_owned();

    let (code, out, err) = cachewatch(
        dir.path(),
        &root,
        &["rules", "add", &shape, "--id", "local-lkw"],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(&format!("({} items", 2 * LAUNCHES)), "{out}");
    let config = std::fs::read_to_string(dir.path().join("config.toml")).unwrap();
    assert!(config.contains("# mine\n"), "{config}");
    assert!(
        config.contains("owner = { pid_in_name = true }"),
        "{config}"
    );

    // All but the last launch exit: their dirs are orphans.
    for l in &mut launches[..LAUNCHES - 1] {
        l.finish();
    }
    let alive = launches[LAUNCHES - 1].child.id();
    // The user lowers the rule's age floor (an hour) to reclaim the fresh orphans now.
    let lowered = config.replace("min_age_secs = 3600", "min_age_secs = 0");
    assert_ne!(lowered, config);
    std::fs::write(dir.path().join("config.toml"), lowered).unwrap();

    let v = json(
        dir.path(),
        &root,
        &[
            "reclaim",
            "--producer",
            "local-lkw",
            "--older-than",
            "0s",
            "--dry-run",
            "--json",
        ],
    );
    let all = members(&root);
    assert_eq!(all.len(), 2 * LAUNCHES);
    let orphans: Vec<&PathBuf> = all
        .iter()
        .filter(|(_, pid)| *pid != alive)
        .map(|(p, _)| p)
        .collect();
    let kept_by_hand: BTreeSet<String> = all
        .iter()
        .filter(|(_, pid)| *pid == alive)
        .map(|(p, _)| p.display().to_string())
        .collect();
    assert_eq!(orphans.len(), 2 * (LAUNCHES - 1));
    assert_eq!(kept_by_hand.len(), 2);
    let planned: BTreeSet<String> = v["planned"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["path"].as_str().unwrap().to_owned())
        .collect();
    let want: BTreeSet<String> = orphans.iter().map(|p| p.display().to_string()).collect();
    assert_eq!(planned, want);
    let planned_bytes: u64 = v["planned"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["allocated_bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(planned_bytes, du::allocated(&orphans));
    let kept: BTreeSet<String> = v["kept"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["reason"] == "owner-alive" && k["pid"] == alive)
        .map(|k| k["path"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kept, kept_by_hand, "{:#}", v["kept"]);
    assert!(
        all.iter().all(|(p, _)| p.exists()),
        "a dry run deletes nothing"
    );
    drop(launches);
}
