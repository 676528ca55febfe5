#![allow(clippy::unwrap_used)]

use std::ffi::OsStr;

use proptest::prelude::*;

use super::*;
use crate::inventory::Measure;

fn sh(name: &str, dir: bool) -> String {
    shape_of(OsStr::new(name), dir).to_string()
}

#[test]
fn leak_names_get_their_placeholders() {
    assert_eq!(
        sh(".1a2b3c4d5e6f7a8b-00012345.dylib", false),
        ".<hex16>-<digits8>.dylib"
    );
    assert_eq!(sh("tmpXk3q9ZbA", true), "<rand11>/");
    assert_eq!(
        sh("pyright-0f8c1d2e-3a4b-4c5d-8e9f-a0b1c2d3e4f5", true),
        "pyright-<uuid>/"
    );
    assert_eq!(sh("trace-1733112345678.json", false), "trace-<ts>.json");
    assert_eq!(sh("upload-1733112345.part", false), "upload-<ts>.part");
    assert_eq!(sh("cache.Ab3xYz", true), "cache.<rand6>/");
    assert_eq!(
        sh("openclaw-plugin-build-9f8e7d6c", true),
        "openclaw-plugin-build-<hex8>/"
    );
    assert_eq!(sh("core.48213", false), "core.<digits5>");
    assert_eq!(
        sh("Model_0F8C1D2E-3A4B-4C5D-8E9F-A0B1C2D3E4F5.mlmodelc", true),
        "Model_<uuid>.mlmodelc/"
    );
}

/// Ordinary names keep their words; their numbers are placeholders of the shape (the grouper
/// gives a number back as literal unless it varies over many names), and together they make no
/// group: each is lone.
#[test]
fn ordinary_names_stay_lone() {
    for name in ORDINARY {
        let s = shape_of(OsStr::new(name), false);
        let numbered = name.bytes().any(|b| b.is_ascii_digit());
        // Short CamelCase words read as random runs: each is a shape of its own.
        let short_camel = ["MacOS", "QTKit"].contains(name);
        assert!(
            !s.has_placeholder() || numbered || short_camel,
            "{name:?} got shape {s}"
        );
    }
    let mut g = Grouper::new(1000);
    for name in ORDINARY {
        g.add(OsStr::new(name), false, &measure(1));
    }
    let out = g.finish();
    assert!(
        out.groups.is_empty(),
        "{:?}",
        out.groups[0].shape.to_string()
    );
    assert_eq!(out.lone.len(), ORDINARY.len());
}

#[test]
fn a_group_shows_and_demands_the_prefix_its_members_share() {
    let mut g = Grouper::new(10);
    for i in 0..25u32 {
        let name = format!("tmp{}", rand_like(i, 8));
        g.add(OsStr::new(&name), true, &measure(4096));
    }
    let out = g.finish();
    assert_eq!(out.groups.len(), 1);
    let grp = &out.groups[0];
    assert_eq!(grp.shape.to_string(), "tmp<rand8>/");
    assert_eq!(grp.key.to_string(), "<rand11>/");
    assert_eq!(grp.shape.regex(), "^tmp[A-Za-z0-9]{8}$");
    assert_eq!(grp.shape.glob(), "tmp*");
    assert_eq!(grp.items, 25);
    assert_eq!(grp.measure.allocated_bytes, 25 * 4096);
    assert!(grp.contains(OsStr::new("tmpabcdefgh"), true));
    assert!(!grp.contains(OsStr::new("tmpabcdefgh"), false));
    assert!(!grp.contains(OsStr::new("abcXk3q9ZbA"), true));
}

#[test]
fn a_word_looking_random_run_joins_its_group_and_small_shapes_stay_lone() {
    let mut g = Grouper::new(10);
    for i in 0..20u32 {
        g.add(
            OsStr::new(&format!("tmp{}", rand_like(i, 8))),
            true,
            &measure(1),
        );
    }
    g.add(OsStr::new("tmpqwertyui"), true, &measure(1));
    for i in 0..19u32 {
        g.add(
            OsStr::new(&format!("log-{}.txt", 10000 + i)),
            false,
            &measure(1),
        );
    }
    let out = g.finish();
    assert_eq!(out.groups.len(), 1);
    assert_eq!(out.groups[0].items, 21);
    assert_eq!(out.lone.len(), 19);
}

#[test]
fn hex_runs_that_come_out_all_digits_stay_in_their_leak_group() {
    // Enough members that the all-digit draws (about 6% of 6 hex digits) make a shape of their
    // own past the group minimum: it must fold into the leak's group, not stand beside it.
    let mut g = Grouper::new(10);
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut all_digits = 0;
    for i in 0..2_000u64 {
        let hex: String = (0..6)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                char::from(b"0123456789abcdef"[(x % 16) as usize])
            })
            .collect();
        all_digits += usize::from(hex.bytes().all(|b| b.is_ascii_digit()));
        g.add(
            OsStr::new(&format!("lspd{hex}-{}", i % 3)),
            true,
            &measure(1),
        );
    }
    assert!(
        all_digits >= GROUP_MIN_ITEMS as usize,
        "{all_digits} all-digit runs"
    );
    let out = g.finish();
    let shapes: Vec<String> = out.groups.iter().map(|g| g.shape.to_string()).collect();
    assert_eq!(shapes, ["lspd<rand6>-<digits1>/"]);
    assert_eq!(out.groups[0].items, 2_000);
    assert_eq!(out.groups[0].measure.allocated_bytes, 2_000);
    assert!(out.lone.is_empty());
}

#[test]
fn epoch_seconds_and_milliseconds_of_one_template_are_one_group() {
    // `<ts>` matches 10 and 13 digits alike: names that differ only there are one template, so
    // one group (two would share one template, and so one history key, while each showed its
    // own constant run).
    let mut g = Grouper::new(10);
    for i in 0..20u64 {
        let secs = 1_767_000_000 + i * 977;
        g.add(OsStr::new(&format!("ktrace_7_{secs}")), true, &measure(3));
        g.add(
            OsStr::new(&format!("ktrace_8_{}", secs * 1000 + i)),
            true,
            &measure(5),
        );
    }
    let out = g.finish();
    let shapes: Vec<String> = out.groups.iter().map(|g| g.shape.to_string()).collect();
    assert_eq!(shapes, ["ktrace_<digits1>_<ts>/"]);
    assert_eq!(out.groups[0].items, 40);
    assert_eq!(out.groups[0].measure.allocated_bytes, 20 * 3 + 20 * 5);
    assert!(out.lone.is_empty());
}

#[test]
fn covers_holds_narrower_classes_only() {
    let s = |n: &str, dir| shape_of(OsStr::new(n), dir);
    let wide = s("lsp-1a2b3c-4", true);
    assert!(wide.covers(&s("lsp-123456-4", true)));
    assert!(!s("lsp-123456-4", true).covers(&wide));
    assert!(!wide.covers(&s("lsp-1a2b3c-4", false)), "a file is no dir");
    assert!(!wide.covers(&s("lsx-1a2b3c-4", true)), "another literal");
}

#[test]
fn one_big_entry_is_a_group_by_bytes() {
    let mut g = Grouper::new(10);
    g.add(
        OsStr::new("dump-48213.core"),
        false,
        &measure(GROUP_MIN_BYTES),
    );
    g.add(
        OsStr::new("notes.txt"),
        false,
        &measure(GROUP_MIN_BYTES - 1),
    );
    let out = g.finish();
    assert_eq!(out.groups.len(), 1);
    assert_eq!(out.groups[0].shape.to_string(), "dump-<digits5>.core");
    assert_eq!(out.lone.len(), 1);
}

fn measure(bytes: u64) -> Measure {
    Measure {
        allocated_bytes: bytes,
        apparent_bytes: bytes,
        files: 1,
        ..Measure::default()
    }
}

/// A deterministic mkdtemp-like run (mixed case and digits).
fn rand_like(seed: u32, n: usize) -> String {
    const A: &[u8] = b"AbCdEfGh0123456789IjKlMnOpQrStUvWxYz";
    let mut x = seed.wrapping_mul(2_654_435_761).wrapping_add(12345);
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            A[(x % A.len() as u32) as usize] as char
        })
        .collect()
}

/// Names people and well-behaved programs leave in temp and cache dirs: words, dates, versioned
/// files, single files.
pub(crate) const ORDINARY: &[&str] = &[
    "TemporaryItems",
    "com.apple.launchd.plist",
    "hsperfdata_alice",
    "node-compile-cache",
    "python3.11",
    "report-2026-01-05.pdf",
    "2026-01-05.log",
    "2025-12-31T23-59-59.log",
    "foo-1.2.3.tar.gz",
    "bar-10.4.1.zip",
    "rustc-1.80.0-x86_64-unknown-linux-gnu.tar.xz",
    "Screenshot 2026-01-05 at 10.11.12.png",
    "README.md",
    "notes.txt",
    "MyProject",
    "HTTPServer",
    "iOS",
    "MacOS",
    "XMLHttpRequest",
    "IOSurface",
    "QTKit",
    "invoice_march.pdf",
    "vacation photos",
    "build",
    "dist",
    "node_modules",
    "pip-cache",
    "go-build",
    "yarn--v6",
    "npm-cache",
    "Caches",
    "Downloads",
    "Photographs",
    "MyDocuments",
    "ssh-agent.sock",
    ".X11-unix",
    ".ICE-unix",
    ".font-unix",
    "systemd-private",
    "fontconfig",
    "mesa_shader_cache",
    "thumbnails",
    "chromium",
    "mozilla",
    "JetBrains",
    "Homebrew",
    "pnpm-store",
    "v8-compile-cache",
    "babel-loader",
    "webpack",
    "vite",
    "ccache",
    "sccache",
    "cargo-install",
    "clang-module-cache",
    "ModuleCache.noindex",
    "com.apple.dt.Xcode",
    "org.swift.swiftpm",
    "Spotify",
    "Slack",
    "Code Cache",
    "GPUCache",
    "ShaderCache",
    "lockfile",
    "pid.lock",
    "index.html",
    "style.css",
    "main.rs",
    "Cargo.toml",
    "package.json",
    "tsconfig.json",
    "data.csv",
    "data-v2.csv",
    "archive.7z",
    "backup.tar",
    "photo.jpeg",
    "video.mp4",
    "song.mp3",
    "x86_64",
    "aarch64-apple-darwin",
    "linux-amd64",
    "jdk-21.0.2",
    "go1.22.1",
    "terraform_1.7.4",
    "kubectl.exe",
    "setup.exe",
    "installer.dmg",
    "Firefox 123.0.dmg",
    "draft (1).docx",
    "draft (2).docx",
    "final_final.docx",
    "todo",
    "scratch",
    "tmp",
    "temp",
    "cache",
    "logs",
    "output",
    "results",
    "debug.log",
    "error.log",
    "access.log.1",
    "access.log.2",
    "crash-2026-01-05-101112.ips",
    "release-notes-v3.txt",
    "utf8",
    "Python3",
    "linux-amd64",
    "cafebabe",
    "deadline",
];

#[test]
fn ordinary_list_has_over_a_hundred_distinct_names() {
    let set: std::collections::HashSet<_> = ORDINARY.iter().collect();
    assert!(set.len() >= 100, "{}", set.len());
}

const WORDS: &[&str] = &["tmp", "pbx", "swc", "esb", "ocl", "ghx", "blob"];
const EXTS: &[&str] = &["bin", "dat", "json", "trace", "part"];

fn rand_run(n: usize) -> impl Strategy<Value = String> {
    proptest::string::string_regex(&format!("[A-Za-z0-9]{{{n}}}")).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn uuid_names_have_one_shape(word in prop::sample::select(WORDS), u in "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}") {
        prop_assert_eq!(sh(&format!("{word}-{u}"), true), format!("{word}-<uuid>/"));
    }

    #[test]
    fn hex_digit_names_have_one_shape(hex in "[0-9a-f]{16}", d in "[0-9]{8}", ext in prop::sample::select(EXTS)) {
        prop_assert_eq!(sh(&format!(".{hex}-{d}.{ext}"), false), format!(".<hex16>-<digits8>.{ext}"));
    }

    #[test]
    fn epoch_ms_names_have_one_shape(word in prop::sample::select(WORDS), ms in 1_000_000_000_000u64..4_000_000_000_000, ext in prop::sample::select(EXTS)) {
        prop_assert_eq!(sh(&format!("{word}-{ms}.{ext}"), false), format!("{word}-<ts>.{ext}"));
    }

    /// mkdtemp-like runs: one group whatever random runs the names got, and no ordinary name in it.
    #[test]
    fn mkdtemp_names_make_one_group(word in prop::sample::select(WORDS), runs in prop::collection::vec(rand_run(8), 20..40)) {
        let mut g = Grouper::new(10);
        let mut distinct = std::collections::BTreeSet::new();
        for r in &runs {
            let name = format!("{word}{r}");
            if distinct.insert(name.clone()) {
                g.add(OsStr::new(&name), true, &measure(4096));
            }
        }
        prop_assume!(distinct.len() as u64 >= GROUP_MIN_ITEMS);
        for o in ORDINARY {
            g.add(OsStr::new(o), true, &measure(4096));
        }
        let out = g.finish();
        prop_assert_eq!(out.groups.len(), 1);
        prop_assert_eq!(out.groups[0].items, distinct.len() as u64);
        prop_assert_eq!(out.lone.len(), ORDINARY.len());
    }

    #[test]
    fn dotted_random_names_make_one_group(word in prop::sample::select(WORDS), runs in prop::collection::vec(rand_run(6), 20..40)) {
        let mut g = Grouper::new(10);
        let mut distinct = std::collections::BTreeSet::new();
        for r in &runs {
            let name = format!("{word}.{r}");
            if distinct.insert(name.clone()) {
                g.add(OsStr::new(&name), true, &measure(1));
            }
        }
        prop_assume!(distinct.len() as u64 >= GROUP_MIN_ITEMS);
        for o in ORDINARY {
            g.add(OsStr::new(o), true, &measure(1));
        }
        let out = g.finish();
        let lone: Vec<_> = out.lone.iter().map(|l| l.name.clone()).collect();
        prop_assert_eq!(out.groups.len(), 1, "{:?}", lone);
        prop_assert_eq!(out.groups[0].shape.to_string(), format!("{word}.<rand6>/"));
        prop_assert_eq!(out.groups[0].items, distinct.len() as u64);
    }
}

fn evidence(
    kind: crate::provenance::EvidenceKind,
    pid_run: Option<usize>,
) -> crate::provenance::Evidence {
    crate::provenance::Evidence {
        kind,
        name: "kestrel".into(),
        exe: None,
        app: None,
        agree: 20,
        total: 20,
        pid_run,
        orphans: None,
        last_seen: None,
        alive: false,
    }
}

fn rule_of(names: &[String], ev: Vec<crate::provenance::Evidence>) -> crate::catalogue::Rule {
    let mut g = Grouper::new(10);
    for n in names {
        g.add(OsStr::new(n), true, &measure(1));
    }
    let out = g.finish();
    assert_eq!(out.groups.len(), 1, "{:?}", out.lone);
    let opts = RuleOptions {
        id: "local-kestrel".into(),
        name: None,
        reclaim: crate::catalogue::ReclaimMode::Manual,
        writer: None,
        evidence: ev,
    };
    rule_for(crate::roots::RootKind::Temp, &out.groups[0], &opts).unwrap()
}

#[test]
fn a_rule_takes_its_owner_from_the_evidence() {
    use crate::provenance::EvidenceKind as K;
    let names: Vec<String> = (0..20u32)
        .map(|i| format!("kestrel_{}_{}_{}", 400 + i * 997, i % 2, 1_765_000_000 + i))
        .collect();
    // The pid is the first digit run: it becomes the `pid` capture, the regex matches the same.
    let r = rule_of(&names, vec![evidence(K::PidInName, Some(0))]);
    assert!(r.owner.pid_in_name);
    let rx = r.name_regex.clone().unwrap();
    assert_eq!(
        rx,
        "^kestrel_(?P<pid>[0-9]{3,5})_[0-9]{1}_(?P<ts>[0-9]{13}|[0-9]{10})$"
    );
    let re = regex::Regex::new(&rx).unwrap();
    for (i, n) in names.iter().enumerate() {
        let c = re.captures(n).unwrap();
        assert_eq!(c["pid"].parse::<u32>().unwrap(), 400 + i as u32 * 997);
    }
    // A run that is the counter (the second) is a pid too when the evidence says so.
    let r = rule_of(&names, vec![evidence(K::PidInName, Some(1))]);
    assert!(r.owner.pid_in_name);
    assert!(r.name_regex.unwrap().contains("_(?P<pid>[0-9]{1})_"));
    // The timestamp run is no `<digits>` placeholder: no capture, and the next evidence decides.
    let r = rule_of(
        &names,
        vec![
            evidence(K::PidInName, Some(2)),
            evidence(K::CreatedAtLaunch, None),
        ],
    );
    assert!(!r.owner.pid_in_name);
    assert_eq!(r.owner.processes, vec!["kestrel".to_owned()]);
    assert!(!r.name_regex.unwrap().contains("pid"));
    // Held files and a bundle id above a temp root give no owner.
    let r = rule_of(
        &names,
        vec![evidence(K::Held, None), evidence(K::InPath, None)],
    );
    assert_eq!(r.owner, crate::catalogue::Owner::default());
    // One launch only: its pid is the same in every name, literal in the shape: no capture.
    let one: Vec<String> = (0..20u32)
        .map(|i| format!("kestrel_4242_{}_{}", i, 1_765_000_000 + i))
        .collect();
    let r = rule_of(&one, vec![evidence(K::PidInName, Some(0))]);
    assert!(!r.owner.pid_in_name, "{:?}", r.name_regex);
}

#[test]
fn a_literal_star_before_a_placeholder_stays_literal_in_the_glob() {
    // `\*` then the wildcard would read `\**`: the glob said only the literal `*`, and the
    // catalogue refuses `**` anyway.
    let s = shape_of(OsStr::new("*-1a2b3c4d"), true);
    assert_eq!(s.glob(), "[*]\\-*");
    let g = globset::Glob::new(&s.glob()).unwrap().compile_matcher();
    assert!(g.is_match("*-9f8e7d6c"));
    assert!(!g.is_match("x-9f8e7d6c"));
}
