//! Regression: with one root inside another (a cache root and an app's dir in it added as a root
//! of its own, `cache=C` and `cache=C/com.foo`), an item under the inner root was an item of both
//! roots, so per-producer sums counted it twice (3 Metal archives and their bytes twice instead of
//! 2) while each root's total was right. An item now belongs to the innermost root holding it;
//! each root's total stays `du -s -x` of it.
//!
//! Expected figures: a hand count of what the test built, sizes from `du`.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use cachewatch_core::process::SystemProbe;
use cachewatch_core::reclaim::{plan, Policy};
use cachewatch_core::roots::mark_nested;
use cachewatch_core::scan::{scan, scan_root_each, ScanProgress, Tally};
use cachewatch_core::{Catalogue, Root, RootKind};
use cachewatch_testkit::du;
use cachewatch_testkit::tree::{days_ago, set_tree_mtime, write_file};

/// The tree: `outer/com.apple.gpuarchiver/gpuarchiver-out` (12000 bytes), and the inner root
/// `outer/com.foo` holding `com.apple.gpuarchiver/gpuarchiver-in` (30000 bytes) and `other/c`
/// (3000 bytes, unattributed). Returns (outer root dir, inner root dir, the two archives).
fn build(base: &Path) -> (PathBuf, PathBuf, [PathBuf; 2]) {
    let outer = base.join("outer");
    let inner = outer.join("com.foo");
    let a_out = outer.join("com.apple.gpuarchiver/gpuarchiver-out");
    let a_in = inner.join("com.apple.gpuarchiver/gpuarchiver-in");
    write_file(&a_out.join("a.bin"), 12_000);
    write_file(&a_in.join("b.bin"), 30_000);
    write_file(&inner.join("other/c.bin"), 3_000);
    set_tree_mtime(&outer, days_ago(10));
    (outer, inner, [a_out, a_in])
}

fn roots(outer: &Path, inner: &Path) -> Vec<Root> {
    vec![
        Root::new(RootKind::Cache, outer).unwrap(),
        Root::new(RootKind::Cache, inner).unwrap(),
    ]
}

#[test]
fn an_item_under_a_nested_root_counts_once_in_producer_sums() {
    let dir = tempfile::tempdir().unwrap();
    let (outer, inner, archives) = build(dir.path());
    let inv = scan(
        &roots(&outer, &inner),
        &Catalogue::builtin(),
        SystemTime::now(),
    );

    // Each root's own total is still `du -s -x` of it.
    assert_eq!(inv.roots[0].total.allocated_bytes, du::allocated(&[&outer]));
    assert_eq!(inv.roots[1].total.allocated_bytes, du::allocated(&[&inner]));

    // Hand count: two archives, each in one root only (the innermost one).
    let producers = inv.producers();
    assert_eq!(producers.len(), 1, "{producers:?}");
    assert_eq!(producers[0].id, "metal-gpuarchiver");
    assert_eq!(producers[0].items, 2);
    assert_eq!(
        producers[0].measure.allocated_bytes,
        du::allocated(&archives)
    );
    assert_eq!(producers[0].measure.apparent_bytes, du::apparent(&archives));
    let of_root = |i: usize| -> Vec<PathBuf> {
        inv.roots[i]
            .items
            .iter()
            .filter(|it| it.producer.is_some())
            .map(|it| it.path.clone())
            .collect()
    };
    assert_eq!(of_root(0), [archives[0].clone()]);
    assert_eq!(of_root(1), [archives[1].clone()]);

    // The outer root's top-level entry `com.foo` is the inner root: not listed as unattributed
    // (the inner root lists `other`), though its bytes stay in the outer root's total.
    let unattributed: Vec<PathBuf> = inv
        .unattributed()
        .iter()
        .map(|(_, i)| i.path.clone())
        .collect();
    assert_eq!(unattributed, [inner.join("other")]);
    // Reclaim plans each archive once.
    let policy = Policy {
        older_than: Duration::from_secs(3600),
        producers: vec!["metal-gpuarchiver".to_owned()],
        protected: vec![],
    };
    let p = plan(
        &inv,
        &Catalogue::builtin(),
        &policy,
        &SystemProbe::snapshot(),
        SystemTime::now(),
    );
    let mut planned: Vec<PathBuf> = p.items.iter().map(|i| i.path.clone()).collect();
    planned.sort();
    assert_eq!(planned, archives);
}

/// The streaming path of `cachewatch scan`: each root through `scan_root_each` and a `Tally`.
#[test]
fn streamed_tally_of_nested_roots_counts_each_item_once() {
    let dir = tempfile::tempdir().unwrap();
    let (outer, inner, archives) = build(dir.path());
    let mut roots = roots(&outer, &inner);
    mark_nested(&mut roots);
    assert_eq!(roots[0].nested, [PathBuf::from("com.foo")]);
    assert!(roots[1].nested.is_empty());
    let catalogue = Catalogue::builtin();
    let mut tally = Tally::new(10);
    let progress = ScanProgress::new();
    let totals: Vec<u64> = roots
        .iter()
        .map(|r| {
            scan_root_each(r, &catalogue, &progress, |i| tally.add(r, &i))
                .total
                .allocated_bytes
        })
        .collect();
    assert_eq!(totals, [du::allocated(&[&outer]), du::allocated(&[&inner])]);
    let p = tally.producers();
    assert_eq!((p.len(), p[0].items), (1, 2), "{p:?}");
    assert_eq!(p[0].measure.allocated_bytes, du::allocated(&archives));
    let u: Vec<PathBuf> = tally.unattributed().into_iter().map(|u| u.path).collect();
    assert_eq!(u, [inner.join("other")]);
}
