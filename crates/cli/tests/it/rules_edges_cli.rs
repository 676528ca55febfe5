//! `rules suggest|add|ignore` and `report` on groups whose names are hard to print: a newline in
//! the names, a leading dash, a quote, names that print the same but differ in bytes (a literal
//! backslash and a byte that is not UTF-8). What suggest prints must be valid TOML and its
//! commands valid shell that name the group they were printed for.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use cachewatch_testkit::du;
use serde_json::Value;

/// Runs the binary with `dir`'s config.toml (or `config`) and data dir, and `args`.
fn cw_with(dir: &Path, config: &Path, args: &[&OsStr]) -> (i32, String, String) {
    cw_data(config, &dir.join("data"), args)
}

/// Runs the binary with the config `config`, the data dir `data` and `args`.
fn cw_data(config: &Path, data: &Path, args: &[&OsStr]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_cachewatch"))
        .arg("--config")
        .arg(config)
        .arg("--data-dir")
        .arg(data)
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn cw(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    cw_with(dir, &dir.join("config.toml"), &args)
}

/// A scratch dir with an empty config and an empty `root`; the root's canonical path.
fn scratch() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(dir.path().join("config.toml"), "# mine\n").unwrap();
    (dir, root)
}

/// `n` dirs in `root` named `name(i)` (bytes), each holding one file of 700 bytes; their paths.
fn make(root: &Path, n: usize, name: impl Fn(usize) -> Vec<u8>) -> Vec<PathBuf> {
    (0..n)
        .map(|i| {
            let p = root.join(OsStr::from_bytes(&name(i)));
            std::fs::create_dir(&p).unwrap();
            std::fs::write(p.join("f"), [7u8; 700]).unwrap();
            p
        })
        .collect()
}

fn root_arg(root: &Path) -> String {
    format!("temp={}", root.display())
}

/// The producer `id` in `scan --json` with `config`.
fn producer(dir: &Path, config: &Path, root: &Path, id: &str) -> Value {
    let ra = root_arg(root);
    let (code, out, err) = cw_with(
        dir,
        config,
        &[
            OsStr::new("scan"),
            OsStr::new("--json"),
            OsStr::new("--root"),
            OsStr::new(&ra),
        ],
    );
    assert!(code == 0 || code == 3, "exit {code}: {err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    v["producers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == id)
        .unwrap_or_else(|| panic!("no producer {id}: {out}"))
        .clone()
}

#[test]
fn suggest_output_with_a_newline_in_the_names_is_a_config_that_loads() {
    let (dir, root) = scratch();
    let members = make(&root, 21, |i| {
        format!("run {}\nx", 1000 + i * 37).into_bytes()
    });
    let (code, out, err) = cw(
        dir.path(),
        &["rules", "suggest", "--root", &root_arg(&root)],
    );
    assert_eq!(code, 0, "{err}");
    let sugg = dir.path().join("s.toml");
    std::fs::write(&sugg, &out).unwrap();
    // Each comment is one line: the raw newline is written \x0a.
    let comment = out.lines().find(|l| l.starts_with("# run ")).unwrap();
    assert!(comment.contains("run <digits4>\\x0ax/"), "{out}");
    let id = out
        .lines()
        .find_map(|l| l.strip_prefix("id = \""))
        .unwrap()
        .trim_end_matches('"')
        .to_owned();
    let p = producer(dir.path(), &sugg, &root, &id);
    assert_eq!(p["items"], members.len() as u64, "{out}");
    assert_eq!(p["allocated_bytes"], du::allocated(&members));
}

/// The `cachewatch rules add ...` command of suggest's comment on a group, run through `sh` with
/// the binary, the config and the data dir given first, and the root to scan.
fn run_printed(dir: &Path, comment: &str, root: &Path) -> (i32, String, String) {
    let at = comment.find("cachewatch rules add ").expect("a command");
    let cmd = &comment[at + "cachewatch rules add ".len()..];
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "\"$0\" --config \"$1\" --data-dir \"$2\" rules add --root \"$3\" {cmd}"
        ))
        .arg(env!("CARGO_BIN_EXE_cachewatch"))
        .arg(dir.join("config.toml"))
        .arg(dir.join("data"))
        .arg(root_arg(root))
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_printed_command_adds_a_rule_for_a_shape_with_a_leading_dash_and_a_quote() {
    let (dir, root) = scratch();
    let members = make(&root, 21, |i| {
        format!("-it's run {}", 1000 + i * 37).into_bytes()
    });
    let (code, out, err) = cw(
        dir.path(),
        &["rules", "suggest", "--root", &root_arg(&root)],
    );
    assert_eq!(code, 0, "{err}");
    let comment = out.lines().find(|l| l.starts_with("# -it")).expect(&out);
    let (code, added, err) = run_printed(dir.path(), comment, &root);
    assert_eq!(code, 0, "{comment}: {err}");
    assert!(added.starts_with("Added producer"), "{added}");
    let id = comment
        .split("--id ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .to_owned();
    let p = producer(dir.path(), &dir.path().join("config.toml"), &root, &id);
    assert_eq!(p["items"], members.len() as u64);
    assert_eq!(p["allocated_bytes"], du::allocated(&members));

    // `--` before a shape is taken by report and rules ignore too.
    let shape = "-it's run <digits4>/";
    let (code, _, err) = cw(
        dir.path(),
        &["report", "--root", &root_arg(&root), "--", "-x"],
    );
    assert_ne!(code, 0);
    assert!(err.contains("\"-x\" is neither a group"), "{err}");
    let (code, out, err) = cw(dir.path(), &["rules", "ignore", "--", shape]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("Ignored"), "{out}");
}

/// Members in `root`: 21 dirs `h\xffz<tail>-N` spelled with a backslash (four characters) and
/// 21 with the byte 0xff (one byte), for each tail; they print the same shape, not the same label.
fn look_alikes(root: &Path, tail: &str) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let text = make(root, 21, |i| {
        format!("h\\xffz{tail}-{}", 1000 + i * 37).into_bytes()
    });
    let bytes = make(root, 21, |i| {
        let mut n = b"h\xffz".to_vec();
        n.extend_from_slice(format!("{tail}-{}", 2000 + i * 41).as_bytes());
        n
    });
    (text, bytes)
}

#[test]
fn groups_that_print_the_same_are_told_apart_by_their_labels() {
    let (dir, root) = scratch();
    let (text, bytes) = look_alikes(&root, "");
    let (text_lt, _) = look_alikes(&root, "<");
    let ra = root_arg(&root);

    let (code, out, err) = cw(dir.path(), &["rules", "suggest", "--json", "--root", &ra]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let mut seen: Vec<(String, String, u64)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["shape"].as_str().unwrap().to_owned(),
                s["label"].as_str().unwrap().to_owned(),
                s["items"].as_u64().unwrap(),
            )
        })
        .collect();
    seen.sort();
    // By hand: a backslash is `\\` in a label, `<` is `\<`, the byte 0xff is `\xff`.
    let want = |shape: &str, label: &str| (shape.to_owned(), label.to_owned(), 21u64);
    let mut expected = vec![
        want(r"h\xffz-<digits4>/", r"h\\xffz-<digits4>/"),
        want(r"h\xffz-<digits4>/", r"h\xffz-<digits4>/"),
        want(r"h\xffz<-<digits4>/", r"h\\xffz\<-<digits4>/"),
        want(r"h\xffz<-<digits4>/", r"h\xffz\<-<digits4>/"),
    ];
    expected.sort();
    assert_eq!(seen, expected);

    // The command suggest prints names the backslash group: its rule claims exactly it.
    let (_, out, _) = cw(dir.path(), &["rules", "suggest", "--root", &ra]);
    let comment = out
        .lines()
        .find(|l| l.contains(r"-- 'h\\xffz-<digits4>/'"))
        .unwrap_or_else(|| panic!("{out}"));
    let (code, added, err) = run_printed(dir.path(), comment, &root);
    assert_eq!(code, 0, "{err}");
    assert!(added.starts_with("Added producer"), "{added}");
    let id = comment
        .split("--id ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    let p = producer(dir.path(), &dir.path().join("config.toml"), &root, id);
    assert_eq!(p["items"], text.len() as u64);
    assert_eq!(p["allocated_bytes"], du::allocated(&text));

    // A shape two groups of the one root print as: an error naming both labels, not "2 roots".
    for cmd in [
        vec![
            "rules",
            "add",
            "--id",
            "hx",
            "--root",
            &ra,
            "--",
            r"h\xffz<-<digits4>/",
        ],
        vec!["report", "--root", &ra, "--", r"h\xffz<-<digits4>/"],
    ] {
        let (code, _, err) = cw(dir.path(), &cmd);
        assert_ne!(code, 0, "{cmd:?}");
        assert!(!err.contains("roots"), "{cmd:?}: {err}");
        assert!(
            err.contains("2 different groups in the root"),
            "{cmd:?}: {err}"
        );
        assert!(
            err.contains(r"'h\\xffz\<-<digits4>/'") && err.contains(r"'h\xffz\<-<digits4>/'"),
            "{err}"
        );
    }
    // Either label names its group.
    let (code, added, err) = cw(
        dir.path(),
        &[
            "rules",
            "add",
            "--id",
            "hx",
            "--root",
            &ra,
            "--",
            r"h\\xffz\<-<digits4>/",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(added.starts_with("Added producer"), "{added}");
    let p = producer(dir.path(), &dir.path().join("config.toml"), &root, "hx");
    assert_eq!(p["items"], text_lt.len() as u64);
    assert_eq!(p["allocated_bytes"], du::allocated(&text_lt));
    // The byte group's label names it: refused (its names are not text), not ambiguous.
    let (code, _, err) = cw(
        dir.path(),
        &[
            "rules",
            "add",
            "--id",
            "hb",
            "--root",
            &ra,
            "--",
            r"h\xffz-<digits4>/",
        ],
    );
    assert_ne!(code, 0);
    assert!(
        err.contains("not UTF-8 text") && !err.contains("roots"),
        "{err}"
    );
    let (code, md, err) = cw(
        dir.path(),
        &["report", "--root", &ra, "--", r"h\xffz-<digits4>/"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(md.contains(&format!("| Items | {} |", bytes.len())), "{md}");
    assert!(
        md.contains(&format!("({} bytes)", du::allocated(&bytes))),
        "{md}"
    );
}

/// `[groups] ignore` of the config file in `dir`, read by hand: one array line of TOML strings,
/// literal ('...', no escapes) or basic ("...", read as JSON reads it).
fn ignore_list(dir: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(dir.join("config.toml")).unwrap();
    let Some(line) = text.lines().find(|l| l.starts_with("ignore = [")) else {
        return Vec::new();
    };
    let mut rest = line.split_once('[').unwrap().1;
    let mut out = Vec::new();
    loop {
        rest = rest.trim_start_matches([' ', ',']);
        if let Some(r) = rest.strip_prefix('\'') {
            let end = r.find('\'').unwrap();
            out.push(r[..end].to_owned());
            rest = &r[end + 1..];
        } else if let Some(r) = rest.strip_prefix('"') {
            let mut end = 0;
            let b = r.as_bytes();
            while b[end] != b'"' {
                end += if b[end] == b'\\' { 2 } else { 1 };
            }
            out.push(serde_json::from_str(&format!("\"{}\"", &r[..end])).unwrap());
            rest = &r[end + 1..];
        } else {
            assert!(rest.starts_with(']'), "{line}");
            return out;
        }
    }
}

/// The labels of the groups `status --json` shows (the monitor's snapshot, `[groups] ignore`
/// applied).
fn shown_labels(dir: &Path, root: &Path) -> Vec<String> {
    let (code, out, err) = cw(dir, &["status", "--json", "--root", &root_arg(root)]);
    assert!(code == 0 || code == 3, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    v["unattributed_groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["label"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn ignoring_the_printed_shape_keeps_the_label_that_hides_the_group() {
    let (dir, root) = scratch();
    make(&root, 21, |i| {
        format!("a\\b-{}", 1000 + i * 37).into_bytes()
    });
    look_alikes(&root, "<");
    let ra = root_arg(&root);
    let before = shown_labels(dir.path(), &root);
    assert!(
        before.contains(&r"a\\b-<digits4>/".to_owned()),
        "{before:?}"
    );

    // The shape as scan prints it (one backslash): its label (two) is what is kept.
    let (code, out, err) = cw(
        dir.path(),
        &["rules", "ignore", "--root", &ra, "--", r"a\b-<digits4>/"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with(r"Ignored 'a\\b-<digits4>/'"), "{out}");
    assert_eq!(ignore_list(dir.path()), vec![r"a\\b-<digits4>/".to_owned()]);
    let after = shown_labels(dir.path(), &root);
    let mut want = before.clone();
    want.retain(|l| l != r"a\\b-<digits4>/");
    assert_eq!(after, want);

    // The printed shape of two groups of different names: refused, both labels named, nothing
    // kept.
    let config = std::fs::read(dir.path().join("config.toml")).unwrap();
    let (code, _, err) = cw(
        dir.path(),
        &[
            "rules",
            "ignore",
            "--root",
            &ra,
            "--",
            r"h\xffz<-<digits4>/",
        ],
    );
    assert_ne!(code, 0);
    assert!(
        err.contains(r"'h\\xffz\<-<digits4>/'") && err.contains(r"'h\xffz\<-<digits4>/'"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(dir.path().join("config.toml")).unwrap(),
        config
    );
    // Either label is kept as given.
    let (code, _, err) = cw(
        dir.path(),
        &[
            "rules",
            "ignore",
            "--root",
            &ra,
            "--",
            r"h\xffz\<-<digits4>/",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        ignore_list(dir.path()),
        vec![
            r"a\\b-<digits4>/".to_owned(),
            r"h\xffz\<-<digits4>/".to_owned()
        ]
    );
}

#[test]
fn a_data_dir_that_is_a_file_or_a_database_that_is_a_dir_is_said_where_the_history_is_read() {
    let (dir, root) = scratch();
    make(&root, 21, |i| format!("tmpq{}", 1000 + i * 37).into_bytes());
    let ra = root_arg(&root);
    let afile = dir.path().join("afile");
    std::fs::write(&afile, "precious\n").unwrap();
    let dbdir = dir.path().join("dd");
    std::fs::create_dir_all(dbdir.join("cachewatch.db")).unwrap();
    let run = |data: &Path, args: &[&str]| {
        let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
        cw_data(&dir.path().join("config.toml"), data, &args)
    };
    let not_dir = format!("--data-dir {afile:?} is not a directory (it is a regular file)");
    let db = dbdir.join("cachewatch.db");
    let not_file =
        format!("cannot read the history database {db:?}: it is a directory, not a regular file");
    for (data, said) in [(&afile, &not_dir), (&dbdir, &not_file)] {
        let (code, _, err) = run(data, &["history"]);
        assert_ne!(code, 0);
        assert!(err.contains(said.as_str()), "{err}");
        assert!(
            !err.contains("refusing to write") && !err.contains("run `cachewatch watch`"),
            "{err}"
        );
        let (code, out, err) = run(data, &["status", "--json", "--root", &ra]);
        assert!(code == 0 || code == 3, "{err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert!(
            v["errors"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e.as_str().unwrap().contains(said.as_str())),
            "{out}"
        );
        let (code, _, err) = run(data, &["rules", "suggest", "--root", &ra]);
        assert_eq!(code, 0, "{err}");
        assert!(err.contains(said.as_str()), "{err}");
        let (code, _, err) = run(data, &["report", "--root", &ra, "--", "tmpq<digits4>/"]);
        assert_eq!(code, 0, "{err}");
        assert!(err.contains(said.as_str()), "{err}");
    }
    // Nothing lost: the file and the dir are as they were.
    assert_eq!(std::fs::read_to_string(&afile).unwrap(), "precious\n");
    assert_eq!(std::fs::read_dir(&db).unwrap().count(), 0);
}

#[test]
fn report_examples_keep_pipes_outside_the_table_and_backticks_in_one_span() {
    let (dir, root) = scratch();
    let members = make(&root, 21, |i| {
        format!("p|q`r-{}", 1000 + i * 37).into_bytes()
    });
    let ra = root_arg(&root);
    let (code, md, err) = cw(
        dir.path(),
        &["report", "--root", &ra, "--", "p|q`r-<digits4>/"],
    );
    assert_eq!(code, 0, "{err}");
    // The first three members in byte order, each one span fenced with two backticks.
    let mut names: Vec<String> = members
        .iter()
        .map(|p| p.file_name().unwrap().to_str().unwrap().to_owned())
        .collect();
    names.sort();
    let want: Vec<String> = names[..3].iter().map(|n| format!("``{n}``")).collect();
    let line = md.lines().find(|l| l.starts_with("Examples: ")).expect(&md);
    assert_eq!(line, format!("Examples: {}", want.join(", ")));
    // In the table a pipe is escaped, as a cell needs.
    assert!(md.contains("| Template | ``p\\|q`r-<digits4>/`` |"), "{md}");
}

#[test]
fn examples_and_explain_write_a_byte_that_is_not_utf8_as_the_shape_does() {
    let (dir, root) = scratch();
    let (text, bytes) = look_alikes(&root, "");
    let ra = root_arg(&root);
    let (code, out, err) = cw(dir.path(), &["scan", "--json", "--root", &ra]);
    assert!(code == 0 || code == 3, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    // By hand: the first three members in byte order of each group, a backslash doubled, the
    // byte 0xff as \xff.
    let first3 = |ms: &[PathBuf], esc: &dyn Fn(&str) -> String| -> Vec<String> {
        let mut n: Vec<String> = ms
            .iter()
            .map(|p| {
                let b = p.file_name().unwrap().as_bytes();
                let z = b.iter().position(|&c| c == b'z').unwrap();
                esc(std::str::from_utf8(&b[z + 1..]).unwrap())
            })
            .collect();
        n.sort();
        n.truncate(3);
        n
    };
    let want_text = first3(&text, &|rest| format!("h\\\\xffz{rest}"));
    let want_bytes = first3(&bytes, &|rest| format!("h\\xffz{rest}"));
    let examples = |label: &str| -> Vec<String> {
        v["unattributed_groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["label"] == label)
            .unwrap_or_else(|| panic!("{label}: {out}"))["examples"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(examples(r"h\\xffz-<digits4>/"), want_text);
    assert_eq!(examples(r"h\xffz-<digits4>/"), want_bytes);

    let (code, md, err) = cw(
        dir.path(),
        &["report", "--root", &ra, "--", r"h\xffz-<digits4>/"],
    );
    assert_eq!(code, 0, "{err}");
    let spans: Vec<String> = want_bytes.iter().map(|e| format!("`{e}`")).collect();
    assert!(
        md.contains(&format!("Examples: {}\n", spans.join(", "))),
        "{md}"
    );

    // explain writes the path the same way in both places it names it.
    let mut args: Vec<&OsStr> = vec![OsStr::new("explain"), OsStr::new("--root"), OsStr::new(&ra)];
    args.push(bytes[0].as_os_str());
    let (code, out, err) = cw_with(dir.path(), &dir.path().join("config.toml"), &args);
    assert_eq!(code, 0, "{err}");
    let shown = format!("{}/h\\xffz-2000", root.display());
    assert_eq!(out.matches(&shown).count(), 2, "{out}");
    assert!(!out.contains('\u{fffd}'), "{out}");
}
