//! A producer's own dirs are not unattributed entries (`scan` listed
//! `Library/Caches/Homebrew` and `C/clang` as UNATTRIBUTED 8 KiB entries, and `explain` said
//! `com.apple.MetalPerformanceShadersGraph/mpsgraph-cache` was mpsgraph-scratch's while `scan`
//! called its parent unattributed). The literal top-level dir of a deeper item glob is the
//! producer's structure: attributed to it, never reclaimed; scan, explain and the plan agree.

#![allow(clippy::unwrap_used)]

use std::fs;
use std::time::{Duration, SystemTime};

use cachewatch_core::explain::Verdict;
use cachewatch_core::process::SystemProbe;
use cachewatch_core::reclaim::{plan, KeepReason, Policy};
use cachewatch_core::scan::scan;
use cachewatch_core::{Catalogue, Root, RootKind};
use cachewatch_testkit::{du, tree};

#[test]
fn structure_dirs_are_their_producers_and_never_unattributed() {
    let dir = tempfile::tempdir().unwrap();
    let (t, lc, c) = (
        dir.path().join("T"),
        dir.path().join("LC"),
        dir.path().join("C"),
    );
    for d in [&t, &lc, &c] {
        fs::create_dir(d).unwrap();
    }
    let roots = vec![
        Root::new(RootKind::Temp, &t).unwrap(),
        Root::new(RootKind::LibraryCaches, &lc).unwrap(),
        Root::new(RootKind::Cache, &c).unwrap(),
    ];
    let (t, lc, c) = (
        &roots[0].canonical,
        &roots[1].canonical,
        &roots[2].canonical,
    );
    let mps = t.join("com.apple.MetalPerformanceShadersGraph");
    tree::write_file(&mps.join("mpsgraph-4242-1-abcdef/graph.bin"), 20_000);
    tree::write_file(&mps.join("mpsgraph-cache/index.db"), 9_000);
    tree::write_file(
        &lc.join("Homebrew/downloads/0123abcd--wget-1.24.5.arm64_sonoma.bottle.tar.gz"),
        30_000,
    );
    tree::write_file(&lc.join("Homebrew/api/formula.jws.json"), 5_000);
    tree::write_file(
        &c.join("clang/ModuleCache/2AB3CD4EF5G6H/Foundation-1A2B.pcm"),
        7_000,
    );
    tree::write_file(&t.join("someone-elses.tmp"), 1_000);

    let cat = Catalogue::builtin();
    let now = SystemTime::now() + Duration::from_secs(40 * 86_400);
    let inv = scan(&roots, &cat, now);
    for rs in &inv.roots {
        assert_eq!(
            rs.total.allocated_bytes,
            du::allocated(&[&rs.root.canonical])
        );
    }
    let unattributed: Vec<_> = inv
        .unattributed()
        .into_iter()
        .map(|(_, i)| i.path.clone())
        .collect();
    assert_eq!(unattributed, [t.join("someone-elses.tmp")]);

    // The dirs with more than claimed items in them are their producer's items...
    for (path, producer) in [
        (&mps, "mpsgraph-scratch"),
        (&lc.join("Homebrew"), "homebrew-cache"),
        (&c.join("clang"), "clang-modulecache"),
    ] {
        let (_, item) = inv.find_item(path).unwrap_or_else(|| panic!("{path:?}"));
        assert_eq!(item.producer.as_deref(), Some(producer), "{path:?}");
        // ...and explain says the same of what lies in them outside the items.
        let inside = match producer {
            "mpsgraph-scratch" => mps.join("mpsgraph-cache/index.db"),
            "homebrew-cache" => lc.join("Homebrew/downloads"),
            _ => c.join("clang/ModuleCache"),
        };
        let e = cat.explain(&roots, &inside);
        assert!(
            matches!(&e.verdict, Verdict::Structure { producer: p, .. } if p == producer),
            "{inside:?}: {e:?}"
        );
    }
    // Named at 0 s, a plan keeps every structure dir.
    let policy = Policy {
        older_than: Duration::ZERO,
        producers: ["mpsgraph-scratch", "homebrew-cache", "clang-modulecache"]
            .map(str::to_owned)
            .to_vec(),
        protected: vec![],
    };
    let p = plan(&inv, &cat, &policy, &SystemProbe::new(), now);
    for path in [&mps, &lc.join("Homebrew"), &c.join("clang")] {
        let k = p.kept.iter().find(|k| &k.path == path).unwrap();
        assert_eq!(k.reason, KeepReason::Structure, "{path:?}");
        assert!(p.items.iter().all(|i| &i.path != path));
    }
}
