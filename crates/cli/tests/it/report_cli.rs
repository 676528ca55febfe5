//! `cachewatch report SHAPE` drafts the text a user pastes into the writer's tracker: six copies
//! of `sleep` under a name of their own, four `rep_<pid>_<n>_<ts>` dirs each; two copies exit
//! before the report. The draft equals the text composed here from this test's own figures:
//! hand counts, `du`, `stat` times, the OS's own files. An unknown target is a clear error.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use cachewatch::api::units::format_bytes;
use cachewatch_testkit::du;
use serde_json::Value;

const WRITER: &str = "lkwreport";

struct Sleeper(Child);

impl Drop for Sleeper {
    fn drop(&mut self) {
        self.0.kill().ok();
        self.0.wait().ok();
    }
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

/// `stat -c FORMAT path`, a number.
fn stat(format: &str, path: &Path) -> u64 {
    let out = Command::new("stat")
        .arg("-c")
        .arg(format)
        .arg(path)
        .output()
        .unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn rfc3339(secs: u64) -> String {
    humantime::format_rfc3339_seconds(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs))
        .to_string()
}

/// The OS line, from the OS's own files and tools.
fn os_line() -> String {
    let kernel = String::from_utf8(Command::new("uname").arg("-r").output().unwrap().stdout)
        .unwrap()
        .trim()
        .to_owned();
    let text = std::fs::read_to_string("/etc/os-release")
        .or_else(|_| std::fs::read_to_string("/usr/lib/os-release"));
    let (name, version) = match text {
        Ok(text) => {
            let get = |k: &str| {
                text.lines()
                    .find_map(|l| l.strip_prefix(&format!("{k}=")))
                    .map(|v| v.trim().trim_matches('"').to_owned())
            };
            (
                get("NAME").unwrap_or_else(|| "Linux".into()),
                get("VERSION_ID"),
            )
        }
        Err(_) => {
            let v = Command::new("sw_vers")
                .arg("-productVersion")
                .output()
                .unwrap()
                .stdout;
            (
                "macOS".into(),
                Some(String::from_utf8(v).unwrap().trim().to_owned()),
            )
        }
    };
    match version {
        Some(v) => format!("{name} {v} (kernel {kernel})"),
        None => format!("{name} (kernel {kernel})"),
    }
}

#[test]
fn the_report_of_a_group_is_the_text_its_own_figures_give() {
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
    let mut members: Vec<PathBuf> = Vec::new();
    for (i, s) in sleepers.iter().enumerate() {
        for n in 0..4 {
            let d = root.join(format!("rep_{}_{n}_{ts}", s.0.id()));
            std::fs::create_dir(&d).unwrap();
            std::fs::write(d.join("f"), "leak".repeat(1 + i * 1000 + n * 300)).unwrap();
            members.push(d);
        }
    }
    // Two writers exit before the report: their 8 members are orphans.
    sleepers.truncate(4);
    std::fs::write(root.join("notes.txt"), "not a member").unwrap();

    // The figures, by hand.
    let items = members.len() as u64;
    let allocated = du::allocated(&members);
    let apparent = du::apparent(&members);
    let newest_of = |m: &PathBuf| stat("%Y", m).max(stat("%Y", &m.join("f")));
    let oldest = members.iter().map(newest_of).min().unwrap();
    let newest = members.iter().map(newest_of).max().unwrap();
    let birth = |m: &PathBuf| match stat("%W", m) {
        0 => stat("%Y", m),
        b => b,
    };
    let born_lo = members.iter().map(birth).min().unwrap();
    let born_hi = members.iter().map(birth).max().unwrap();
    let span = born_hi - born_lo;
    let per_day = |n: u64| n * 86_400 / span.max(86_400);
    let mut names: Vec<String> = members
        .iter()
        .map(|m| m.file_name().unwrap().to_str().unwrap().to_owned())
        .collect();
    names.sort();
    // The shape's pid run: the lengths of all six pids (the exited ones' names are still there).
    let lens: Vec<usize> = members
        .iter()
        .map(|m| {
            m.file_name().unwrap().to_str().unwrap()["rep_".len()..]
                .split('_')
                .next()
                .unwrap()
                .len()
        })
        .collect();
    let (lo, hi) = (*lens.iter().min().unwrap(), *lens.iter().max().unwrap());
    let pid_part = if lo == hi {
        format!("<digits{lo}>")
    } else {
        format!("<digits{lo}-{hi}>")
    };
    let template = format!("rep_{pid_part}_<digits1>_<ts>/");
    let exe_path = std::fs::canonicalize(&exe).unwrap();

    let expected = format!(
        "## `{WRITER}` leaves {items} dirs behind in the temp dir ({alloc_h})\n\
         \n\
         | | |\n\
         | --- | --- |\n\
         | Template | `{template}` |\n\
         | Where | `{root}` |\n\
         | Items | {items} |\n\
         | Allocated on disk | {alloc_h} ({allocated} bytes) |\n\
         | Apparent size | {app_h} ({apparent} bytes) |\n\
         | Growth | {grow_h} and {grow_n} items a day (from the members' birth times, born over {days:.1} days; a span under a day counts as one) |\n\
         | Oldest | {oldest_t} |\n\
         | Newest | {newest_t} |\n\
         | Writer | `{WRITER}` (version unknown), `{exe}` |\n\
         | OS | {os} |\n\
         \n\
         What names the writer:\n\
         \n\
         - pid in the name: `{WRITER}`, 16 of 24 members, 8 left by processes that have exited; it is running now\n\
         \n\
         Examples: `{e0}`, `{e1}`, `{e2}`\n\
         \n\
         ### What would fix it\n\
         \n\
         These dirs are named with the pid of the process that made them, and 8 of the 24 looked at were left by processes that have exited. Please remove each one when the process that made it is done with it (on teardown or exit), or keep them within the program's own lifetime: at start, remove those whose pid no longer runs.\n\
         \n\
         _Drafted by CacheWatch from a scan of this machine; nothing was sent anywhere._\n",
        alloc_h = format_bytes(i128::from(allocated)),
        app_h = format_bytes(i128::from(apparent)),
        root = root.display(),
        grow_h = format_bytes(i128::from(per_day(allocated))),
        grow_n = per_day(items),
        days = span as f64 / 86_400.0,
        oldest_t = rfc3339(oldest),
        newest_t = rfc3339(newest),
        exe = exe_path.display(),
        os = os_line(),
        e0 = names[0],
        e1 = names[1],
        e2 = names[2],
    );

    let (code, out, err) = cachewatch(dir.path(), &root, &["report", &template]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, expected);

    let (code, out, err) = cachewatch(dir.path(), &root, &["report", &template, "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["markdown"], expected.as_str());
    assert_eq!(v["subject"], "group");
    assert_eq!(v["template"], template.as_str());
    assert_eq!(v["items"], items);
    assert_eq!(v["allocated_bytes"], allocated);
    assert_eq!(v["apparent_bytes"], apparent);
    assert_eq!(v["growth"]["source"], "births");
    assert_eq!(v["growth"]["span_secs"], span);
    assert_eq!(v["oldest_unix_secs"], oldest);
    assert_eq!(v["newest_unix_secs"], newest);
    assert_eq!(v["writer"]["name"], WRITER);
    assert_eq!(v["evidence"][0]["kind"], "pid-in-name");
    assert_eq!(v["evidence"][0]["orphans"], 8);
    drop(sleepers);
}

#[test]
fn an_unknown_target_is_an_error_naming_the_groups_and_how_to_list_them() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap().join("root");
    std::fs::create_dir(&root).unwrap();
    for i in 0..20 {
        std::fs::create_dir(root.join(format!("job-{}", 1000 + i * 37))).unwrap();
    }
    let (code, out, err) = cachewatch(dir.path(), &root, &["report", "tmp<rand8>/"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("\"tmp<rand8>/\" is neither a group"), "{err}");
    assert!(err.contains("groups: job-<digits4>/"), "{err}");
    assert!(err.contains("`cachewatch scan`"), "{err}");
    assert!(err.contains("`cachewatch producers`"), "{err}");
}

#[test]
fn the_report_of_a_producer_takes_its_growth_from_the_history() {
    use cachewatch::history::{History, Sample, Series};
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        "[[producer]]\nid = \"my-leak\"\nname = \"My leak\"\nroot = \"temp\"\nitem = \"myleak-*\"\nkind = \"leak\"\nreclaim = \"manual\"\n",
    )
    .unwrap();
    let items: Vec<PathBuf> = (0..5)
        .map(|i| {
            let p = root.join(format!("myleak-{i}"));
            std::fs::write(&p, "x".repeat(1000 + i * 5000)).unwrap();
            p
        })
        .collect();
    std::fs::write(root.join("other.txt"), "not an item").unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    {
        std::fs::create_dir(dir.path().join("data")).unwrap();
        let mut h = History::open(&dir.path().join("data").join("cachewatch.db")).unwrap();
        let at = |s: u64| std::time::UNIX_EPOCH + std::time::Duration::from_secs(s);
        let sample = |bytes: u64, n: u64| Sample {
            series: Series::Producer("my-leak".into()),
            allocated_bytes: bytes,
            apparent_bytes: bytes,
            items: n,
        };
        h.record_samples(at(now - 2 * 86_400), &[sample(10_000, 2)])
            .unwrap();
        h.record_samples(at(now - 86_400), &[sample(60_000, 7)])
            .unwrap();
    }
    let allocated = du::allocated(&items);
    let apparent = du::apparent(&items);
    let oldest = items.iter().map(|p| stat("%Y", p)).min().unwrap();
    let newest = items.iter().map(|p| stat("%Y", p)).max().unwrap();
    let expected = format!(
        "## My leak leaves 5 items behind in the temp dir ({alloc_h})\n\
         \n\
         | | |\n\
         | --- | --- |\n\
         | Template | `myleak-*` |\n\
         | Where | `{root}` |\n\
         | Items | 5 |\n\
         | Allocated on disk | {alloc_h} ({allocated} bytes) |\n\
         | Apparent size | {app_h} ({apparent} bytes) |\n\
         | Growth | {grow_h} and 5 items a day (from CacheWatch's history, over 1.0 days) |\n\
         | Oldest | {oldest_t} |\n\
         | Newest | {newest_t} |\n\
         | Writer | My leak (CacheWatch rule `my-leak`) |\n\
         | OS | {os} |\n\
         \n\
         Examples: `myleak-0`, `myleak-1`, `myleak-2`\n\
         \n\
         ### What would fix it\n\
         \n\
         Nothing removes these items: 5 have piled up. Please remove each one on teardown, when the run that made it is done, or keep them within the program's own lifetime (one dir reused across runs, or old ones removed at start).\n\
         \n\
         _Drafted by CacheWatch from a scan of this machine; nothing was sent anywhere._\n",
        alloc_h = format_bytes(i128::from(allocated)),
        app_h = format_bytes(i128::from(apparent)),
        root = root.display(),
        grow_h = format_bytes(50_000),
        oldest_t = rfc3339(oldest),
        newest_t = rfc3339(newest),
        os = os_line(),
    );
    let (code, out, err) = cachewatch(dir.path(), &root, &["report", "my-leak"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, expected);
    let (_, out, _) = cachewatch(dir.path(), &root, &["report", "my-leak", "--json"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["subject"], "producer");
    assert_eq!(v["producer_id"], "my-leak");
    assert_eq!(v["growth"]["source"], "history");
    assert_eq!(v["growth"]["bytes_per_day"], 50_000);
    assert_eq!(v["growth"]["items_per_day"], 5);
    assert_eq!(v["growth"]["span_secs"], 86_400);
}
