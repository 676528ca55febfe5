//! Names as bytes: shapes, membership and the rule made from a group, checked through the real
//! catalogue matcher on real dirs.

#![allow(clippy::unwrap_used)]

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;

use proptest::prelude::*;

use super::*;
use crate::catalogue::{Catalogue, ReclaimMode, Rule};
use crate::inventory::Measure;
use crate::roots::RootKind;

fn measure() -> Measure {
    Measure {
        allocated_bytes: 4096,
        apparent_bytes: 4096,
        files: 1,
        ..Measure::default()
    }
}

fn opts(id: &str) -> RuleOptions {
    RuleOptions {
        id: id.to_owned(),
        name: None,
        reclaim: ReclaimMode::Manual,
        writer: None,
        evidence: Vec::new(),
    }
}

/// The config text holding `rule` as one `[[producer]]` table.
fn config_with(rule: &Rule) -> String {
    #[derive(serde::Serialize)]
    struct Doc<'a> {
        producer: [&'a Rule; 1],
    }
    toml::to_string(&Doc { producer: [rule] }).unwrap()
}

/// Makes `names` (dirs when `dir`) in `root`.
fn make(root: &Path, names: &[Vec<u8>], dir: bool) {
    for n in names {
        let p = root.join(OsStr::from_bytes(n));
        if dir {
            std::fs::create_dir(&p).unwrap();
        } else {
            std::fs::write(&p, b"x").unwrap();
        }
    }
}

/// 22 dirs `\xff-<rand8>` next to 3 dirs `\u{FFFD}-<rand8>`: the group is the 22, by their bytes,
/// and no rule is made for it (one would claim the other three, and none of the 22).
#[test]
fn a_group_of_non_utf8_names_is_its_own_and_makes_no_rule() {
    let mut rng = crate_rng(7);
    let ff: Vec<Vec<u8>> = (0..22)
        .map(|_| [b"\xff-".as_slice(), rng(8).as_bytes()].concat())
        .collect();
    let fffd: Vec<Vec<u8>> = (0..3)
        .map(|_| format!("\u{FFFD}-{}", rng(8)).into_bytes())
        .collect();
    let mut g = Grouper::new(10);
    for n in ff.iter().chain(&fffd) {
        g.add(OsStr::from_bytes(n), true, &measure());
    }
    let out = g.finish();
    assert_eq!(out.groups.len(), 1);
    let grp = &out.groups[0];
    assert_eq!(grp.items, 22);
    assert_eq!(grp.shape.to_string(), "\\xff-<rand8>/");
    assert!(ff.iter().all(|n| grp.contains(OsStr::from_bytes(n), true)));
    assert!(fffd
        .iter()
        .all(|n| !grp.contains(OsStr::from_bytes(n), true)));
    assert!(matches!(
        rule_for(RootKind::Temp, grp, &opts("local-ff")),
        Err(RuleError::NotText { .. })
    ));
}

/// The other way round: 22 dirs holding a real U+FFFD next to 3 holding the byte 0xff. A rule
/// would match the 0xff names too (the catalogue reads them as U+FFFD): refused.
#[test]
fn a_group_of_names_holding_u_fffd_makes_no_rule() {
    let mut rng = crate_rng(11);
    let mut g = Grouper::new(10);
    let fffd: Vec<Vec<u8>> = (0..22)
        .map(|_| format!("\u{FFFD}-{}", rng(8)).into_bytes())
        .collect();
    for n in &fffd {
        g.add(OsStr::from_bytes(n), true, &measure());
    }
    for _ in 0..3 {
        let n = [b"\xff-".as_slice(), rng(8).as_bytes()].concat();
        g.add(OsStr::from_bytes(&n), true, &measure());
    }
    let out = g.finish();
    let grp = &out.groups[0];
    assert_eq!(grp.items, 22);
    assert_eq!(grp.shape.to_string(), "\u{FFFD}-<rand8>/");
    let err = rule_for(RootKind::Temp, grp, &opts("local-fffd")).unwrap_err();
    assert!(err.to_string().contains("not UTF-8"), "{err}");
}

/// A 47-character random run: its length byte is the code of `/`, which the key once took for
/// the dir mark (a file shown as `cache-\0r/`).
#[test]
fn a_random_run_of_any_length_stays_a_placeholder() {
    for n in [5usize, 45, 46, 47, 48, 100, 200, 250] {
        let mut rng = crate_rng(n as u64);
        let name = format!("cache-{}", rng(n));
        let s = shape_of(OsStr::new(&name), false);
        assert_eq!(s.to_string(), format!("cache-<rand{n}>"), "{name}");
        assert!(!s.dir);
        let d = shape_of(OsStr::new(&name), true);
        assert_eq!(d.to_string(), format!("cache-<rand{n}>/"));
    }
}

/// Names with `!` (and other glob metacharacters): the rule made loads and claims the group.
#[test]
fn glob_metacharacters_in_names_give_a_rule_that_loads_and_claims_the_group() {
    for lit in ["build!", "a[!]b-", "x{y,z}-", "q?*\\-", "-!-"] {
        let dir = tempfile::tempdir().unwrap();
        let mut rng = crate_rng(3);
        let names: Vec<Vec<u8>> = (0..21)
            .map(|_| format!("{lit}{}", rng(9)).into_bytes())
            .collect();
        make(dir.path(), &names, true);
        let mut g = Grouper::new(10);
        for n in &names {
            g.add(OsStr::from_bytes(n), true, &measure());
        }
        let out = g.finish();
        assert_eq!(out.groups.len(), 1, "{lit}");
        let grp = &out.groups[0];
        let rule = rule_for(RootKind::Temp, grp, &opts("local-bang")).unwrap();
        let cat = Catalogue::with_extra(&config_with(&rule), Path::new("c.toml"))
            .unwrap_or_else(|e| panic!("{lit}: {e}"));
        let check = check_rule(
            &Catalogue::builtin(),
            &cat,
            "local-bang",
            RootKind::Temp,
            dir.path(),
            grp,
        )
        .unwrap();
        assert!(check.is_exact(), "{lit}: {check:?}");
        assert_eq!(check.claimed, 21);
    }
}

/// A deterministic alphanumeric run generator (mixed case and digits, as mkdtemp draws).
fn crate_rng(seed: u64) -> impl FnMut(usize) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    move |n| {
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                A[(x % A.len() as u64) as usize] as char
            })
            .collect()
    }
}

/// Literal bytes of a name: any byte but NUL and `/`, with 0xff, U+FFFD, glob and regex
/// metacharacters drawn often.
fn lit_bytes() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(vec![0xff]),
        Just("\u{FFFD}".as_bytes().to_vec()),
        Just(vec![0xc3]),
        Just("é".as_bytes().to_vec()),
        prop::sample::select(b"!-_.[]{}*?\\,^$()+| ~".to_vec()).prop_map(|b| vec![b]),
        (1u8..=255)
            .prop_filter("no NUL or /", |b| *b != b'/')
            .prop_map(|b| vec![b]),
        "[a-z]{1,4}".prop_map(String::into_bytes),
    ];
    prop::collection::vec(piece, 0..5).prop_map(|v| v.concat())
}

/// `name` with each 0xff turned into U+FFFD and each U+FFFD into 0xff: what a lossy rendering
/// cannot tell apart.
fn swapped(name: &[u8]) -> Vec<u8> {
    let fffd = "\u{FFFD}".as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < name.len() {
        if name[i..].starts_with(fffd) {
            out.push(0xff);
            i += fffd.len();
        } else if name[i] == 0xff {
            out.extend_from_slice(fffd);
            i += 1;
        } else {
            out.push(name[i]);
            i += 1;
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// For arbitrary byte names, each group's members are exactly the names its shape matches
    /// (by bytes), and the rule made from it, loaded by the real catalogue, claims exactly those
    /// of the root's entries (or no rule is made, when the names are not text).
    #[test]
    fn a_rule_made_from_a_group_claims_exactly_its_members(
        pre in lit_bytes(),
        post in lit_bytes(),
        len in 6usize..14,
        seed in any::<u64>(),
        members in 20usize..28,
    ) {
        let mut rng = crate_rng(seed);
        let mut names: Vec<Vec<u8>> = (0..members)
            .map(|_| [pre.as_slice(), rng(len).as_bytes(), post.as_slice()].concat())
            .collect();
        // What a lossy rendering confuses with the members, and a few other runs.
        let decoys: Vec<Vec<u8>> = names.iter().take(4).map(|n| swapped(n)).collect();
        names.extend(decoys);
        names.push([pre.as_slice(), rng(len + 1).as_bytes(), post.as_slice()].concat());
        names.sort();
        names.dedup();
        let files: Vec<Vec<u8>> = (0..3)
            .map(|_| [pre.as_slice(), rng(len).as_bytes(), post.as_slice()].concat())
            .filter(|f| !names.contains(f))
            .collect();
        let too_long = |n: &Vec<u8>| n.len() > 255;
        prop_assume!(!names.iter().chain(&files).any(too_long));
        let dir = tempfile::tempdir().unwrap();
        make(dir.path(), &names, true);
        make(dir.path(), &files, false);
        let mut g = Grouper::new(64);
        for n in &names {
            g.add(OsStr::from_bytes(n), true, &measure());
        }
        for n in &files {
            g.add(OsStr::from_bytes(n), false, &measure());
        }
        let out = g.finish();
        for grp in &out.groups {
            let shown: Vec<OsString> = names
                .iter()
                .filter(|n| grp.contains(OsStr::from_bytes(n), true))
                .map(|n| OsString::from_vec(n.clone()))
                .collect();
            prop_assert_eq!(grp.items, shown.len() as u64, "{}", grp.shape);
            let rule = match rule_for(RootKind::Temp, grp, &opts("local-prop")) {
                Ok(rule) => rule,
                Err(RuleError::NotText { .. }) => {
                    prop_assert!(!grp.shape.is_text());
                    continue;
                }
                Err(e) => return Err(TestCaseError::fail(e.to_string())),
            };
            let cat = match Catalogue::with_extra(&config_with(&rule), Path::new("c.toml")) {
                Ok(cat) => cat,
                // A shape as generic as a built-in rule's example: the config would not load,
                // so `rules add` writes nothing.
                Err(crate::catalogue::CatalogueError::Overlap { .. }) => continue,
                Err(e) => return Err(TestCaseError::fail(format!("{}: {e}", grp.shape))),
            };
            for n in names.iter().chain(&files) {
                let is_dir = names.contains(n);
                let rel = Path::new(OsStr::from_bytes(n));
                let claim = cat.classify(RootKind::Temp, rel);
                if claim.as_ref().is_some_and(|m| m.rule.id != "local-prop") {
                    continue;
                }
                let claimed = claim.is_some();
                if is_dir {
                    prop_assert_eq!(
                        claimed,
                        grp.contains(OsStr::from_bytes(n), true),
                        "{} on {:?}",
                        grp.shape,
                        String::from_utf8_lossy(n)
                    );
                }
            }
            // Files of the dirs' shape are claimed too: the check `rules add` runs names them.
            let check = check_rule(&Catalogue::builtin(), &cat, "local-prop", RootKind::Temp, dir.path(), grp).unwrap();
            prop_assert!(check.missed.is_empty(), "{:?}", check);
            for w in &check.wrongly_claimed {
                prop_assert!(files.contains(&w.as_bytes().to_vec()), "{:?}", w);
            }
        }
    }
}

/// Bundles `<word>_<pid>_<thread>_<ts>` of 30 launches with pids of 2 to 6 digits and threads 0
/// and 1: one group, whose rule (digit classes with length ranges) claims all 60 and neither a
/// 7-digit pid nor another word.
#[test]
fn pids_and_thread_indexes_make_one_group_and_one_exact_rule() {
    let dir = tempfile::tempdir().unwrap();
    let mut names = Vec::new();
    for launch in 0..30u64 {
        let pid = [42u64, 917, 4321, 48213, 123456][launch as usize % 5] + launch;
        for thread in 0..2 {
            names.push(
                format!("kestrel_{pid}_{thread}_{}", 1_767_000_000 + launch * 61).into_bytes(),
            );
        }
    }
    make(dir.path(), &names, true);
    let decoys = [
        "kestrel_42_0_1767000000_old",
        "kestrelx_42_0_1767000000",
        "kestrel_42_0_176700000",
    ];
    let decoys: Vec<Vec<u8>> = decoys.iter().map(|d| d.as_bytes().to_vec()).collect();
    make(dir.path(), &decoys, true);
    let mut g = Grouper::new(10);
    for n in names.iter().chain(&decoys) {
        g.add(OsStr::from_bytes(n), true, &measure());
    }
    let out = g.finish();
    assert_eq!(out.groups.len(), 1);
    let grp = &out.groups[0];
    assert_eq!(grp.items, 60);
    assert_eq!(grp.shape.to_string(), "kestrel_<digits2-6>_<digits1>_<ts>/");
    let rule = rule_for(RootKind::Temp, grp, &opts("local-kestrel")).unwrap();
    assert_eq!(
        rule.name_regex.as_deref(),
        Some("^kestrel_[0-9]{2,6}_[0-9]{1}_(?P<ts>[0-9]{13}|[0-9]{10})$")
    );
    let cat = Catalogue::with_extra(&config_with(&rule), Path::new("c.toml")).unwrap();
    let check = check_rule(
        &Catalogue::builtin(),
        &cat,
        "local-kestrel",
        RootKind::Temp,
        dir.path(),
        grp,
    )
    .unwrap();
    assert!(check.is_exact(), "{check:?}");
    assert_eq!(check.claimed, 60);
    for d in &decoys {
        assert!(cat
            .classify(RootKind::Temp, Path::new(OsStr::from_bytes(d)))
            .is_none());
    }
}

/// The group's shape also fits entries another producer holds: the check takes them for what
/// they are, not members, so the rule that would take them is refused.
#[test]
fn a_rule_that_would_take_another_producers_items_is_not_exact() {
    // Python's mkdtemp names; three of them are TF-DF training dirs (`tfdf-ydf-tmp`, which
    // knows them by the files inside), the scan's group holds the other 24.
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let mut rng = crate_rng(11);
    let name = |rng: &mut dyn FnMut(usize) -> String| format!("tmp{}", rng(8).to_lowercase());
    let members: Vec<String> = (0..24).map(|_| name(&mut rng)).collect();
    let training: Vec<String> = (0..3).map(|_| name(&mut rng)).collect();
    for n in &members {
        std::fs::create_dir(root.join(n)).unwrap();
    }
    for n in &training {
        let model = root.join(n).join("model");
        std::fs::create_dir_all(&model).unwrap();
        for f in ["data_spec.pb", "header.pb", "done"] {
            std::fs::write(model.join(f), "x").unwrap();
        }
    }
    let mut g = Grouper::new(10);
    for n in &members {
        g.add(OsStr::new(n), true, &measure());
    }
    let out = g.finish();
    let grp = &out.groups[0];
    assert_eq!(grp.items, 24);
    let rule = rule_for(RootKind::Temp, grp, &opts("local-tmp")).unwrap();
    let cat = Catalogue::with_extra(&config_with(&rule), Path::new("c.toml")).unwrap();
    let before = Catalogue::builtin();
    let check = check_rule(&before, &cat, "local-tmp", RootKind::Temp, &root, grp).unwrap();
    assert_eq!(check.claimed, 24);
    let mut want: Vec<OsString> = training.iter().map(OsString::from).collect();
    want.sort();
    assert_eq!(
        check.wrongly_claimed, want,
        "the training dirs are tfdf-ydf-tmp's"
    );
    assert!(!check.is_exact());

    // Members that each hold another producer's item deeper down (Metal's shader cache of a
    // tool named by a hash): the rule would take each whole, cache included.
    let cache = tempfile::tempdir().unwrap();
    let croot = std::fs::canonicalize(cache.path()).unwrap();
    let tools: Vec<String> = (0..22u32)
        .map(|i| format!("tool-{:08x}", i.wrapping_mul(0x9e37_79b9)))
        .collect();
    let mut g = Grouper::new(10);
    for n in &tools {
        let metal = croot.join(n).join("com.apple.metal");
        std::fs::create_dir_all(&metal).unwrap();
        std::fs::write(metal.join("archiveUsage.db"), "x").unwrap();
        g.add(OsStr::new(n), true, &measure());
    }
    let out = g.finish();
    let grp = &out.groups[0];
    let rule = rule_for(RootKind::Cache, grp, &opts("local-tool")).unwrap();
    let cat = Catalogue::with_extra(&config_with(&rule), Path::new("c.toml")).unwrap();
    let check = check_rule(&before, &cat, "local-tool", RootKind::Cache, &croot, grp).unwrap();
    assert_eq!(check.claimed, 0, "{check:?}");
    // 22 taken; the list keeps the first 20 (GROUP_MIN_ITEMS).
    assert_eq!(
        check.wrongly_claimed.len(),
        GROUP_MIN_ITEMS as usize,
        "{check:?}"
    );
    assert!(!check.is_exact());
}

/// A rule names a kind of root, not one root: what it would claim in the other roots of that
/// kind is wrongly claimed, shown with its full path.
#[test]
fn a_rule_checks_every_root_of_its_kind() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (ra, rb) = (
        std::fs::canonicalize(a.path()).unwrap(),
        std::fs::canonicalize(b.path()).unwrap(),
    );
    let mut rng = crate_rng(5);
    let mut g = Grouper::new(10);
    for _ in 0..24 {
        let n = format!("job{}", rng(8));
        std::fs::create_dir(ra.join(&n)).unwrap();
        g.add(OsStr::new(&n), true, &measure());
    }
    let theirs: Vec<String> = (0..2).map(|_| format!("job{}", rng(8))).collect();
    for n in &theirs {
        std::fs::create_dir(rb.join(n)).unwrap();
    }
    std::fs::create_dir(rb.join("notes")).unwrap();
    let out = g.finish();
    let grp = &out.groups[0];
    let rule = rule_for(RootKind::Other, grp, &opts("local-job")).unwrap();
    let cat = Catalogue::with_extra(&config_with(&rule), Path::new("c.toml")).unwrap();
    let before = Catalogue::builtin();
    let alone = check_rule(&before, &cat, "local-job", RootKind::Other, &ra, grp).unwrap();
    assert!(alone.is_exact() && alone.claimed == 24, "{alone:?}");
    let others = [rb.clone(), ra.join("missing-root")];
    let check = check_rule_in(
        &before,
        &cat,
        "local-job",
        RootKind::Other,
        &ra,
        &others,
        grp,
    )
    .unwrap();
    assert_eq!(check.claimed, 24);
    let mut want: Vec<OsString> = theirs.iter().map(|n| rb.join(n).into_os_string()).collect();
    want.sort();
    assert_eq!(check.wrongly_claimed, want);
}
