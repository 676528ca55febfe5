//! The producer catalogue: invariants of the built-in data, user rules and their errors, matching
//! and captures, `explain` on a real tree.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use cachewatch_core::catalogue::{Catalogue, CatalogueError, ProducerKind, ReclaimMode, Rule};
use cachewatch_core::explain::Verdict;
use cachewatch_core::{Root, RootKind};
use globset::GlobBuilder;
use regex::Regex;

const DATA: &str = include_str!("../../producers.toml");

/// An independent reading of one rule: its globs compiled here (not by the catalogue), its regexes.
struct Independent {
    id: String,
    root: RootKind,
    globs: Vec<globset::GlobMatcher>,
    name_regex: Option<Regex>,
    path_regex: Option<Regex>,
    contains: Vec<String>,
    lacks: Vec<String>,
}

impl Independent {
    fn new(rule: &Rule) -> Independent {
        Independent {
            id: rule.id.clone(),
            root: rule.root,
            globs: rule
                .item
                .iter()
                .map(|g| {
                    GlobBuilder::new(g)
                        .literal_separator(true)
                        .build()
                        .unwrap_or_else(|e| panic!("{}: glob {g:?}: {e}", rule.id))
                        .compile_matcher()
                })
                .collect(),
            name_regex: rule
                .name_regex
                .as_deref()
                .map(|r| Regex::new(r).unwrap_or_else(|e| panic!("{}: regex {r:?}: {e}", rule.id))),
            path_regex: rule
                .path_regex
                .as_deref()
                .map(|r| Regex::new(r).unwrap_or_else(|e| panic!("{}: regex {r:?}: {e}", rule.id))),
            contains: rule.contains.clone(),
            lacks: rule.lacks.clone(),
        }
    }

    /// True when the rule claims `rel` by its name, without looking inside: a content signature
    /// (`contains`, `lacks`) is left to [`Independent::claims_holding`].
    fn claims(&self, kind: RootKind, rel: &str) -> bool {
        let name = rel.rsplit('/').next().unwrap();
        // A container's temp dir is matched by the temp rules and by its own.
        (kind == self.root || (kind == RootKind::ContainerTemp && self.root == RootKind::Temp))
            && self.globs.iter().any(|g| g.is_match(rel))
            && self.name_regex.as_ref().map_or(true, |r| r.is_match(name))
            && self.path_regex.as_ref().map_or(true, |r| r.is_match(rel))
    }

    /// [`Independent::claims`], and the item holds every entry of `contains` and none of `lacks`
    /// as `has` answers.
    fn claims_holding(&self, kind: RootKind, rel: &str, has: &dyn Fn(&str) -> bool) -> bool {
        self.claims(kind, rel)
            && self.contains.iter().all(|n| has(n))
            && !self.lacks.iter().any(|n| has(n))
    }
}

fn independent() -> Vec<Independent> {
    Catalogue::builtin()
        .rules()
        .iter()
        .map(Independent::new)
        .collect()
}

fn err_of(text: &str) -> CatalogueError {
    match Catalogue::with_extra(text, Path::new(CONFIG)) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e,
    }
}

// ---------------------------------------------------------------- built-in data invariants

#[test]
fn data_file_ids_are_unique_and_sorted_in_file_order() {
    let doc: toml::Table = toml::from_str(DATA).unwrap();
    let ids: Vec<&str> = doc["producer"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert!(ids.len() >= 25, "only {} rules", ids.len());
    for pair in ids.windows(2) {
        assert!(pair[0] < pair[1], "ids not strictly sorted: {pair:?}");
    }
    let builtin = Catalogue::builtin();
    let loaded: Vec<&str> = builtin.rules().iter().map(|r| r.id.as_str()).collect();
    assert_eq!(loaded, ids);
}

#[test]
fn required_rules_are_present() {
    let c = Catalogue::builtin();
    for id in [
        "katago-coreml",
        "metal-gpuarchiver",
        "diagnostic-reports",
        "ort-coreml-ep",
        "coremltools-tmp-mlpackage",
        "mpsgraph-scratch",
        "e5rt-bundlecache",
        "cfnetwork-download-tmp",
        "squirrel-shipit-caches",
        "squirrel-shipit-temp",
        "swift-driver-tempdir",
        "clang-modulecache",
        "metal-shader-cache",
        "homebrew-cache",
        "go-build-cache",
        "playwright-browsers",
        "cypress-binary-cache",
        "jetbrains-versioned-caches",
        "iina-thumb-cache",
    ] {
        assert!(c.rule(id).is_some(), "missing rule {id}");
    }
    let gpu = c.rule("metal-gpuarchiver").unwrap();
    assert_eq!(gpu.root, RootKind::Cache);
    assert_eq!(gpu.min_age_secs, 300);
    let reports = c.rule("diagnostic-reports").unwrap();
    assert_eq!(reports.root, RootKind::DiagnosticReports);
    assert_eq!(reports.kind, ProducerKind::Report);
    assert_eq!(reports.reclaim, ReclaimMode::Manual);
    assert_eq!(
        reports.item,
        [
            "*.ips",
            "*.crash",
            "*.diag",
            "*.spin",
            "*.hang",
            "*.panic",
            "Retired/*.ips",
            "Retired/*.crash",
            "Retired/*.diag",
            "Retired/*.spin",
            "Retired/*.hang",
            "Retired/*.panic"
        ]
    );
}

#[test]
fn every_rule_has_evidence_examples_and_consistent_modes() {
    for rule in Catalogue::builtin().rules() {
        assert!(!rule.evidence.is_empty(), "{}: no evidence", rule.id);
        for url in &rule.evidence {
            assert!(url.starts_with("https://"), "{}: evidence {url:?}", rule.id);
        }
        assert!(!rule.examples.is_empty(), "{}: no example", rule.id);
        assert!(!rule.notes.is_empty(), "{}: no notes", rule.id);
        assert!(!rule.name.is_empty(), "{}: no name", rule.id);
        for glob in &rule.item {
            assert!(!glob.contains("**"), "{}: {glob:?}", rule.id);
        }
        if rule.kind == ProducerKind::System {
            assert_eq!(rule.reclaim, ReclaimMode::Never, "{}", rule.id);
        }
        if rule.kind == ProducerKind::Cache {
            assert_eq!(
                rule.reclaim,
                ReclaimMode::Manual,
                "{}: caches are controls",
                rule.id
            );
        }
        if rule.owner.pid_in_name {
            let rx = rule
                .name_regex
                .as_deref()
                .or(rule.path_regex.as_deref())
                .unwrap();
            assert!(
                rx.contains("(?P<pid>"),
                "{}: pid_in_name without a pid capture",
                rule.id
            );
        }
        for p in &rule.owner.processes {
            assert!(
                !p.is_empty() && !p.contains('/'),
                "{}: process {p:?}",
                rule.id
            );
        }
    }
}

#[test]
fn every_glob_and_regex_compiles_independently() {
    // Independent::new panics on the first glob or regex that does not compile.
    let rules = independent();
    assert_eq!(rules.len(), Catalogue::builtin().rules().len());
}

#[test]
fn every_rule_claims_its_examples_and_none_of_its_counter_examples() {
    let c = Catalogue::builtin();
    for rule in c.rules() {
        // An example of a rule with a content signature (`contains`, `lacks`) is a name whose
        // item holds the signature: the lookups are told every entry exists but those it lacks.
        let has = |n: &str| !rule.lacks.iter().any(|l| l == n);
        for ex in &rule.examples {
            let m = c
                .classify_with(rule.root, Path::new(ex), &has)
                .unwrap_or_else(|| panic!("{}: example {ex:?} not claimed", rule.id));
            assert_eq!(m.rule.id, rule.id, "example {ex:?}");
            assert_eq!(m.item, Path::new(ex));
            // An example is its own item: no shorter prefix is claimed.
            assert_eq!(
                c.item_of_with(rule.root, Path::new(ex), &|_, n| has(n))
                    .unwrap()
                    .item,
                Path::new(ex)
            );
            if !rule.contains.is_empty() {
                // Without its signature, the name alone claims nothing.
                assert!(c.classify(rule.root, Path::new(ex)).is_none(), "{ex:?}");
            }
        }
        for ex in &rule.counter_examples {
            let got = c
                .classify_with(rule.root, Path::new(ex), &|_| true)
                .map(|m| m.rule.id.clone());
            assert_ne!(
                got.as_deref(),
                Some(rule.id.as_str()),
                "counter-example {ex:?}"
            );
        }
    }
}

#[test]
fn no_example_is_claimed_by_two_rules() {
    let rules = independent();
    let mut checked = 0;
    for owner in Catalogue::builtin().rules() {
        for ex in &owner.examples {
            let claimants: Vec<&str> = rules
                .iter()
                .filter(|r| r.claims(owner.root, ex))
                .map(|r| r.id.as_str())
                .collect();
            assert_eq!(claimants, [owner.id.as_str()], "example {ex:?}");
            checked += 1;
        }
    }
    assert!(checked >= 60, "only {checked} examples");
}

#[test]
fn independent_matcher_agrees_with_classify_on_all_examples_and_counter_examples() {
    let c = Catalogue::builtin();
    let rules = independent();
    for owner in c.rules() {
        let has = |n: &str| !owner.lacks.iter().any(|l| l == n);
        for p in owner.examples.iter().chain(&owner.counter_examples) {
            for kind in RootKind::ALL {
                let expected: Vec<&str> = rules
                    .iter()
                    .filter(|r| r.claims_holding(kind, p, &has))
                    .map(|r| r.id.as_str())
                    .collect();
                let got = c
                    .classify_with(kind, Path::new(p), &has)
                    .map(|m| m.rule.id.clone());
                assert_eq!(got.as_deref(), expected.first().copied(), "{kind} {p:?}");
            }
        }
    }
}

#[test]
fn max_depth_is_the_deepest_glob_per_root_kind() {
    let c = Catalogue::builtin();
    for kind in RootKind::ALL {
        // A container-temp root uses the temp rules besides its own.
        let expected = c
            .rules()
            .iter()
            .filter(|r| {
                r.root == kind || (kind == RootKind::ContainerTemp && r.root == RootKind::Temp)
            })
            .flat_map(|r| &r.item)
            .map(|g| g.split('/').count())
            .max()
            .unwrap_or(0);
        assert_eq!(c.max_depth(kind), expected, "{kind}");
    }
    // By hand: katago_coreml/*.mlpackage (temp), com.apple.DeveloperTools/All/Xcode/EmbeddedAppDeltas/*
    // (cache), */com.apple.e5rt.e5bundlecache/*/* (library-caches), Retired/*.ips.
    assert_eq!(c.max_depth(RootKind::Temp), 2);
    assert_eq!(c.max_depth(RootKind::Cache), 5);
    assert_eq!(c.max_depth(RootKind::LibraryCaches), 4);
    assert_eq!(c.max_depth(RootKind::DiagnosticReports), 2);
    assert_eq!(c.max_depth(RootKind::ContainerTemp), 2);
    // *.code_sign_clone/code_sign_clone.*, claude-*/*, and the one-level container-temp globs.
    assert_eq!(c.max_depth(RootKind::CodeSignClones), 2);
    assert_eq!(c.max_depth(RootKind::Other), 2);
}

/// The rules added in 2026's first half (see docs/producers.md): id, root kind, kind, reclaim mode.
const ADDITIONS_2026: [(&str, RootKind, ProducerKind, ReclaimMode); 15] = [
    (
        "appbox-tmp",
        RootKind::ContainerTemp,
        ProducerKind::Leak,
        ReclaimMode::Manual,
    ),
    (
        "chromium-code-sign-clone",
        RootKind::CodeSignClones,
        ProducerKind::Leak,
        ReclaimMode::Auto,
    ),
    (
        "clangd-preamble-pch",
        RootKind::Temp,
        ProducerKind::Leak,
        ReclaimMode::Auto,
    ),
    (
        "claude-code-tmp",
        RootKind::Other,
        ProducerKind::Leak,
        ReclaimMode::Manual,
    ),
    (
        "deno-dir",
        RootKind::LibraryCaches,
        ProducerKind::Cache,
        ReclaimMode::Manual,
    ),
    (
        "deno-dir-xdg",
        RootKind::Cache,
        ProducerKind::Cache,
        ReclaimMode::Manual,
    ),
    (
        "nextcloud-fileprovider-chunks",
        RootKind::ContainerTemp,
        ProducerKind::Leak,
        ReclaimMode::Manual,
    ),
    (
        "node-compile-cache",
        RootKind::Temp,
        ProducerKind::Cache,
        ReclaimMode::Manual,
    ),
    (
        "nuitka-onefile",
        RootKind::Temp,
        ProducerKind::Leak,
        ReclaimMode::Auto,
    ),
    (
        "ollama-runners",
        RootKind::Temp,
        ProducerKind::Leak,
        ReclaimMode::Auto,
    ),
    (
        "playwright-artifacts",
        RootKind::Temp,
        ProducerKind::Leak,
        ReclaimMode::Auto,
    ),
    (
        "pyinstaller-onefile",
        RootKind::Temp,
        ProducerKind::Leak,
        ReclaimMode::Auto,
    ),
    (
        "sqlite-jdbc-native",
        RootKind::Temp,
        ProducerKind::Leak,
        ReclaimMode::Auto,
    ),
    (
        "tsx-transform-cache",
        RootKind::Temp,
        ProducerKind::Cache,
        ReclaimMode::Manual,
    ),
    (
        "tuist-temp",
        RootKind::Temp,
        ProducerKind::Leak,
        ReclaimMode::Auto,
    ),
];

/// The agent-era producers and safety findings of late 2026 (their trees are tested in
/// `catalogue_2026h2.rs`), with their root kind, kind and reclaim mode.
const LATE_2026: &[(&str, RootKind, ProducerKind, ReclaimMode)] = &[
    (
        "browser-use-tmp",
        RootKind::Temp,
        ProducerKind::Leak,
        ReclaimMode::Auto,
    ),
    (
        "claude-mcp-logs",
        RootKind::LibraryCaches,
        ProducerKind::Leak,
        ReclaimMode::Auto,
    ),
    (
        "codex-tmp-git-objects",
        RootKind::Temp,
        ProducerKind::Leak,
        ReclaimMode::Auto,
    ),
    (
        "executorch-coreml-assets",
        RootKind::LibraryCaches,
        ProducerKind::Cache,
        ReclaimMode::Manual,
    ),
    (
        "executorch-coreml-staging",
        RootKind::Temp,
        ProducerKind::Leak,
        ReclaimMode::Auto,
    ),
    (
        "playwright-mcp-output",
        RootKind::Temp,
        ProducerKind::Leak,
        ReclaimMode::Auto,
    ),
    (
        "rust-analyzer-proc-macro-srv",
        RootKind::Temp,
        ProducerKind::Leak,
        ReclaimMode::Manual,
    ),
    (
        "sparkle-container-update-staging",
        RootKind::ContainerTemp,
        ProducerKind::Leak,
        ReclaimMode::Manual,
    ),
    (
        "swiftpm-shared-cache",
        RootKind::LibraryCaches,
        ProducerKind::Cache,
        ReclaimMode::Manual,
    ),
    (
        "tauri-updater-backup",
        RootKind::Temp,
        ProducerKind::Leak,
        ReclaimMode::Manual,
    ),
    (
        "tendril-e2e",
        RootKind::Temp,
        ProducerKind::Leak,
        ReclaimMode::Auto,
    ),
    (
        "tfhub-modules",
        RootKind::Temp,
        ProducerKind::Cache,
        ReclaimMode::Manual,
    ),
];

/// The producers of 2026's second half, with their root kind, kind and reclaim mode.
const ADDITIONS_2026_H2: &[(&str, RootKind, ProducerKind, ReclaimMode)] = &[
    (
        "bun-sfe-native-extract",
        RootKind::Temp,
        ProducerKind::Leak,
        ReclaimMode::Auto,
    ),
    (
        "sparkle-installation",
        RootKind::LibraryCaches,
        ProducerKind::Leak,
        ReclaimMode::Manual,
    ),
    (
        "sparkle-persistent-downloads",
        RootKind::LibraryCaches,
        ProducerKind::Leak,
        ReclaimMode::Manual,
    ),
    (
        "tfdf-ydf-tmp",
        RootKind::Temp,
        ProducerKind::Leak,
        ReclaimMode::Manual,
    ),
];

#[test]
fn the_2026_additions_are_present_with_their_root_kind_and_modes() {
    let c = Catalogue::builtin();
    for (id, root, kind, reclaim) in ADDITIONS_2026 {
        let rule = c.rule(id).unwrap_or_else(|| panic!("missing rule {id}"));
        assert_eq!(
            (rule.root, rule.kind, rule.reclaim),
            (root, kind, reclaim),
            "{id}"
        );
        assert!(
            !rule.counter_examples.is_empty(),
            "{id}: no counter-example"
        );
    }
    for (id, root, kind, reclaim) in ADDITIONS_2026_H2.iter().chain(LATE_2026) {
        let rule = c.rule(id).unwrap_or_else(|| panic!("missing rule {id}"));
        assert_eq!(
            (rule.root, rule.kind, rule.reclaim),
            (*root, *kind, *reclaim),
            "{id}"
        );
        assert!(
            !rule.counter_examples.is_empty(),
            "{id}: no counter-example"
        );
        assert!(!rule.evidence.is_empty(), "{id}: no evidence");
    }
    assert_eq!(
        c.rules().len(),
        39 + ADDITIONS_2026.len() + ADDITIONS_2026_H2.len() + LATE_2026.len()
    );
    // Nuitka is the one with the owner pid in the name.
    let nuitka = c.rule("nuitka-onefile").unwrap();
    assert!(nuitka.owner.pid_in_name);
    for (id, ..) in ADDITIONS_2026.iter().filter(|a| a.0 != "nuitka-onefile") {
        assert!(
            !c.rule(id).unwrap().owner.pid_in_name,
            "{id}: no pid in its names"
        );
    }
}

/// Every `https://` address in a text, cut at whitespace, `;`, `|` and `)`.
fn cited_urls(text: &str) -> std::collections::HashSet<&str> {
    text.split(|c: char| c.is_whitespace() || matches!(c, ';' | '|' | ')' | '('))
        .filter(|w| w.starts_with("https://"))
        .map(|w| w.trim_end_matches(['.', ',']))
        .collect()
}

/// `docs/producers.md` cut into its `### <id>` sections: id -> the section's text, up to the next
/// heading of level 2 or 3. An id given two sections is an error.
fn producer_sections(md: &str) -> std::collections::HashMap<&str, String> {
    let mut sections = std::collections::HashMap::new();
    let mut current: Option<(&str, String)> = None;
    for line in md.lines().chain(["## (end)"]) {
        if line.starts_with("## ") || line.starts_with("### ") {
            if let Some((id, text)) = current.take() {
                assert!(
                    sections.insert(id, text).is_none(),
                    "docs/producers.md: two sections `### {id}`"
                );
            }
            if let Some(id) = line.strip_prefix("### ") {
                current = Some((id.trim(), String::new()));
            }
        } else if let Some((_, text)) = current.as_mut() {
            text.push_str(line);
            text.push('\n');
        }
    }
    sections
}

/// The evidence behind every rule is in the repository: each rule id has its `### <id>` section in
/// docs/producers.md, and each of its evidence addresses is cited in that section.
#[test]
fn every_rule_has_its_section_in_docs_producers_md() {
    let md = include_str!("../../../../docs/producers.md");
    let sections = producer_sections(md);
    let rules = Catalogue::builtin();
    let mut urls = 0;
    for rule in rules.rules() {
        let section = sections.get(rule.id.as_str()).unwrap_or_else(|| {
            panic!(
                "docs/producers.md has no section `### {}`: add one with its evidence",
                rule.id
            )
        });
        let cited = cited_urls(section);
        for url in &rule.evidence {
            assert!(
                cited.contains(url.as_str()),
                "{}: evidence {url} is not cited in its section of docs/producers.md",
                rule.id
            );
            urls += 1;
        }
    }
    // By hand: 58 built-in rules, and producers seen but not yet claimed have sections too.
    assert!(rules.rules().len() >= 58, "{}", rules.rules().len());
    assert!(sections.len() > rules.rules().len(), "{}", sections.len());
    assert!(urls >= 190, "only {urls} evidence addresses checked");
}

/// The section reader finds a section's addresses and not its neighbour's.
#[test]
fn producer_sections_end_at_the_next_heading() {
    let md = "# t\n### a\nsee https://x.invalid/1 ;\n## part\nhttps://x.invalid/2\n### b\n- https://x.invalid/3.\n";
    let s = producer_sections(md);
    assert_eq!(s.len(), 2);
    assert_eq!(
        cited_urls(&s["a"]),
        ["https://x.invalid/1"].into_iter().collect()
    );
    assert_eq!(
        cited_urls(&s["b"]),
        ["https://x.invalid/3"].into_iter().collect()
    );
}

// ---------------------------------------------------------------- matching and captures

#[test]
fn star_never_crosses_a_separator() {
    let c = Catalogue::builtin();
    // `gpuarchiver-*` must not swallow a sub-path, and `*/com.apple.gpuarchiver/...` is one level.
    assert!(c
        .classify(
            RootKind::Cache,
            Path::new("com.apple.gpuarchiver/gpuarchiver-a/b")
        )
        .is_none());
    assert!(c
        .classify(
            RootKind::Cache,
            Path::new("a/b/com.apple.gpuarchiver/gpuarchiver-1")
        )
        .is_none());
    // The same name under another root kind is not claimed.
    assert!(c
        .classify(
            RootKind::Temp,
            Path::new("com.apple.gpuarchiver/gpuarchiver-1")
        )
        .is_none());
    // Not a plain relative path.
    assert!(c.classify(RootKind::Temp, Path::new("")).is_none());
    assert!(c
        .classify(RootKind::Temp, Path::new("/model_1_2_3.mlmodelc"))
        .is_none());
    assert!(c
        .classify(RootKind::Temp, Path::new("./model_1_2_3.mlmodelc"))
        .is_none());
}

#[test]
fn item_of_deep_path_in_gpuarchiver_dir_is_the_gpuarchiver_dir() {
    let c = Catalogue::builtin();
    let deep =
        Path::new("julia/com.apple.gpuarchiver/gpuarchiver-XyZ789/PersistentState/a/b/c.bin");
    let m = c.item_of(RootKind::Cache, deep).unwrap();
    assert_eq!(m.rule.id, "metal-gpuarchiver");
    assert_eq!(
        m.item,
        Path::new("julia/com.apple.gpuarchiver/gpuarchiver-XyZ789")
    );
    assert_eq!(m.captures.bundle.as_deref(), Some("julia"));
    assert!(c.classify(RootKind::Cache, deep).is_none());

    let m = c
        .item_of(
            RootKind::Cache,
            Path::new("com.apple.gpuarchiver/gpuarchiver-a1B2c3/PersistentState"),
        )
        .unwrap();
    assert_eq!(
        m.item,
        Path::new("com.apple.gpuarchiver/gpuarchiver-a1B2c3")
    );
    assert_eq!(m.captures.bundle, None);

    // The gpuarchiver dir itself, and paths no rule claims.
    assert!(c
        .item_of(RootKind::Cache, Path::new("com.apple.gpuarchiver"))
        .is_none());
    assert!(c
        .item_of(RootKind::Cache, Path::new("unknown/x/y/z/w/v/u"))
        .is_none());
}

#[test]
fn captures_carry_pid_ts_and_bundle() {
    let c = Catalogue::builtin();
    let m = c
        .classify(
            RootKind::Temp,
            Path::new("model_4242_1_1718000000.mlmodelc"),
        )
        .unwrap();
    assert_eq!(m.rule.id, "katago-coreml");
    assert_eq!(m.captures.pid, Some(4242));
    // KataGo's last field is a monotonic clock count, not a time: never read as the birth.
    assert_eq!(m.captures.ts, None);
    // Nuitka's old form carries epoch seconds; its new form's 6 digits are no time.
    let m = c
        .classify(RootKind::Temp, Path::new("onefile_4242_1718000000_123456"))
        .unwrap();
    assert_eq!(m.captures.pid, Some(4242));
    assert_eq!(
        m.captures.ts,
        Some(UNIX_EPOCH + Duration::from_secs(1_718_000_000))
    );
    let m = c
        .classify(RootKind::Temp, Path::new("onefile_4242_123456_Ab3-dE_fGh1"))
        .unwrap();
    assert_eq!(
        (m.rule.id.as_str(), m.captures.pid, m.captures.ts),
        ("nuitka-onefile", Some(4242), None)
    );
    // A ts above 10^11 is milliseconds.
    let m = c
        .classify(
            RootKind::Temp,
            Path::new("playwright-mcp-output/1768994280526"),
        )
        .unwrap();
    assert_eq!(m.rule.id, "playwright-mcp-output");
    assert_eq!(
        m.captures.ts,
        Some(UNIX_EPOCH + Duration::from_millis(1_768_994_280_526))
    );
    // The mlpackage form has no pid.
    let m = c
        .classify(
            RootKind::Temp,
            Path::new("katago_coreml/b18c384nbt.mlpackage"),
        )
        .unwrap();
    assert_eq!(
        (m.rule.id.as_str(), m.captures.pid),
        ("katago-coreml", None)
    );

    let ort =
        "onnxruntime-0ED26B8B-3F3C-4A8E-A0E5-4F0D83B1A5DD-5047-0000005B8E5F4C2E.model.mlmodel";
    let m = c.classify(RootKind::Temp, Path::new(ort)).unwrap();
    assert_eq!(
        (m.rule.id.as_str(), m.captures.pid),
        ("ort-coreml-ep", Some(5047))
    );
    // An automatic rule claims only ORT's own name form (with the owner pid), never an
    // onnxruntime-* it cannot decide by pid (a user's extracted release, a renamed bundle).
    for other in [
        "onnxruntime-compiled.mlmodelc",
        "onnxruntime-osx-arm64-1.20.1",
    ] {
        assert!(
            c.classify(RootKind::Temp, Path::new(other)).is_none(),
            "{other}"
        );
    }

    let m = c
        .classify(
            RootKind::Temp,
            Path::new("com.apple.MetalPerformanceShadersGraph/mpsgraph-31337-7-abc"),
        )
        .unwrap();
    assert_eq!(
        (m.rule.id.as_str(), m.captures.pid),
        ("mpsgraph-scratch", Some(31337))
    );

    let m = c
        .classify(
            RootKind::Temp,
            Path::new("yarn--1540372541734-0.6521393655612836"),
        )
        .unwrap();
    assert_eq!(
        m.captures.ts,
        Some(UNIX_EPOCH + Duration::from_millis(1_540_372_541_734))
    );

    let m = c
        .classify(
            RootKind::LibraryCaches,
            Path::new("com.electron.ollama.ShipIt/update.xYz9876"),
        )
        .unwrap();
    assert_eq!(m.captures.bundle.as_deref(), Some("com.electron.ollama"));

    let m = c
        .classify(
            RootKind::DiagnosticReports,
            Path::new("Retired/Google Chrome Helper-2024-05-06-101112.ips"),
        )
        .unwrap();
    assert_eq!(m.captures.bundle.as_deref(), Some("Google Chrome Helper"));

    // Nuitka: onefile_<PID>_<TIME>, where {TIME} is <secs>_<usecs> on Unix.
    let m = c
        .classify(RootKind::Temp, Path::new("onefile_4242_1718000000_123456"))
        .unwrap();
    assert_eq!(
        (m.rule.id.as_str(), m.captures.pid, m.captures.ts),
        (
            "nuitka-onefile",
            Some(4242),
            Some(UNIX_EPOCH + Duration::from_secs(1_718_000_000))
        )
    );
    // Code-sign clones: the app's bundle id from the parent dir.
    let m = c
        .classify(
            RootKind::CodeSignClones,
            Path::new("com.google.Chrome.code_sign_clone/code_sign_clone.tKdILk"),
        )
        .unwrap();
    assert_eq!(m.captures.bundle.as_deref(), Some("com.google.Chrome"));
    assert_eq!(m.captures.pid, None);
    // tsx-<uid> and claude-<uid> carry a uid, never taken for a pid.
    let m = c.classify(RootKind::Temp, Path::new("tsx-501")).unwrap();
    assert_eq!(m.captures, Default::default());

    // A pid that overflows u32 is not captured (the item is still attributed).
    let m = c
        .classify(RootKind::Temp, Path::new("model_99999999999_1_1.mlmodelc"))
        .unwrap();
    assert_eq!(m.captures.pid, None);
}

// ---------------------------------------------------------------- user rules and their errors

const USER_OK: &str = r#"
[alerts]
max_total_bytes = 1

[[producer]]
id = "my-app-temp"
name = "My app scratch dirs"
root = "temp"
item = "my-app-*"
name_regex = '^my-app-(?P<pid>\d+)$'
kind = "leak"
reclaim = "auto"
owner = { pid_in_name = true }
evidence = ["https://example.invalid/issue/1"]
examples = ["my-app-12"]
counter_examples = ["my-app-x"]
"#;

#[test]
fn user_rules_extend_the_builtin_ones_and_other_tables_are_ignored() {
    let builtin = Catalogue::builtin();
    let c = Catalogue::with_extra(USER_OK, Path::new("config.toml")).unwrap();
    assert_eq!(c.rules().len(), builtin.rules().len() + 1);
    let ids: Vec<&str> = c.rules().iter().map(|r| r.id.as_str()).collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    assert_eq!(ids, sorted);
    let m = c.classify(RootKind::Temp, Path::new("my-app-12")).unwrap();
    assert_eq!(
        (m.rule.id.as_str(), m.captures.pid),
        ("my-app-temp", Some(12))
    );
    assert!(c.classify(RootKind::Temp, Path::new("my-app-x")).is_none());
    // Built-in rules still work.
    assert!(c
        .classify(RootKind::Temp, Path::new("model_1_2_3.mlmodelc"))
        .is_some());
    // Only the user's rules.
    let only = Catalogue::from_toml(USER_OK, Path::new("config.toml")).unwrap();
    assert_eq!(only.rules().len(), 1);
    assert_eq!(only.max_depth(RootKind::Temp), 1);
    assert_eq!(only.max_depth(RootKind::Cache), 0);
}

#[test]
fn a_user_rule_with_a_builtin_id_replaces_it() {
    let text = r#"
[[producer]]
id = "katago-coreml"
name = "KataGo, my build"
root = "temp"
item = "katago-mine-*"
kind = "leak"
reclaim = "never"
"#;
    let c = Catalogue::with_extra(text, Path::new("config.toml")).unwrap();
    assert_eq!(c.rules().len(), Catalogue::builtin().rules().len());
    let rule = c.rule("katago-coreml").unwrap();
    assert_eq!(rule.item, ["katago-mine-*"]);
    assert_eq!(rule.reclaim, ReclaimMode::Never);
    assert!(c
        .classify(RootKind::Temp, Path::new("model_1_2_3.mlmodelc"))
        .is_none());
    assert_eq!(
        c.classify(RootKind::Temp, Path::new("katago-mine-1"))
            .unwrap()
            .rule
            .id,
        "katago-coreml"
    );
}

/// What a bad user rule must give: the error's kind with the fields worth checking.
enum Want {
    /// A TOML syntax error, an unknown field, a bad enum word or a missing field.
    Toml,
    /// A glob refused: the glob as written and its rule's id.
    BadGlob {
        glob: &'static str,
        id: &'static str,
    },
    /// A regex that does not compile.
    BadRegex,
    /// An id given twice, with the line of its first definition.
    DuplicateId { id: &'static str, first_line: usize },
    /// Two rules claiming one path: the two ids in order and the path, when the case names them.
    Overlap {
        ids: Option<(&'static str, &'static str)>,
        path: Option<&'static str>,
    },
    /// A rule's example it does not claim, or a counter-example it does.
    Example,
}

/// One bad config: the `[[producer]]` tables, the error they must give, the line it must name, and
/// words its message must hold.
struct ErrorCase {
    name: &'static str,
    toml: &'static str,
    want: Want,
    line: usize,
    contains: &'static [&'static str],
}

/// The config file every case is read from.
const CONFIG: &str = "/home/u/.config/cachewatch/config.toml";

/// Every way a user rule can be wrong, each with the line a user must look at.
const ERROR_CASES: &[ErrorCase] = &[
    ErrorCase {
        name: "toml_syntax_error_names_file_and_line",
        toml: "[[producer]]\nid = \"x\nname = \"y\"\n",
        want: Want::Toml,
        line: 2,
        contains: &[],
    },
    ErrorCase {
        name: "unknown_field_gives_its_line",
        toml: r#"[[producer]]
id = "my-app"
name = "My app"
root = "temp"
item = "my-app-*"
colour = "red"
kind = "leak"
reclaim = "auto"
"#,
        want: Want::Toml,
        line: 6,
        contains: &["colour"],
    },
    ErrorCase {
        name: "bad_root_kind_gives_its_line",
        toml: r#"[[producer]]
id = "my-app"
name = "My app"
root = "tmp"
item = "my-app-*"
kind = "leak"
reclaim = "auto"
"#,
        want: Want::Toml,
        line: 4,
        contains: &["tmp"],
    },
    ErrorCase {
        name: "double_star_glob_gives_the_line_of_that_glob_in_an_array",
        toml: r#"[[producer]]
id = "my-app"
name = "My app"
root = "temp"
item = [
  "my-app/*",
  "my-app-logs/**",
]
kind = "leak"
reclaim = "auto"
"#,
        want: Want::BadGlob {
            glob: "my-app-logs/**",
            id: "my-app",
        },
        line: 7,
        contains: &[],
    },
    ErrorCase {
        name: "glob_that_does_not_compile_gives_its_line",
        toml: r#"[[producer]]
id = "my-app"
name = "My app"
root = "cache"
item = "my-app-[abc"
kind = "leak"
reclaim = "auto"
"#,
        want: Want::BadGlob {
            glob: "my-app-[abc",
            id: "my-app",
        },
        line: 5,
        contains: &["does not compile"],
    },
    ErrorCase {
        name: "structure_glob_with_double_star_gives_its_line",
        toml: r#"[[producer]]
id = "my-app"
name = "My app"
root = "cache"
item = "my-app/shards/*"
kind = "cache"
reclaim = "auto"
structure = ["my-app/shards", "my-app/**"]
"#,
        want: Want::BadGlob {
            glob: "my-app/**",
            id: "my-app",
        },
        line: 8,
        contains: &[],
    },
    ErrorCase {
        name: "regex_that_does_not_compile_gives_its_line",
        toml: r#"[[producer]]
id = "my-app"
name = "My app"
root = "temp"
item = "my-app-*"
kind = "leak"
reclaim = "auto"
name_regex = '^my-app-(?P<pid>\d+$'
"#,
        want: Want::BadRegex,
        line: 8,
        contains: &[],
    },
    ErrorCase {
        name: "duplicate_id_gives_both_lines",
        toml: r#"[[producer]]
id = "my-app"
name = "My app"
root = "temp"
item = "my-app-*"
kind = "leak"
reclaim = "auto"

[[producer]]
id = "my-app"
name = "My app again"
root = "temp"
item = "my-other-*"
kind = "leak"
reclaim = "auto"
"#,
        want: Want::DuplicateId {
            id: "my-app",
            first_line: 2,
        },
        line: 10,
        contains: &[],
    },
    // `*/*/gpuarchiver-*` claims the built-in example julia/com.apple.gpuarchiver/gpuarchiver-XyZ789.
    ErrorCase {
        name: "user_rule_overlapping_a_builtin_one_names_both_ids_at_the_user_line",
        toml: r#"[[producer]]
id = "my-gpu"
name = "My GPU archives"
root = "cache"
kind = "leak"
reclaim = "auto"
item = "*/*/gpuarchiver-*"
"#,
        want: Want::Overlap {
            ids: Some(("metal-gpuarchiver", "my-gpu")),
            path: None,
        },
        line: 7,
        contains: &[],
    },
    ErrorCase {
        name: "two_user_rules_claiming_one_example_overlap",
        toml: r#"[[producer]]
id = "a-rule"
name = "A"
root = "temp"
item = "shared-*"
kind = "leak"
reclaim = "auto"

[[producer]]
id = "b-rule"
name = "B"
root = "temp"
item = "shared-?"
kind = "leak"
reclaim = "auto"
examples = ["shared-1"]
"#,
        want: Want::Overlap {
            ids: Some(("a-rule", "b-rule")),
            path: Some("shared-1"),
        },
        line: 16,
        contains: &[],
    },
    // The gpuarchiver dir of metal-gpuarchiver would hide this rule's items.
    ErrorCase {
        name: "example_inside_another_rules_item_is_an_overlap",
        toml: r#"[[producer]]
id = "my-state"
name = "State files"
root = "cache"
item = "com.apple.gpuarchiver/*/PersistentState"
kind = "leak"
reclaim = "auto"
examples = ["com.apple.gpuarchiver/gpuarchiver-1/PersistentState"]
"#,
        want: Want::Overlap {
            ids: None,
            path: None,
        },
        line: 8,
        contains: &[],
    },
    ErrorCase {
        name: "example_not_matching_its_rule_and_matching_counter_example_are_refused: example",
        toml: r#"[[producer]]
id = "my-app"
name = "My app"
root = "temp"
item = "my-app-*"
kind = "leak"
reclaim = "auto"
examples = [
  "my-app-1",
  "other-1",
]
"#,
        want: Want::Example,
        line: 10,
        contains: &[],
    },
    ErrorCase {
        name: "example_not_matching_its_rule_and_matching_counter_example_are_refused: counter-example",
        toml: r#"[[producer]]
id = "my-app"
name = "My app"
root = "temp"
item = "my-app-*"
kind = "leak"
reclaim = "auto"
counter_examples = ["my-app-2"]
"#,
        want: Want::Example,
        line: 8,
        contains: &[],
    },
    ErrorCase {
        name: "missing_required_field_is_refused",
        toml: r#"[[producer]]
id = "my-app"
name = "My app"
root = "temp"
item = "my-app-*"
reclaim = "auto"
"#,
        want: Want::Toml,
        line: 1,
        contains: &["kind"],
    },
];

/// Each bad config is refused with the right error, naming the config file and the line to look
/// at (`ERROR_CASES`; a failure names its case).
#[test]
fn user_rule_errors_name_the_file_and_line() {
    let mut names = std::collections::HashSet::new();
    for case in ERROR_CASES {
        let name = case.name;
        assert!(names.insert(name), "two cases named {name}");
        let e = err_of(case.toml);
        match (&case.want, &e) {
            (Want::Toml, CatalogueError::Toml { .. })
            | (Want::BadRegex, CatalogueError::BadRegex { .. })
            | (Want::Example, CatalogueError::Example { .. }) => {}
            (Want::BadGlob { glob, id }, CatalogueError::BadGlob { glob: g, id: i, .. }) => {
                assert_eq!((g.as_str(), i.as_str()), (*glob, *id), "{name}");
            }
            (
                Want::DuplicateId { id, first_line },
                CatalogueError::DuplicateId {
                    id: i,
                    first_line: f,
                    ..
                },
            ) => {
                assert_eq!((i.as_str(), *f), (*id, *first_line), "{name}");
            }
            (
                Want::Overlap { ids, path },
                CatalogueError::Overlap {
                    first,
                    second,
                    path: p,
                    ..
                },
            ) => {
                if let Some(ids) = ids {
                    assert_eq!((first.as_str(), second.as_str()), *ids, "{name}");
                }
                if let Some(path) = path {
                    assert_eq!(p, Path::new(path), "{name}");
                }
            }
            (_, other) => panic!("{name}: wrong error: {other}"),
        }
        assert_eq!(e.line(), case.line, "{name}: {e}");
        assert_eq!(e.origin(), Path::new(CONFIG), "{name}");
        let text = e.to_string();
        assert!(
            text.starts_with(&format!("{CONFIG}:{}: ", case.line)),
            "{name}: {text}"
        );
        for word in case.contains {
            assert!(text.contains(word), "{name}: no {word:?} in {text}");
        }
    }
    assert_eq!(names.len(), 14);
}
// ---------------------------------------------------------------- explain on a real tree

#[test]
fn explain_says_who_claims_a_path_or_why_none_does() {
    let dir = tempfile::tempdir().unwrap();
    let temp = dir.path().join("T");
    let cache = dir.path().join("C");
    let bundle = temp.join("model_4242_1_1718000000.mlmodelc");
    std::fs::create_dir_all(bundle.join("weights")).unwrap();
    std::fs::write(bundle.join("weights/weight.bin"), b"w").unwrap();
    std::fs::create_dir_all(temp.join("model_a_b_c.mlmodelc")).unwrap();
    std::fs::create_dir_all(cache.join("com.apple.gpuarchiver/gpuarchiver-1")).unwrap();
    let roots = vec![
        Root::new(RootKind::Temp, &temp).unwrap(),
        Root::new(RootKind::Cache, &cache).unwrap(),
    ];
    let c = Catalogue::builtin();

    let inside = bundle.join("weights/weight.bin");
    let ex = c.explain(&roots, &inside);
    assert_eq!(ex.root.as_ref().unwrap().kind, RootKind::Temp);
    assert_eq!(
        ex.relative.as_deref(),
        Some(Path::new(
            "model_4242_1_1718000000.mlmodelc/weights/weight.bin"
        ))
    );
    match &ex.verdict {
        Verdict::Claimed {
            producer,
            item,
            is_item,
            captures,
            reclaim,
            ..
        } => {
            assert_eq!(producer, "katago-coreml");
            assert_eq!(
                item,
                &roots[0].canonical.join("model_4242_1_1718000000.mlmodelc")
            );
            assert!(!is_item);
            assert_eq!(captures.pid, Some(4242));
            assert_eq!(*reclaim, ReclaimMode::Auto);
        }
        other => panic!("{other:?}"),
    }
    let json = serde_json::to_value(&ex).unwrap();
    assert_eq!(json["verdict"]["status"], "claimed");
    assert_eq!(json["verdict"]["producer"], "katago-coreml");

    let ex = c.explain(&roots, &cache.join("com.apple.gpuarchiver/gpuarchiver-1"));
    assert!(
        matches!(&ex.verdict, Verdict::Claimed { producer, is_item: true, .. } if producer == "metal-gpuarchiver")
    );

    // Glob of two rules matches, regex of neither: unattributed, with the near misses.
    let ex = c.explain(&roots, &temp.join("model_a_b_c.mlmodelc"));
    match &ex.verdict {
        Verdict::Unattributed {
            top_level,
            near_misses,
        } => {
            assert_eq!(top_level, &roots[0].canonical.join("model_a_b_c.mlmodelc"));
            let ids: Vec<&str> = near_misses.iter().map(|n| n.producer.as_str()).collect();
            assert_eq!(ids, ["coreml-compilemodel-temp", "katago-coreml"]);
        }
        other => panic!("{other:?}"),
    }

    let ex = c.explain(&roots, &temp.join("mystery/deep/file"));
    match &ex.verdict {
        Verdict::Unattributed {
            top_level,
            near_misses,
        } => {
            assert_eq!(top_level, &roots[0].canonical.join("mystery"));
            assert!(near_misses.is_empty());
        }
        other => panic!("{other:?}"),
    }

    assert_eq!(c.explain(&roots, &temp).verdict, Verdict::RootItself);
    let outside = c.explain(&roots, Path::new("/definitely/not/a/root"));
    assert_eq!(outside.verdict, Verdict::OutsideRoots);
    assert!(outside.root.is_none());
    assert_eq!(
        serde_json::to_value(&outside).unwrap()["verdict"]["status"],
        "outside-roots"
    );
}

#[test]
fn explain_picks_the_innermost_of_nested_roots() {
    let dir = tempfile::tempdir().unwrap();
    let outer = dir.path().to_path_buf();
    let inner = outer.join("cache");
    std::fs::create_dir_all(inner.join("com.apple.gpuarchiver/gpuarchiver-9")).unwrap();
    let roots = vec![
        Root::new(RootKind::Temp, &outer).unwrap(),
        Root::new(RootKind::Cache, &inner).unwrap(),
    ];
    let p: PathBuf = inner.join("com.apple.gpuarchiver/gpuarchiver-9/x");
    let ex = Catalogue::builtin().explain(&roots, &p);
    assert_eq!(ex.root.unwrap().kind, RootKind::Cache);
    assert!(
        matches!(ex.verdict, Verdict::Claimed { ref producer, .. } if producer == "metal-gpuarchiver")
    );
}

// ---------------------------------------------------------------- benchmark (prints figures)

/// A label, a path maker and whether the path is claimed (1) or not (0).
type BenchCase = (&'static str, fn(u32) -> String, u32);

/// `cargo test --release --test catalogue -- --ignored --nocapture classify_throughput`
#[test]
#[ignore = "benchmark: prints figures, asserts nothing about speed"]
fn classify_throughput() {
    let c = Catalogue::builtin();
    let n = 200_000u32;
    let cases: [BenchCase; 5] = [
        ("miss depth 1", |i| format!("unrelated-{i}"), 0),
        ("miss depth 2", |i| format!("unrelated-{i}/sub-{i}"), 0),
        ("miss depth 3", |i| format!("node_modules-{i}/a/b"), 0),
        (
            "hit katago",
            |i| format!("model_{i}_1_1718000000.mlmodelc"),
            1,
        ),
        (
            "hit mpsgraph",
            |i| format!("com.apple.MetalPerformanceShadersGraph/mpsgraph-{i}-x"),
            1,
        ),
    ];
    for (label, make, hit) in cases {
        let paths: Vec<PathBuf> = (0..n).map(|i| PathBuf::from(make(i))).collect();
        let start = std::time::Instant::now();
        let mut hits = 0u32;
        for p in &paths {
            hits += u32::from(c.classify(RootKind::Temp, p).is_some());
        }
        let elapsed = start.elapsed();
        println!(
            "classify {label}: {n} paths, {hits} hits, {elapsed:?}, {:.0} ns/path",
            elapsed.as_nanos() as f64 / f64::from(n)
        );
        assert_eq!(hits, hit * n);
    }
}

/// The Metal rules claimed `com.apple.metal` and `com.apple.metalfe` themselves, so a
/// reclaim deleted the dirs a sandboxed app cannot recreate (anthropics/claude-code#80472).
#[test]
fn metal_rules_claim_the_entries_inside_their_dirs_never_the_dirs() {
    let cat = Catalogue::builtin();
    for dir in [
        "com.python.python/com.apple.metal",
        "com.python.python/com.apple.metalfe",
        "com.python.python/com.apple.gpuarchiver",
        "com.apple.gpuarchiver",
    ] {
        assert!(
            cat.item_of(RootKind::Cache, Path::new(dir)).is_none(),
            "{dir} is an item"
        );
        let owner = cat.structure_of(RootKind::Cache, Path::new(dir)).unwrap();
        assert!(owner.id.starts_with("metal-"), "{dir}: {}", owner.id);
        assert!(
            owner
                .evidence
                .iter()
                .any(|u| u == "https://github.com/anthropics/claude-code/issues/80472"),
            "{}",
            owner.id
        );
    }
    let inside = cat
        .item_of(
            RootKind::Cache,
            Path::new("com.python.python/com.apple.metal/16777235_322/functions.data"),
        )
        .unwrap();
    assert_eq!(inside.rule.id, "metal-shader-cache");
    assert_eq!(
        inside.item,
        Path::new("com.python.python/com.apple.metal/16777235_322")
    );
    assert_eq!(inside.captures.bundle.as_deref(), Some("com.python.python"));
}

/// Issue (tester): the Go rule's globs were broad for an automatic rule. A name is claimed only
/// in os.MkdirTemp's form: the prefix, then 1 to 10 decimal digits; t.TempDir's prefix a Go test
/// name (Test, then no lowercase letter).
#[test]
fn go_build_workdir_claims_only_go_temp_names() {
    let c = Catalogue::builtin();
    let id = |name: &str| {
        c.classify(RootKind::Temp, Path::new(name))
            .map(|m| m.rule.id.clone())
    };
    for ours in [
        "go-build4294967295",
        "go-build7",
        "TestServeHTTP123456",
        "Test42",
    ] {
        assert_eq!(id(ours).as_deref(), Some("go-build-workdir"), "{ours}");
    }
    for not_ours in [
        "go-build42949672950",
        "Testing2024",
        "Tests1",
        "TestFoo-1",
        "Testdata",
    ] {
        assert_ne!(
            id(not_ours).as_deref(),
            Some("go-build-workdir"),
            "{not_ours}"
        );
    }
}

/// Regression: user rule ids were not checked against the slug the messages promise
/// ("my-app-temp"); `My_Tool`, a space, a leading or doubled dash were taken as ids.
#[test]
fn a_user_rule_id_that_is_not_a_slug_is_refused_with_its_line() {
    for bad in [
        "My_Tool",
        "my tool",
        "-x",
        "x-",
        "a--b",
        "caf\u{e9}",
        "UPPER",
        "a.b",
    ] {
        let text = format!(
            "# mine\n\n[[producer]]\nid = {bad:?}\nname = \"Mine\"\nroot = \"temp\"\nitem = \"mine-*\"\nkind = \"leak\"\nreclaim = \"manual\"\n"
        );
        match err_of(&text) {
            CatalogueError::Invalid { line, message, .. } => {
                assert_eq!(line, 4, "{bad:?}: {message}");
                assert!(message.contains("is not a slug"), "{bad:?}: {message}");
                assert!(message.contains(&format!("{bad:?}")), "{bad:?}: {message}");
            }
            other => panic!("{bad:?}: expected Invalid, got {other:?}"),
        }
    }
    for good in ["my-tool", "x", "tool2-tmp", "9p"] {
        let text = format!(
            "[[producer]]\nid = {good:?}\nname = \"Mine\"\nroot = \"temp\"\nitem = \"mine-*\"\nkind = \"leak\"\nreclaim = \"manual\"\n"
        );
        let c = Catalogue::with_extra(&text, Path::new("config.toml")).unwrap();
        assert!(c.rule(good).is_some(), "{good}");
    }
}
