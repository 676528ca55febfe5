//! `container-temp` roots on a fake containers dir: discovery, skipped containers, the temp rules,
//! the container's bundle id on every item, and reclaim inside a container.
#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cachewatch_core::explain::Verdict;
use cachewatch_core::process::SystemProbe;
use cachewatch_core::reclaim::{execute, plan, Policy};
use cachewatch_core::roots::{discover_container_temps, Resolved, RootError};
use cachewatch_core::scan::{measure_item, scan};
use cachewatch_core::{Catalogue, RootKind};

const DAY: Duration = Duration::from_secs(24 * 3600);

fn dead_pid() -> u32 {
    let mut c = Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

fn write(p: &Path, len: usize) {
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, vec![3u8; len]).unwrap();
}

fn set_tree_mtime(p: &Path, t: SystemTime) {
    if p.is_dir() {
        for e in fs::read_dir(p).unwrap() {
            set_tree_mtime(&e.unwrap().path(), t);
        }
    }
    fs::File::open(p).unwrap().set_modified(t).unwrap();
}

fn du(p: &Path) -> u64 {
    cachewatch_testkit::du::allocated(&[p])
}

/// A containers dir: two sandboxed apps with a temp dir, one without, one whose `Data` is a file,
/// one whose `Data/tmp` is a symlink out of its container, a stray file and a symlinked entry.
struct Fixture {
    _dir: tempfile::TempDir,
    containers: PathBuf,
    bundle: PathBuf,
    note: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let containers = dir.path().join("Containers");
    let outside = dir.path().join("outside");
    fs::create_dir_all(&outside).unwrap();
    let ts = (SystemTime::now() - 2 * DAY)
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let go = containers.join("com.example.GoHost/Data/tmp");
    let bundle = go.join(format!("model_{}_0_{ts}.mlmodelc", dead_pid()));
    write(&bundle.join("coremldata.bin"), 30_000);
    write(&bundle.join("weights/weight.bin"), 70_000);
    set_tree_mtime(&bundle, SystemTime::now() - 2 * DAY);
    let note = containers.join("com.example.Notes/Data/tmp/draft.txt");
    write(&note, 1234);
    fs::create_dir_all(containers.join("com.example.NoTmp/Data")).unwrap();
    write(&containers.join("com.example.Broken/Data"), 10);
    fs::create_dir_all(containers.join("com.example.Escape/Data")).unwrap();
    std::os::unix::fs::symlink(&outside, containers.join("com.example.Escape/Data/tmp")).unwrap();
    write(&containers.join("stray.plist"), 5);
    std::os::unix::fs::symlink(
        containers.join("com.example.GoHost"),
        containers.join("com.example.Alias"),
    )
    .unwrap();
    Fixture {
        _dir: dir,
        containers,
        bundle,
        note,
    }
}

#[test]
fn container_temp_dirs_are_found_and_unusable_ones_reported_by_path() {
    let f = fixture();
    let found = discover_container_temps(&f.containers).unwrap();
    let paths: Vec<PathBuf> = found.roots.iter().map(|r| r.path.clone()).collect();
    assert_eq!(
        paths,
        vec![
            f.containers.join("com.example.GoHost/Data/tmp"),
            f.containers.join("com.example.Notes/Data/tmp"),
        ]
    );
    assert!(found
        .roots
        .iter()
        .all(|r| r.kind == RootKind::ContainerTemp));
    let bundles: Vec<Option<String>> = found.roots.iter().map(|r| r.container_bundle()).collect();
    assert_eq!(
        bundles,
        vec![
            Some("com.example.GoHost".to_owned()),
            Some("com.example.Notes".to_owned())
        ]
    );
    assert_eq!(found.skipped.len(), 2, "{:?}", found.skipped);
    let broken = f.containers.join("com.example.Broken/Data/tmp");
    assert!(found.skipped.iter().any(|e| matches!(e,
        RootError::Missing { path, .. } if *path == broken)));
    let escape = f.containers.join("com.example.Escape/Data/tmp");
    assert!(found.skipped.iter().any(|e| matches!(e,
        RootError::OutsideContainer { path, .. } if *path == escape)));
    assert!(found
        .skipped
        .iter()
        .all(|e| e.to_string().contains("com.example.")));

    let arg = format!("container-temp={}", f.containers.display());
    let again = Resolved::parse_arg(&arg).unwrap();
    assert_eq!(again.roots, found.roots);
    let missing = Resolved::parse_arg("container-temp=/no/such/Containers");
    assert!(
        matches!(
            missing,
            Err(RootError::Missing {
                kind: RootKind::ContainerTemp,
                ..
            })
        ),
        "{missing:?}"
    );
}

/// A sandboxed host's `NSTemporaryDirectory()` is its container's `Data/tmp`, which
/// nothing looked at, so its KataGo bundles stayed forever.
#[test]
fn a_sandboxed_hosts_katago_bundles_are_attributed_with_its_bundle_id_and_reclaimed() {
    let f = fixture();
    let roots = discover_container_temps(&f.containers).unwrap().roots;
    let cat = Catalogue::builtin();
    let now = SystemTime::now();
    let inv = scan(&roots, &cat, now);
    for r in &inv.roots {
        assert_eq!(
            r.total.allocated_bytes,
            du(&r.root.canonical),
            "{:?}",
            r.root
        );
        let bundle = r.root.container_bundle();
        assert!(r.items.iter().all(|i| i.captures.bundle == bundle), "{r:?}");
    }
    let go = &inv.roots[0];
    assert_eq!(go.items.len(), 1);
    let item = &go.items[0];
    assert_eq!(item.path, fs::canonicalize(&f.bundle).unwrap());
    assert_eq!(item.producer.as_deref(), Some("katago-coreml"));
    assert_eq!(item.captures.bundle.as_deref(), Some("com.example.GoHost"));
    assert!(item.captures.pid.is_some());
    assert_eq!(
        inv.roots[1].items[0].producer, None,
        "draft.txt is unattributed"
    );

    // The watcher's path: one item re-measured keeps the bundle id too.
    let again = measure_item(&roots[0], &cat, &f.bundle.join("weights"))
        .unwrap()
        .unwrap();
    assert_eq!(again.captures.bundle.as_deref(), Some("com.example.GoHost"));
    let e = cat.explain(&roots, &f.bundle.join("weights/weight.bin"));
    match e.verdict {
        Verdict::Claimed {
            producer, captures, ..
        } => {
            assert_eq!(producer, "katago-coreml");
            assert_eq!(captures.bundle.as_deref(), Some("com.example.GoHost"));
        }
        other => panic!("{other:?}"),
    }

    let policy = Policy {
        older_than: DAY,
        producers: vec![],
        protected: vec![],
    };
    let p = plan(&inv, &cat, &policy, &SystemProbe::new(), now);
    assert_eq!(p.items.len(), 1, "{p:#?}");
    let expected = du(&f.bundle);
    assert_eq!(p.planned_bytes, expected);
    let report = execute(&p, &cat, &SystemProbe::new(), now, &mut |_| {});
    assert_eq!(report.freed_bytes, expected, "{report:?}");
    assert!(!f.bundle.exists());
    assert!(f.containers.join("com.example.GoHost/Data/tmp").is_dir());
    assert!(f.note.is_file());
}
