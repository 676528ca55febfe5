//! The labelled corpus: 32 leak templates drawn with seeded randomness the way real leaks draw
//! their names (pids of 2 to 6 digits, thread indexes, counters 0-99, hex that may come out all
//! digits or all letters, ISO and epoch times, UUIDs of both cases, mkdtemp runs) among 1,000+
//! ordinary names of a home's caches (words, dates, versioned files, numbered photos and
//! reports), as a real tree scanned as `cachewatch scan` does. Prints the grouping accuracy
//! (Loghub's: an entry is right when its group is exactly its template's entries; and the
//! pair-based F-measure) and the worst splits; fails below 0.99, when an ordinary name joins a
//! leak's group, or when a template's group is not its hand count and `du`'s bytes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use cachewatch_core::scan::{scan_root_each, ScanProgress, Tally};
use cachewatch_core::{Catalogue, Root, RootKind};
use cachewatch_testkit::hostile::Rng;
use cachewatch_testkit::{du, tree};

/// A leak template: its label, whether it leaves dirs, how many, and how a name is drawn.
type Template = (&'static str, bool, usize, fn(&mut Rng, usize) -> String);

fn pid(r: &mut Rng) -> u64 {
    let digits = r.range(2, 6) as u32;
    r.range(10u64.pow(digits - 1), 10u64.pow(digits) - 1)
}

fn epoch_s(r: &mut Rng) -> u64 {
    r.range(1_700_000_000, 1_790_000_000)
}

fn iso(r: &mut Rng, sep: char) -> String {
    format!(
        "2026-{:02}-{:02}T{:02}{sep}{:02}{sep}{:02}",
        r.range(1, 12),
        r.range(1, 28),
        r.range(0, 23),
        r.range(0, 59),
        r.range(0, 59)
    )
}

const LOWER_AN: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
const UPPER_HEX: &[u8] = b"0123456789ABCDEF";

const TEMPLATES: &[Template] = &[
    ("engine_pid_thread_ts", true, 60, |r, i| {
        format!("kestrel_{}_{}_{}", pid(r), i % 2, epoch_s(r))
    }),
    ("lsp_hex6_counter", true, 45, |r, _| {
        format!("lspd{}-{}", r.hex(6), r.range(0, 99))
    }),
    ("mkdtemp", true, 30, |r, _| format!("pbx{}", r.alnum(8))),
    ("uuid_lower", true, 25, |r, _| format!("swc-{}", r.uuid())),
    ("uuid_upper", true, 22, |r, _| {
        format!("Model_{}.mlmodelc", r.uuid().to_uppercase())
    }),
    ("hex16_digits8", false, 22, |r, _| {
        format!(".{}-{}.bin", r.hex(16), r.from(b"0123456789", 8))
    }),
    ("epoch_ms", false, 24, |r, _| {
        format!("esb-{}.trace", epoch_s(r) * 1000 + r.range(0, 999))
    }),
    ("dotted_rand6", true, 21, |r, _| {
        format!("ocl.{}", r.alnum(6))
    }),
    ("core_pid", false, 26, |r, _| format!("core.{}", pid(r))),
    ("jvm_pid_log", false, 30, |r, _| {
        format!("jvm-{}.log", pid(r))
    }),
    ("iso_dash_dir", true, 28, |r, _| {
        format!("run-{}", iso(r, '-'))
    }),
    ("iso_colon_json", false, 25, |r, _| {
        format!("trace-{}.{:03}Z.json", iso(r, ':'), r.range(0, 999))
    }),
    ("worker_pid_counter", false, 40, |r, _| {
        format!("worker-{}-{}.sock", pid(r), r.range(0, 99))
    }),
    ("build_hex8", true, 34, |r, _| format!("build-{}", r.hex(8))),
    ("hex40_pack", false, 20, |r, _| {
        format!("{}.pack", r.hex(40))
    }),
    ("php_session", false, 30, |r, _| {
        format!("sess_{}", r.from(LOWER_AN, 26))
    }),
    ("v8_pid_n", true, 33, |r, _| {
        format!("v8-compile-{}-{}", pid(r), r.range(0, 99))
    }),
    ("node_heap", false, 24, |r, i| {
        format!(
            "Heap.{}.{}.{}.heapsnapshot",
            epoch_s(r) * 1000 + r.range(0, 999),
            pid(r),
            i % 3
        )
    }),
    ("rust_analyzer_pid", false, 21, |r, _| {
        format!("rust-analyzer-{}.log", pid(r))
    }),
    ("codecache_uuid", false, 23, |r, _| {
        format!("CodeCache_{}.tmp", r.uuid().to_uppercase())
    }),
    ("upload_epoch", false, 27, |r, _| {
        format!("upload-{}.part", epoch_s(r))
    }),
    ("iso_basic", false, 22, |r, _| {
        format!(
            "dump-2026{:02}{:02}T{:02}{:02}{:02}Z.json",
            r.range(1, 12),
            r.range(1, 28),
            r.range(0, 23),
            r.range(0, 59),
            r.range(0, 59)
        )
    }),
    ("gobuild_digits9", true, 25, |r, _| {
        format!("go-build{}", r.range(100_000_000, 999_999_999))
    }),
    ("chromium_rand6", true, 21, |r, _| {
        format!(".org.chromium.Chromium.{}", r.alnum(6))
    }),
    ("pip_lower_rand", true, 26, |r, _| {
        format!("pip-unpack-{}", r.from(LOWER_AN, 8))
    }),
    ("app_pid_counter", false, 29, |r, _| {
        format!("com.example.sync.{}.{}", pid(r), r.range(0, 99))
    }),
    ("img_counter_hex", false, 31, |r, _| {
        format!("thumb-{}-{}.cache", r.range(0, 99), r.hex(8))
    }),
    ("snap_epoch_pid", false, 20, |r, _| {
        format!("snap-{}-{}.tmp", epoch_s(r), pid(r))
    }),
    ("thread_uuid_lock", false, 24, |r, _| {
        format!("thread-{}-{}.lock", r.range(0, 7), r.uuid())
    }),
    ("xcode_hex12_upper", false, 20, |r, _| {
        format!("Xcode-{}.log", r.from(UPPER_HEX, 12))
    }),
    ("tool_slug_ts", true, 23, |r, i| {
        format!("mytool-logs-{}-{}", i % 4, epoch_s(r))
    }),
    ("ipc_pid", false, 35, |r, _| format!("ipc-{}", pid(r))),
];

/// Words of a home's caches (none a leak's literal).
const WORDS: &[&str] = &[
    "notes",
    "invoice",
    "budget",
    "vacation",
    "family",
    "garden",
    "recipe",
    "resume",
    "letter",
    "contract",
    "slides",
    "thesis",
    "draft",
    "summary",
    "agenda",
    "minutes",
    "photo",
    "scan",
    "receipt",
    "ticket",
    "manual",
    "guide",
    "backup",
    "archive",
    "music",
    "podcast",
    "video",
    "movie",
    "album",
    "playlist",
    "project",
    "design",
    "sketch",
    "logo",
    "banner",
    "poster",
    "report",
    "chart",
    "table",
    "survey",
    "lesson",
    "homework",
    "course",
    "lecture",
    "paper",
    "review",
    "article",
    "journal",
    "diary",
    "calendar",
    "contacts",
    "wallet",
    "passport",
    "insurance",
    "medical",
    "taxes",
    "mortgage",
    "lease",
    "warranty",
    "license",
];
const EXTS: &[&str] = &[
    "pdf", "docx", "txt", "md", "xlsx", "pptx", "png", "jpg", "zip", "csv", "json", "html",
];
const TOOLS: &[&str] = &[
    "ripgrep", "fd", "bat", "jq", "node", "python", "go", "rustc", "cmake", "ninja", "llvm",
    "openssl", "curl", "git", "vim", "emacs", "tmux", "zsh", "fish", "htop",
];

/// Ordinary names, each labelled: its own label, or `photos` for the numbered photos (a group
/// of their own, not a leak).
fn ordinary(r: &mut Rng) -> Vec<(String, bool, String)> {
    let mut out: Vec<(String, bool, String)> = Vec::new();
    let mut own = |name: String, dir: bool| {
        let label = format!("ordinary:{name}");
        out.push((name, dir, label));
    };
    for (i, w) in WORDS.iter().enumerate() {
        for e in EXTS {
            own(format!("{w}.{e}"), false);
        }
        own(format!("{w}-{}.pdf", 2024 + i % 3), false);
        own(format!("{w} (copy).{}", EXTS[i % EXTS.len()]), false);
        own(format!("{}_{w}", WORDS[(i + 7) % WORDS.len()]), true);
        // A handful of numbered and dated files per word.
        for k in 1..=(1 + i % 4) {
            own(format!("{w}-{k}.pdf"), false);
        }
        own(
            format!("{w}-2026-{:02}-{:02}.md", 1 + i % 12, 1 + i % 28),
            false,
        );
    }
    for (i, t) in TOOLS.iter().enumerate() {
        for v in 0..3 {
            own(format!("{t}-{}.{}.{v}.tar.gz", 1 + i % 5, i % 10), false);
        }
        own(format!("{t}-cache"), true);
        own(format!("{t}{}", 2 + i % 3), true);
    }
    for w in [
        "Caches",
        "Downloads",
        "Logs",
        "Preferences",
        "Fonts",
        "Keychains",
    ] {
        own(w.to_owned(), true);
    }
    for i in 0..40 {
        out.push((
            format!("IMG_{:04}.JPG", 1000 + i * 7 + r.range(0, 6)),
            false,
            "photos".to_owned(),
        ));
    }
    out
}

/// Every entry: name, dir or not, label; and the labels that are leaks.
fn corpus(seed: u64) -> (Vec<(String, bool, String)>, BTreeSet<String>) {
    let mut r = Rng::new(seed);
    let mut all: Vec<(String, bool, String)> = Vec::new();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut leaks = BTreeSet::new();
    for &(label, dir, n, draw) in TEMPLATES {
        leaks.insert(label.to_owned());
        let mut i = 0;
        let mut made = 0;
        while made < n {
            let name = draw(&mut r, i);
            i += 1;
            if seen.insert(name.clone()) {
                all.push((name, dir, label.to_owned()));
                made += 1;
            }
        }
    }
    for (name, dir, label) in ordinary(&mut r) {
        if seen.insert(name.clone()) {
            all.push((name, dir, label));
        }
    }
    (all, leaks)
}

#[test]
fn leaks_group_by_template_and_ordinary_names_stay_out() {
    let (entries, leaks) = corpus(40);
    let ordinary = entries.iter().filter(|e| !leaks.contains(&e.2)).count();
    assert!(
        leaks.len() >= 30 && ordinary >= 1000,
        "{} {ordinary}",
        leaks.len()
    );
    let tmp = tempfile::tempdir().unwrap();
    let root_dir = std::fs::canonicalize(tmp.path()).unwrap();
    for (i, (name, dir, _)) in entries.iter().enumerate() {
        let p = root_dir.join(name);
        if *dir {
            tree::write_file(&p.join("data"), 1 + (i * 7919) % 20_000);
        } else {
            tree::write_file(&p, 1 + (i * 7919) % 20_000);
        }
    }
    let root = Root::new(RootKind::Other, &root_dir).unwrap();
    let cat = Catalogue::builtin();
    let mut tally = Tally::new(10);
    let mut claimed = BTreeSet::new();
    scan_root_each(&root, &cat, &ScanProgress::new(), |item| {
        if item.producer.is_some() {
            claimed.insert(item.path.clone());
        }
        tally.add(&root, &item)
    });
    assert!(claimed.is_empty(), "built-in rules claim {claimed:?}");
    let groups = tally.unattributed_groups();

    // Each entry's predicted cluster: the group whose shape it has, else its own.
    let mut predicted: Vec<String> = Vec::new();
    for (name, dir, _) in &entries {
        let homes: Vec<String> = groups
            .iter()
            .filter(|g| g.group.contains(std::ffi::OsStr::new(name), *dir))
            .map(|g| g.group.shape.to_string())
            .collect();
        assert!(homes.len() <= 1, "{name} is in {homes:?}");
        predicted.push(
            homes
                .into_iter()
                .next()
                .unwrap_or_else(|| format!("lone:{name}")),
        );
    }
    // Each group's count is the entries its shape holds.
    for g in &groups {
        let shape = g.group.shape.to_string();
        let n = predicted.iter().filter(|p| **p == shape).count() as u64;
        assert_eq!(g.group.items, n, "{shape}");
    }

    let (ga, f) = accuracy(&entries, &predicted);
    println!("grouping accuracy (Loghub GA) {ga:.4}; pair F-measure {f:.4}");
    println!("groups:");
    for g in &groups {
        println!(
            "  {:<48} {:>4} items",
            g.group.shape.to_string(),
            g.group.items
        );
    }
    // Worst splits: a template spread over several clusters, most clusters first.
    let mut spread: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for ((_, _, label), p) in entries.iter().zip(&predicted) {
        if leaks.contains(label) {
            spread.entry(label).or_default().insert(p);
        }
    }
    let mut worst: Vec<(&str, &BTreeSet<&str>)> = spread
        .iter()
        .filter(|(_, s)| s.len() > 1)
        .map(|(l, s)| (*l, s))
        .collect();
    worst.sort_by_key(|(_, s)| std::cmp::Reverse(s.len()));
    for (label, s) in worst.iter().take(5) {
        let shown: Vec<&&str> = s.iter().take(4).collect();
        println!("split: {label} into {} clusters: {shown:?}", s.len());
    }

    // No ordinary name in a leak's group.
    let leak_shapes: BTreeSet<&str> = entries
        .iter()
        .zip(&predicted)
        .filter(|((_, _, l), p)| leaks.contains(l) && !p.starts_with("lone:"))
        .map(|(_, p)| p.as_str())
        .collect();
    for ((name, _, label), p) in entries.iter().zip(&predicted) {
        assert!(
            leaks.contains(label) || !leak_shapes.contains(p.as_str()),
            "ordinary {name:?} joined the leak group {p}"
        );
    }
    assert!(ga >= 0.99 && f >= 0.99, "accuracy {ga:.4} / F {f:.4}");

    // Each template's group: its hand count, and `du`'s bytes over its members.
    for &(label, _, n, _) in TEMPLATES {
        let members: Vec<PathBuf> = entries
            .iter()
            .filter(|e| e.2 == label)
            .map(|e| root_dir.join(&e.0))
            .collect();
        assert_eq!(members.len(), n);
        let at = entries.iter().position(|e| e.2 == label).unwrap();
        let g = groups
            .iter()
            .find(|g| g.group.shape.to_string() == predicted[at])
            .unwrap_or_else(|| panic!("{label} is no group"));
        assert_eq!(g.group.items, n as u64, "{label}");
        assert_eq!(
            g.group.measure.allocated_bytes,
            du::allocated(&members),
            "{label}"
        );
    }
    let _ = Path::new("");
}

/// Loghub's grouping accuracy (an entry counts when its predicted cluster is exactly its label's
/// entries) and the F-measure of same-cluster pairs.
fn accuracy(entries: &[(String, bool, String)], predicted: &[String]) -> (f64, f64) {
    let mut truth: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut pred: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, (e, p)) in entries.iter().zip(predicted).enumerate() {
        truth.entry(e.2.as_str()).or_default().push(i);
        pred.entry(p.as_str()).or_default().push(i);
    }
    let mut right = 0usize;
    for members in pred.values() {
        let label = entries[members[0]].2.as_str();
        if members.iter().all(|&i| entries[i].2 == label) && truth[label].len() == members.len() {
            right += members.len();
        }
    }
    let pairs = |n: usize| (n * n.saturating_sub(1) / 2) as f64;
    let truth_pairs: f64 = truth.values().map(|v| pairs(v.len())).sum();
    let pred_pairs: f64 = pred.values().map(|v| pairs(v.len())).sum();
    let mut both = 0f64;
    for members in pred.values() {
        let mut by_label: HashMap<&str, usize> = HashMap::new();
        for &i in members {
            *by_label.entry(entries[i].2.as_str()).or_default() += 1;
        }
        both += by_label.values().map(|&n| pairs(n)).sum::<f64>();
    }
    let precision = if pred_pairs > 0.0 {
        both / pred_pairs
    } else {
        1.0
    };
    let recall = if truth_pairs > 0.0 {
        both / truth_pairs
    } else {
        1.0
    };
    let f = if precision + recall > 0.0 {
        2.0 * precision * recall / (precision + recall)
    } else {
        0.0
    };
    (right as f64 / entries.len() as f64, f)
}
