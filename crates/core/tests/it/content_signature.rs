//! Generic names are claimed only with a content signature (`contains`), and the 2026 second-half
//! temp-dir producers are attributed with `du` totals: TensorFlow Decision Forests' `tmp<8>/`
//! training dirs (tensorflow/decision-forests#41) are claimed when they hold a YDF model
//! (`data_spec.pb`, `header.pb`, `done`) and no other `tmp*` dir is; Bun single-file executables'
//! extracted libraries (oven-sh/bun#19550) are claimed by their exact name and kept while open.

#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, SystemTime};

use cachewatch_core::explain::Verdict;
use cachewatch_core::process::SystemProbe;
use cachewatch_core::reclaim::{execute, plan, KeepReason, Policy};
use cachewatch_core::scan::scan;
use cachewatch_core::{Catalogue, Root, RootKind};
use cachewatch_testkit::{du, tree};

/// A temp root in a temp dir.
fn temp_root(dir: &Path) -> Root {
    let t = dir.join("T");
    fs::create_dir(&t).unwrap();
    Root::new(RootKind::Temp, &t).unwrap()
}

/// A temp dir as TF-DF leaves it (~20 MB in the report; smaller here): `core.py` trains into
/// `os.path.join(temp_directory, "model")`, so the YDF model is one level down.
fn ydf(root: &Path, name: &str) -> PathBuf {
    let d = root.join(name);
    let m = d.join("model");
    tree::write_file(&m.join("data_spec.pb"), 3_000);
    tree::write_file(&m.join("header.pb"), 200);
    tree::write_file(&m.join("done"), 0);
    tree::write_file(&m.join("random_forest_header.pb"), 100);
    tree::write_file(&m.join("nodes-00000-of-00001"), 90_000);
    d
}

#[test]
fn tfdf_dirs_are_claimed_by_their_signature_and_no_other_tmp_dir_is() {
    let dir = tempfile::tempdir().unwrap();
    let root = temp_root(dir.path());
    let t = &root.canonical;
    let models = [
        ydf(t, "tmpa1b2c3d4"),
        ydf(t, "tmp_x9y8z7w"),
        ydf(t, "tmpqwertyui"),
    ];
    // Seven tmp* entries of other content, each with a name the rule's glob and regex accept.
    tree::write_file(&t.join("tmpzxcvbnm1/setup.py"), 1_000); // a pip build dir
    tree::write_file(&t.join("tmpasdfghj2/model/data_spec.pb"), 3_000); // training in progress:
    tree::write_file(&t.join("tmpasdfghj2/model/header.pb"), 200); // no `done` yet
                                                                   // The layout the rule used to claim: the model files directly in the dir (not TF-DF's).
    tree::write_file(&t.join("tmpflatmod6/data_spec.pb"), 3_000);
    tree::write_file(&t.join("tmpflatmod6/header.pb"), 200);
    tree::write_file(&t.join("tmpflatmod6/done"), 0);
    // `model` a symlink to a real model dir: the signature is not followed through it.
    std::os::unix::fs::symlink(models[0].join("model"), t.join("tmplinked07")).unwrap();
    fs::create_dir(t.join("tmplinkdir8")).unwrap();
    std::os::unix::fs::symlink(models[0].join("model"), t.join("tmplinkdir8/model")).unwrap();
    fs::create_dir(t.join("tmppoiuytr3")).unwrap(); // empty
    tree::write_file(&t.join("tmplkjhgfd4"), 5_000); // a file, not a dir
    tree::write_file(&t.join("tmpmnbvcxz5/saved_model.pb"), 4_000); // another framework's model
    tree::write_file(&t.join("tmpmnbvcxz5/variables/variables.index"), 300);
    let others = [
        "tmpzxcvbnm1",
        "tmpasdfghj2",
        "tmppoiuytr3",
        "tmplkjhgfd4",
        "tmpmnbvcxz5",
        "tmpflatmod6",
        "tmplinkdir8",
    ];
    for p in models
        .iter()
        .cloned()
        .chain(others.iter().map(|o| t.join(o)))
    {
        tree::set_tree_mtime(&p, tree::days_ago(3));
    }

    let cat = Catalogue::builtin();
    let now = SystemTime::now();
    let roots = std::slice::from_ref(&root);
    let inv = scan(roots, &cat, now);
    let rs = &inv.roots[0];
    assert_eq!(rs.total.allocated_bytes, du::allocated(&[t]));
    for m in &models {
        let item = rs.items.iter().find(|i| &i.path == m).unwrap();
        assert_eq!(item.producer.as_deref(), Some("tfdf-ydf-tmp"), "{m:?}");
        assert_eq!(item.measure.allocated_bytes, du::allocated(&[m]), "{m:?}");
        assert_eq!(item.measure.files, 5);
    }
    for o in others {
        let item = rs.items.iter().find(|i| i.path == t.join(o)).unwrap();
        assert_eq!(item.producer, None, "{o} claimed");
    }
    let tfdf = inv
        .producers()
        .into_iter()
        .find(|p| p.id == "tfdf-ydf-tmp")
        .unwrap();
    assert_eq!(tfdf.items, 3);
    assert_eq!(tfdf.measure.allocated_bytes, du::allocated(&models));

    // explain gives the same answer, reading the signature from disk.
    for m in &models {
        let e = cat.explain(roots, &m.join("model/header.pb"));
        assert!(
            matches!(&e.verdict, Verdict::Claimed { producer, .. } if producer == "tfdf-ydf-tmp"),
            "{e:?}"
        );
    }
    for o in others {
        let e = cat.explain(roots, &t.join(o));
        assert!(
            matches!(e.verdict, Verdict::Unattributed { .. }),
            "{o}: {e:?}"
        );
    }
    // The path-only lookup never claims by name alone.
    assert!(cat
        .classify(RootKind::Temp, Path::new("tmpa1b2c3d4"))
        .is_none());

    // Named, the models go and nothing else does.
    let policy = Policy {
        older_than: Duration::ZERO,
        producers: vec!["tfdf-ydf-tmp".to_owned()],
        protected: vec![],
    };
    let p = plan(&inv, &cat, &policy, &SystemProbe::new(), now);
    assert_eq!(p.items.len(), 3, "{p:#?}");
    let report = execute(&p, &cat, &SystemProbe::new(), now, &mut |_| {});
    assert_eq!(report.freed_bytes, tfdf.measure.allocated_bytes);
    assert!(models.iter().all(|m| !m.exists()));
    assert!(others.iter().all(|o| t.join(o).exists()));
}

/// A child holding a file open, killed on drop.
struct Holding(Child);

impl Drop for Holding {
    fn drop(&mut self) {
        self.0.kill().ok();
        self.0.wait().ok();
    }
}

#[test]
fn bun_extracted_libraries_are_attributed_with_du_totals_and_kept_while_open() {
    let dir = tempfile::tempdir().unwrap();
    let root = temp_root(dir.path());
    let t = &root.canonical;
    // Shapes from the reports: `.node` addons (bun#19550), a dlopen'd `.dylib` (hunk#556, 3.6 MB
    // there), Worker copies of a `.so` (bun#29585).
    let libs = [
        (".7efdf7f29cfffbf1-00000001.node", 40_000),
        (".b8bfd7f0f79bfef9-00000000.node", 40_000),
        (".5ccbd3e7f7bf5fff-00000000.dylib", 120_000),
        (".59ee776dfc9ebfd7-00000000.so", 15_112),
        (".59ee776dfddbfeff-00000000.so", 15_112),
    ];
    let paths: Vec<PathBuf> = libs
        .iter()
        .map(|(name, len)| {
            let p = t.join(name);
            tree::write_file(&p, *len);
            tree::set_mtime(&p, tree::days_ago(2));
            p
        })
        .collect();
    // Counter-examples: not Bun's name.
    for name in [
        ".7efdf7f29cfffbf1.node",
        "7efdf7f29cfffbf1-00000001.node",
        ".7EFDF7F29CFFFBF1-00000001.node",
        ".7efdf7f29cfffbf1-00000001.dll",
    ] {
        tree::write_file(&t.join(name), 1_000);
        tree::set_mtime(&t.join(name), tree::days_ago(2));
    }
    let held = &paths[2];
    let holding = Holding(
        Command::new("sh")
            .arg("-c")
            .arg("exec 3<\"$1\"; exec sleep 60")
            .arg("sh")
            .arg(held)
            .spawn()
            .unwrap(),
    );
    std::thread::sleep(Duration::from_millis(300));

    let cat = Catalogue::builtin();
    let now = SystemTime::now();
    let inv = scan(std::slice::from_ref(&root), &cat, now);
    let bun = inv
        .producers()
        .into_iter()
        .find(|p| p.id == "bun-sfe-native-extract")
        .unwrap();
    assert_eq!(bun.items, paths.len() as u64);
    assert_eq!(bun.measure.allocated_bytes, du::allocated(&paths));
    assert_eq!(
        bun.measure.apparent_bytes,
        libs.iter().map(|(_, n)| *n as u64).sum::<u64>()
    );
    assert_eq!(inv.roots[0].total.allocated_bytes, du::allocated(&[t]));

    // The rule is auto: a default reclaim plans the copies no process holds.
    let policy = Policy {
        older_than: Duration::from_secs(3600),
        producers: vec![],
        protected: vec![],
    };
    let p = plan(&inv, &cat, &policy, &SystemProbe::new(), now);
    let planned: Vec<&PathBuf> = p.items.iter().map(|i| &i.path).collect();
    assert_eq!(planned.len(), paths.len() - 1, "{p:#?}");
    assert!(!planned.contains(&held));
    let kept = p.kept.iter().find(|k| &k.path == held).unwrap();
    match &kept.reason {
        KeepReason::InUse { pid, .. } => assert_eq!(*pid, holding.0.id()),
        other => panic!("held copy kept for {other:?}"),
    }
}

/// A user's rule one level down in a dir whose name a signed rule also accepts (`mktemp -d`
/// makes `tmp.<10>` dirs, Codex's git stores are such dirs): the rule loads, the signature
/// decides. A `tmp.*` dir with an index and objects is Codex's whole, what it holds included;
/// in any other `tmp.*` dir the user's rule claims its own items.
#[test]
fn a_rule_inside_a_dir_named_like_a_signed_rules_item_loads_and_the_signature_decides() {
    let dir = tempfile::tempdir().unwrap();
    let root = temp_root(dir.path());
    let t = &root.canonical;
    let mine: Vec<PathBuf> = (0..22u64)
        .map(|i| {
            let p = t.join(format!("tmp.Q1w2E3r4T5/trace_{}", 1_767_000_000 + i * 61));
            tree::write_file(&p.join("events.bin"), 2_000 + 300 * i as usize);
            p
        })
        .collect();
    let codex = t.join("tmp.A1b2C3d4");
    tree::write_file(&codex.join("index"), 900);
    tree::write_file(&codex.join("objects/pack/tmp_pack_Ab12Cd"), 40_000);
    tree::write_file(&codex.join("trace_1767000000/events.bin"), 5_000);
    let rule = r#"
[[producer]]
id = "local-trace"
name = "Traces in mktemp dirs"
root = "temp"
item = "tmp.*/trace_*"
name_regex = '^trace_[0-9]{10}$'
kind = "leak"
reclaim = "manual"
min_age_secs = 3600
examples = ["tmp.Q1w2E3r4T5/trace_1767000000"]
"#;
    let cat = Catalogue::with_extra(rule, Path::new("config.toml")).unwrap();
    let inv = scan(std::slice::from_ref(&root), &cat, SystemTime::now());
    let rs = &inv.roots[0];
    let of = |id: &str| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = rs
            .items
            .iter()
            .filter(|i| i.producer.as_deref() == Some(id))
            .map(|i| i.path.clone())
            .collect();
        v.sort();
        v
    };
    assert_eq!(of("local-trace"), mine);
    assert_eq!(of("codex-tmp-git-objects"), vec![codex.clone()]);
    let claimed: u64 = rs
        .items
        .iter()
        .filter(|i| i.producer.as_deref() == Some("local-trace"))
        .map(|i| i.measure.allocated_bytes)
        .sum();
    assert_eq!(claimed, du::allocated(&mine));
    let codex_item = rs.items.iter().find(|i| i.path == codex).unwrap();
    assert_eq!(codex_item.measure.allocated_bytes, du::allocated(&[&codex]));

    // Planned, then the dir they lie in becomes a git store before the deletion: it is Codex's
    // item now, so none of them goes (the re-check just before deleting finds it).
    for m in &mine {
        tree::set_tree_mtime(m, tree::days_ago(3));
    }
    let now = SystemTime::now();
    let inv = scan(std::slice::from_ref(&root), &cat, now);
    let policy = Policy {
        older_than: Duration::from_secs(3600),
        producers: vec!["local-trace".to_owned()],
        protected: vec![],
    };
    let p = plan(&inv, &cat, &policy, &SystemProbe::new(), now);
    assert_eq!(p.items.len(), 22, "{p:#?}");
    let store = t.join("tmp.Q1w2E3r4T5");
    tree::write_file(&store.join("index"), 100);
    fs::create_dir(store.join("objects")).unwrap();
    let report = execute(&p, &cat, &SystemProbe::new(), now, &mut |_| {});
    assert_eq!(report.freed_bytes, 0, "{report:#?}");
    assert!(mine.iter().all(|m| m.exists()));

    // Two unsigned rules still may not nest: the outer would hide the inner's items.
    let clash = rule.replace("local-trace", "local-trace-2")
        + r#"
[[producer]]
id = "local-tmpdirs"
name = "mktemp dirs"
root = "temp"
item = "tmp.*"
kind = "leak"
reclaim = "manual"
min_age_secs = 3600
examples = ["tmp.Zz9Yy8Xx7W"]
"#;
    let err = Catalogue::with_extra(&clash, Path::new("config.toml")).unwrap_err();
    assert!(err.to_string().contains("claimed by both"), "{err}");
}

/// A `contains` or `lacks` entry may end in one `/` (the entry is a dir); any other path that is
/// not plain names is refused, naming the entry.
#[test]
fn a_signature_entry_may_name_a_dir_and_nothing_but_plain_names() {
    let rule = |contains: &str| {
        format!(
            r#"
[[producer]]
id = "local-store"
name = "Stores"
root = "temp"
item = "store.*"
contains = [{contains}]
kind = "leak"
reclaim = "manual"
min_age_secs = 3600
"#
        )
    };
    for ok in [
        r#""objects/""#,
        r#""index", "objects/pack/""#,
        r#""model/done""#,
    ] {
        Catalogue::with_extra(&rule(ok), Path::new("config.toml"))
            .unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
    for bad in ["/objects", "objects//", "a/../b", "/", "./x"] {
        let err = Catalogue::with_extra(&rule(&format!("{bad:?}")), Path::new("config.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!("{bad:?}")) && err.contains("plain names"),
            "{bad}: {err}"
        );
    }
}
