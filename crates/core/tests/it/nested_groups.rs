//! Groups one level down: a top-level dir no rule claims whose children come from one template
//! (`tool-out/<ISO time>/` x 40) shows that group, with its hand count and `du`'s bytes, instead
//! of one lone entry holding it all; no byte is counted twice (producers, groups, lone entries and
//! the root's own entry add up to `du -s` of the root); a dir of ordinary words stays one lone
//! entry; names that are not UTF-8 group by their bytes and get no rule; and what the grouping
//! of one dir holds stays within its budget whatever the number of children.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use cachewatch_core::catalogue::ReclaimMode;
use cachewatch_core::inventory::Measure;
use cachewatch_core::scan::{scan_root_each_found, RootSummary, ScanProgress, Tally};
use cachewatch_core::shapes::{
    rule_for, Lone, Nested, RuleError, RuleOptions, NESTED_MAX_SHAPES, NESTED_NAME_BUDGET,
};
use cachewatch_core::{Catalogue, Root, RootKind};
use cachewatch_testkit::hostile::Rng;
use cachewatch_testkit::{du, tree};

/// `n` dirs named by ISO times with `:` written `-` (`2026-03-07T10-11-12`), each holding a few
/// files of varied sizes, under `dir`; their paths.
fn iso_dirs(dir: &Path, n: usize, seed: u64) -> Vec<PathBuf> {
    let mut r = Rng::new(seed);
    let mut out = Vec::new();
    while out.len() < n {
        let name = format!(
            "2026-{:02}-{:02}T{:02}-{:02}-{:02}",
            r.range(1, 12),
            r.range(1, 28),
            r.range(0, 23),
            r.range(0, 59),
            r.range(0, 59)
        );
        let p = dir.join(name);
        if p.exists() {
            continue;
        }
        let i = out.len();
        tree::write_file(&p.join("trace.zip"), 5000 + i * 3001);
        tree::write_file(&p.join("video.webm"), 100 + i * 977);
        tree::write_file(&p.join("logs/stdout.txt"), 10 * i);
        out.push(p);
    }
    out
}

fn scan(dir: &Path) -> (Tally, RootSummary) {
    let root = Root::new(RootKind::Other, dir).unwrap();
    let cat = Catalogue::builtin();
    let mut tally = Tally::new(10_000);
    let summary = scan_root_each_found(&root, &cat, &ScanProgress::new(), |f| {
        tally.add_found(&root, &f)
    });
    (tally, summary)
}

/// What a dir's own entry holds (`st_blocks * 512`, `st_size`).
fn own(path: &Path) -> (u64, u64) {
    let md = std::fs::symlink_metadata(path).unwrap();
    (md.blocks() * 512, md.size())
}

/// Producers, groups, lone entries and the root's own entry add up to `du -s` of the root, in
/// both allocated and apparent bytes: nothing left out, nothing counted twice.
fn assert_adds_up(tally: &Tally, dir: &Path) {
    let mut sum = Measure::default();
    for p in tally.producers() {
        sum.add(&p.measure);
    }
    for g in tally.unattributed_groups() {
        sum.add(&g.group.measure);
    }
    for u in tally.unattributed() {
        sum.add(&u.measure);
    }
    let (alloc, apparent) = own(dir);
    assert_eq!(sum.allocated_bytes + alloc, du::allocated(&[dir]));
    assert_eq!(sum.apparent_bytes + apparent, du::apparent(&[dir]));
}

fn tempdir() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(tmp.path()).unwrap().join("root");
    std::fs::create_dir(&dir).unwrap();
    (tmp, dir)
}

/// A few ordinary top-level entries beside what a test puts there.
fn ordinary(dir: &Path) {
    tree::write_file(&dir.join("notes.txt"), 1234);
    tree::write_file(&dir.join("cache/index"), 20_000);
    tree::write_file(&dir.join("report.pdf"), 70_000);
}

#[test]
fn iso_time_dirs_in_a_top_level_dir_form_one_group_inside_it_in_place_of_the_dir() {
    let (_tmp, dir) = tempdir();
    ordinary(&dir);
    let out = dir.join("tool-out");
    let members = iso_dirs(&out, 40, 7);
    let (tally, summary) = scan(&dir);
    assert_eq!(summary.total.allocated_bytes, du::allocated(&[&dir]));

    let groups = tally.unattributed_groups();
    assert_eq!(groups.len(), 1, "{groups:#?}");
    let g = &groups[0].group;
    assert_eq!(g.within.as_deref(), Some(OsStr::new("tool-out")));
    assert!(g.label().starts_with("tool-out/"), "{}", g.label());
    assert_eq!(g.items, 40);
    for m in &members {
        assert!(g.contains(m.file_name().unwrap(), true), "{m:?}");
    }
    // The members are all `tool-out` holds: its own entry counts in the group, which is then
    // exactly `du -s tool-out` (the members' `du` plus that entry).
    let (alloc, apparent) = own(&out);
    assert_eq!(g.measure.allocated_bytes, du::allocated(&members) + alloc);
    assert_eq!(g.measure.allocated_bytes, du::allocated(&[&out]));
    assert_eq!(g.measure.apparent_bytes, du::apparent(&members) + apparent);

    let lone: Vec<PathBuf> = tally.unattributed().into_iter().map(|u| u.path).collect();
    assert!(!lone.contains(&out), "{lone:?}");
    let mut want = vec![
        dir.join("cache"),
        dir.join("notes.txt"),
        dir.join("report.pdf"),
    ];
    want.sort();
    let mut got = lone.clone();
    got.sort();
    assert_eq!(got, want);
    assert_adds_up(&tally, &dir);
}

#[test]
fn a_dir_holding_more_than_its_group_stays_lone_with_only_the_rest() {
    let (_tmp, dir) = tempdir();
    ordinary(&dir);
    let out = dir.join("tool-out");
    let members = iso_dirs(&out, 40, 11);
    tree::write_file(&out.join("README.md"), 3000);
    tree::write_file(&out.join("config/settings.json"), 9000);
    let (tally, _) = scan(&dir);

    let groups = tally.unattributed_groups();
    assert_eq!(groups.len(), 1, "{groups:#?}");
    let g = &groups[0].group;
    assert_eq!(g.items, 40);
    assert_eq!(g.measure.allocated_bytes, du::allocated(&members));
    assert_eq!(g.measure.apparent_bytes, du::apparent(&members));

    let rest = tally
        .unattributed()
        .into_iter()
        .find(|u| u.path == out)
        .expect("tool-out with what is not in its group");
    let (alloc, apparent) = own(&out);
    let others = [out.join("README.md"), out.join("config")];
    assert_eq!(rest.measure.allocated_bytes, du::allocated(&others) + alloc);
    assert_eq!(
        rest.measure.apparent_bytes,
        du::apparent(&others) + apparent
    );
    assert_eq!(rest.measure.files, 2);
    assert_adds_up(&tally, &dir);
}

#[test]
fn a_dir_of_ordinary_words_forms_no_group_and_stays_one_lone_entry() {
    let (_tmp, dir) = tempdir();
    ordinary(&dir);
    let proj = dir.join("proj");
    let words = [
        "src",
        "notes",
        "build",
        "docs",
        "target",
        "assets",
        "scripts",
        "tests",
        "vendor",
        "bin",
        "lib",
        "include",
        "examples",
        "benches",
        "config",
        "data",
        "images",
        "fonts",
        "styles",
        "locales",
        "migrations",
        "templates",
        "public",
        "static",
        "tools",
        "extras",
        "legacy",
        "output",
        "media",
        "archive",
    ];
    for (i, w) in words.iter().enumerate() {
        tree::write_file(&proj.join(w).join("file"), 500 + i * 1777);
    }
    let (tally, _) = scan(&dir);
    let groups = tally.unattributed_groups();
    assert!(groups.is_empty(), "{groups:#?}");
    let p = tally
        .unattributed()
        .into_iter()
        .find(|u| u.path == proj)
        .expect("proj is a lone entry");
    assert_eq!(p.measure.allocated_bytes, du::allocated(&[&proj]));
    assert_eq!(p.measure.apparent_bytes, du::apparent(&[&proj]));
    assert_adds_up(&tally, &dir);
}

#[test]
fn names_that_are_not_utf8_group_by_bytes_one_level_down_and_get_no_rule() {
    let (_tmp, dir) = tempdir();
    ordinary(&dir);
    // Members `\xffrun-<n>` in `tool-out`, and `run-<n>` in the dir `out\xfe`.
    let out = dir.join("tool-out");
    let odd_parent = dir.join(OsString::from_vec(b"out\xfe".to_vec()));
    let mut members = Vec::new();
    let mut plain_in_odd = Vec::new();
    for i in 0..30 {
        let mut name = vec![0xff];
        name.extend(format!("run-{}", 1000 + i * 37).bytes());
        let m = out.join(OsString::from_vec(name));
        tree::write_file(&m.join("f"), 100 + i * 313);
        members.push(m);
        let p = odd_parent.join(format!("run-{}", 2000 + i * 41));
        tree::write_file(&p.join("f"), 200 + i * 211);
        plain_in_odd.push(p);
    }
    // One name that differs from the members only in a byte that renders alike.
    let stray = out.join(OsString::from_vec(b"\xfe run".to_vec()));
    tree::write_file(&stray.join("f"), 50);

    let (tally, _) = scan(&dir);
    let groups = tally.unattributed_groups();
    assert_eq!(groups.len(), 2, "{groups:#?}");
    let in_out = groups
        .iter()
        .find(|g| g.group.within.as_deref() == Some(OsStr::new("tool-out")))
        .unwrap();
    assert_eq!(in_out.group.items, 30);
    assert_eq!(
        in_out.group.measure.allocated_bytes,
        du::allocated(&members)
    );
    assert!(!in_out.group.contains(stray.file_name().unwrap(), true));
    assert!(
        in_out.group.label().starts_with("tool-out/\\xff"),
        "{}",
        in_out.group.label()
    );
    let in_odd = groups
        .iter()
        .find(|g| g.group.within.as_deref().map(OsStr::as_bytes) == Some(b"out\xfe"))
        .unwrap();
    assert_eq!(in_odd.group.items, 30);
    assert!(
        in_odd.group.label().starts_with("out\\xfe/"),
        "{}",
        in_odd.group.label()
    );
    // `out\xfe` held only its members; `tool-out` also holds the stray, left lone with it.
    let (alloc, _) = own(&odd_parent);
    assert_eq!(
        in_odd.group.measure.allocated_bytes,
        du::allocated(&plain_in_odd) + alloc
    );
    let rest = tally
        .unattributed()
        .into_iter()
        .find(|u| u.path == out)
        .unwrap();
    assert_eq!(
        rest.measure.allocated_bytes,
        du::allocated(&[&stray]) + own(&out).0
    );
    assert_adds_up(&tally, &dir);

    // No rule for either: a glob cannot say those bytes, whether in the member or in the dir.
    for g in [in_out, in_odd] {
        let opts = RuleOptions {
            id: "local-odd".into(),
            name: None,
            reclaim: ReclaimMode::Manual,
            writer: None,
            evidence: Vec::new(),
        };
        match rule_for(RootKind::Other, &g.group, &opts) {
            Err(e @ RuleError::NotText { .. }) => {
                let text = e.to_string();
                assert!(text.contains(&format!("{:?}", g.group.shown())), "{text}");
                assert!(text.contains("no rule is made"), "{text}");
            }
            other => panic!("{}: {other:?}", g.group.label()),
        }
    }
}

/// 100,000 children of random names and shapes: the grouping of the dir they are in keeps at
/// most its budget of names and shapes, and finds no group.
#[test]
fn the_grouping_of_a_dir_of_100k_random_children_stays_within_its_budget() {
    let mut r = Rng::new(42);
    let mut nested = Nested::new();
    let m = Measure {
        allocated_bytes: 4096,
        apparent_bytes: 100,
        freeable_bytes: 4096,
        files: 1,
        ..Measure::default()
    };
    let letters = b"abcdefghijklmnopqrstuvwxyz";
    let mut peak = (0, 0, 0);
    for i in 0..100_000u32 {
        // Words of letters (no placeholder), words with a number in a place of its own (a new
        // shape each), and random runs.
        let len = r.range(1, 30) as usize;
        let name = match i % 3 {
            0 => {
                let n = r.range(3, 40) as usize;
                r.from(letters, n)
            }
            1 => format!(
                "{}{}{}",
                r.from(letters, 4),
                r.range(0, 99_999),
                r.from(letters, len.min(12))
            ),
            _ => r.alnum(len.max(6)),
        };
        nested.add(OsStr::new(&name), i % 2 == 0, &m);
        if i % 1000 == 999 {
            let (names, bytes) = nested.names_held();
            peak = (
                peak.0.max(names),
                peak.1.max(bytes),
                peak.2.max(nested.shapes()),
            );
        }
    }
    assert_eq!(nested.children(), 100_000);
    let (names, bytes, _) = peak;
    assert!(
        bytes + names * std::mem::size_of::<Lone>() <= NESTED_NAME_BUDGET,
        "{names} names of {bytes} bytes"
    );
    assert!(peak.2 <= NESTED_MAX_SHAPES, "{} shapes", peak.2);
    // It held something: the budget is what stopped it, not an empty grouping.
    assert!(names > 1000, "{names}");
    assert!(nested.finish(OsStr::new("d")).is_none());
}

/// Run dirs that each hold many frames of one template: the run dirs are the group (one level
/// down), and no run dir shows a group of its frames as well (two levels down): those bytes are
/// in the first group already. Nested groups of the subdirs of a dir that is no group are kept.
#[test]
fn a_subdir_that_is_a_member_of_a_group_shows_no_group_of_its_own() {
    let (_tmp, dir) = tempdir();
    ordinary(&dir);
    let out = dir.join("tool-out");
    let runs = iso_dirs(&out, 24, 9);
    for (i, r) in runs.iter().enumerate() {
        for f in 0..21 {
            tree::write_file(&r.join(format!("frame-{:04}.png", f * 3 + 1)), 300 + i + f);
        }
    }
    // Beside it, a dir of a few project dirs, one holding frames: a group two levels down.
    let frames: Vec<PathBuf> = (0..23)
        .map(|f| {
            let p = dir
                .join("studio/clip/")
                .join(format!("frame-{:04}.png", f * 5 + 2));
            tree::write_file(&p, 1000 + f * 77);
            p
        })
        .collect();
    tree::write_file(&dir.join("studio/readme.md"), 500);
    let (tally, _) = scan(&dir);
    let groups = tally.unattributed_groups();
    assert_eq!(groups.len(), 2, "{groups:#?}");
    let runs_g = groups
        .iter()
        .find(|g| g.group.within.as_deref() == Some(OsStr::new("tool-out")))
        .expect("the run dirs' group");
    assert_eq!(runs_g.group.items, 24);
    assert_eq!(runs_g.group.measure.allocated_bytes, du::allocated(&[&out]));
    let clip = groups
        .iter()
        .find(|g| g.group.within.as_deref() == Some(OsStr::new("studio/clip")))
        .expect("the frames' group two levels down");
    assert_eq!(clip.group.items, 23);
    assert_eq!(clip.group.top_dir(), Some(OsStr::new("studio")));
    assert_eq!(clip.group.measure.allocated_bytes, du::allocated(&frames));
    assert!(
        clip.group.label().starts_with("studio/clip/frame-"),
        "{}",
        clip.group.label()
    );
    let studio = tally
        .unattributed()
        .into_iter()
        .find(|u| u.path == dir.join("studio"))
        .expect("studio's rest");
    assert_eq!(
        studio.measure.allocated_bytes,
        du::allocated(&[dir.join("studio")]) - du::allocated(&frames)
    );
    assert_adds_up(&tally, &dir);
}
