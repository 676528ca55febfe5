//! The producers added in 2026 (docs/producers.md) on real trees: each producer's real layout is
//! built in a temp dir under the root kind its rule names, scanned with the built-in catalogue, and
//! every item's attribution and every producer's totals are checked against `du` and hand counts.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use cachewatch_core::inventory::Inventory;
use cachewatch_core::scan::scan;
use cachewatch_core::{Catalogue, Root, RootKind};

/// A tree being built under one root: what was written where, and which producer each top entry
/// (or claimed entry) is expected to belong to.
struct Tree {
    root: PathBuf,
    /// Files written (absolute paths).
    files: Vec<PathBuf>,
    /// Item path (relative) -> expected producer (`None`: unattributed).
    expect: BTreeMap<PathBuf, Option<&'static str>>,
}

impl Tree {
    fn new(base: &Path, name: &str) -> Tree {
        let root = base.join(name);
        fs::create_dir_all(&root).unwrap();
        Tree {
            root: root.canonicalize().unwrap(),
            files: Vec::new(),
            expect: BTreeMap::new(),
        }
    }

    /// A file of `len` bytes (contents vary with the path so nothing dedups).
    fn file(&mut self, rel: &str, len: usize) -> &mut Tree {
        let p = self.root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        let seed = rel
            .bytes()
            .fold(7u8, |a, b| a.wrapping_mul(31).wrapping_add(b));
        let data: Vec<u8> = (0..len).map(|i| seed.wrapping_add(i as u8)).collect();
        fs::write(&p, data).unwrap();
        self.files.push(p);
        self
    }

    /// A sparse file of apparent size `len` with one 64 KiB written region at its start.
    fn sparse(&mut self, rel: &str, len: u64) -> &mut Tree {
        self.file(rel, 64 << 10);
        let f = fs::OpenOptions::new()
            .write(true)
            .open(self.root.join(rel))
            .unwrap();
        f.set_len(len).unwrap();
        self
    }

    fn item(&mut self, rel: &str, producer: Option<&'static str>) -> &mut Tree {
        self.expect.insert(PathBuf::from(rel), producer);
        self
    }

    /// Files written inside `item` (relative), the item itself when it is a file.
    fn files_in(&self, item: &Path) -> u64 {
        let item = self.root.join(item);
        self.files.iter().filter(|f| f.starts_with(&item)).count() as u64
    }
}

/// `du -s -x FLAG PATH` in bytes.
fn du(flag: &str, path: &Path) -> u64 {
    cachewatch_testkit::du::total(flag, &[path])
}

/// Scans `trees` (one root each, of the given kind) with the built-in catalogue and checks every
/// item and every producer's totals against `du` and the trees' hand counts.
fn check(trees: &[(RootKind, &Tree)]) -> Inventory {
    let roots: Vec<Root> = trees
        .iter()
        .map(|(kind, t)| Root::new(*kind, &t.root).unwrap())
        .collect();
    let inv = scan(&roots, &Catalogue::builtin(), SystemTime::now());
    // Per producer: (items, allocated, apparent, files) from du and the builders.
    let mut want: BTreeMap<String, (u64, u64, u64, u64)> = BTreeMap::new();
    for ((_, tree), rs) in trees.iter().zip(&inv.roots) {
        assert!(rs.issues.is_empty(), "{:?}", rs.issues);
        assert_eq!(
            rs.total.allocated_bytes,
            du("-B1", &tree.root),
            "{:?}",
            tree.root
        );
        assert_eq!(
            rs.total.apparent_bytes,
            du("-b", &tree.root),
            "{:?}",
            tree.root
        );
        for (rel, producer) in &tree.expect {
            let path = tree.root.join(rel);
            let item = rs
                .items
                .iter()
                .find(|i| i.path == path)
                .unwrap_or_else(|| panic!("no item {path:?} in {:#?}", rs.items));
            assert_eq!(item.producer.as_deref(), *producer, "{rel:?}");
            if let Some(id) = producer {
                let (alloc, apparent) = (du("-B1", &path), du("-b", &path));
                assert_eq!(item.measure.allocated_bytes, alloc, "{rel:?}");
                assert_eq!(item.measure.apparent_bytes, apparent, "{rel:?}");
                assert_eq!(item.measure.files, tree.files_in(rel), "{rel:?}");
                let w = want.entry((*id).to_owned()).or_default();
                *w = (
                    w.0 + 1,
                    w.1 + alloc,
                    w.2 + apparent,
                    w.3 + tree.files_in(rel),
                );
            }
        }
        // Nothing claimed that the tree did not expect, and no unattributed entry it did not
        // list (a producer's own dir, e.g. `node-compile-cache`, is no unattributed entry).
        for item in &rs.items {
            let rel = item.path.strip_prefix(&tree.root).unwrap();
            assert!(
                tree.expect.contains_key(rel),
                "unexpected item {rel:?} of {:?}",
                item.producer
            );
        }
    }
    let got: BTreeMap<String, (u64, u64, u64, u64)> = inv
        .producers()
        .into_iter()
        .map(|p| {
            (
                p.id,
                (
                    p.items,
                    p.measure.allocated_bytes,
                    p.measure.apparent_bytes,
                    p.measure.files,
                ),
            )
        })
        .collect();
    assert_eq!(got, want);
    inv
}

#[test]
fn temp_dir_producers_of_2026_are_attributed_with_du_totals() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = Tree::new(dir.path(), "T");
    // Node compile cache: one dir per Node version, entries keyed by content hash, plus a temp
    // file leaked by a failed write (nodejs/node#65473).
    t.file(
        "node-compile-cache/v26.0.0-arm64-904a5e71-501/0a1b2c3d",
        40_000,
    )
    .file(
        "node-compile-cache/v26.0.0-arm64-904a5e71-501/1b2c3d4e",
        9_000,
    )
    .file(
        "node-compile-cache/v26.0.0-arm64-904a5e71-501/0a1b2c3d.Ab12Cd",
        3_000,
    )
    .file(
        "node-compile-cache/v22.11.0-x64-1a2b3c4d-501/9f8e7d6c",
        12_345,
    )
    .item(
        "node-compile-cache/v26.0.0-arm64-904a5e71-501",
        Some("node-compile-cache"),
    )
    .item(
        "node-compile-cache/v22.11.0-x64-1a2b3c4d-501",
        Some("node-compile-cache"),
    );
    // The `node-compile-cache` dir itself is the producer's structure: no item of its own.
    // tsx: a flat dir of transformed modules, many small entries.
    for i in 0..300 {
        t.file(&format!("tsx-501/{:040x}.mjs", i * 7919), 500 + i * 13);
    }
    t.item("tsx-501", Some("tsx-transform-cache"));
    // clangd preambles and a half-written one.
    t.file("preamble-3f2a1b.pch", 200_000)
        .file("preamble-a0b1c2-1a2b3c4d.pch.tmp", 50_000)
        .item("preamble-3f2a1b.pch", Some("clangd-preamble-pch"))
        .item(
            "preamble-a0b1c2-1a2b3c4d.pch.tmp",
            Some("clangd-preamble-pch"),
        );
    // Nuitka onefile: a whole extracted app (onefile_<pid>_<secs>_<usecs>).
    for (i, f) in [
        "python3.so",
        "lib/_ssl.so",
        "lib/_json.so",
        "mcp_server.bin",
        "certifi/cacert.pem",
    ]
    .iter()
    .enumerate()
    {
        t.file(
            &format!("onefile_4242_1718000000_123456/{f}"),
            30_000 + i * 1_111,
        );
    }
    t.item("onefile_4242_1718000000_123456", Some("nuitka-onefile"));
    // PyInstaller onefile: _MEIxxxxxx.
    t.file("_MEIC8i0x0/Python", 120_000)
        .file("_MEIC8i0x0/base_library.zip", 60_000)
        .file("_MEIC8i0x0/lib-dynload/_ssl.cpython-312-darwin.so", 25_000)
        .item("_MEIC8i0x0", Some("pyinstaller-onefile"));
    // sqlite-jdbc: a lib with its .lck (killed JVM) and one without.
    let uuid = "0f8c1d2e-3a4b-4c5d-8e9f-a0b1c2d3e4f5";
    let lib = format!("sqlite-3.45.1.0-{uuid}-libsqlitejdbc.dylib");
    let lck = format!("{lib}.lck");
    let orphan = "sqlite-3.45.1.0-a1b2c3d4-e5f6-4789-abcd-ef0123456789-libsqlitejdbc.dylib";
    t.file(&lib, 700_000)
        .file(&lck, 0)
        .file(orphan, 690_000)
        .item(&lib, Some("sqlite-jdbc-native"))
        .item(&lck, Some("sqlite-jdbc-native"))
        .item(orphan, Some("sqlite-jdbc-native"));
    // Tuist: an analytics archive and a cache-warm scratch dir.
    t.file(
        "tuist-analytics-archive-0F8C1D2E-3A4B-4C5D-8E9F-A0B1C2D3E4F5/result.aar",
        600_000,
    )
    .file(
        "CacheWarm-1a2b3c/derived-data/Build/Products/App.framework/App",
        80_000,
    )
    .file("CacheWarm-1a2b3c/derived-data/info.plist", 900)
    .item(
        "tuist-analytics-archive-0F8C1D2E-3A4B-4C5D-8E9F-A0B1C2D3E4F5",
        Some("tuist-temp"),
    )
    .item("CacheWarm-1a2b3c", Some("tuist-temp"));
    // Playwright: an artifacts dir and a dev profile.
    t.file("playwright-artifacts-AbC123/trace.zip", 300_000)
        .file("playwright-artifacts-AbC123/video.webm", 150_000)
        .file(
            "playwright_chromiumdev_profile-x9Y8z7/Default/Cookies",
            20_480,
        )
        .file("playwright_chromiumdev_profile-x9Y8z7/Local State", 2_000)
        .item("playwright-artifacts-AbC123", Some("playwright-artifacts"))
        .item(
            "playwright_chromiumdev_profile-x9Y8z7",
            Some("playwright-artifacts"),
        );
    // Ollama legacy runners.
    t.file(
        "ollama1234567890/runners/metal/ollama_llama_server",
        250_000,
    )
    .file(
        "ollama1234567890/runners/cpu_avx2/ollama_llama_server",
        240_000,
    )
    .item("ollama1234567890", Some("ollama-runners"));
    // Look-alikes no rule may claim.
    t.file("tsx-alice/x.mjs", 100)
        .file("onefile_abc_1718000000/x", 100)
        .file("preamble.pch", 100)
        .file("_MEI", 10)
        .file("ollama-models/blob", 100)
        .file("playwright-artifacts/x", 100)
        .item("tsx-alice", None)
        .item("onefile_abc_1718000000", None)
        .item("preamble.pch", None)
        .item("_MEI", None)
        .item("ollama-models", None)
        .item("playwright-artifacts", None);
    let inv = check(&[(RootKind::Temp, &t)]);
    // The Nuitka item carries its owner pid and start time.
    let (_, nuitka) = inv
        .items()
        .find(|(_, i)| i.producer.as_deref() == Some("nuitka-onefile"))
        .unwrap();
    assert_eq!(nuitka.captures.pid, Some(4242));
    assert_eq!(
        nuitka.captures.ts,
        Some(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_718_000_000))
    );
}

#[test]
fn cache_container_clone_and_other_root_producers_are_attributed_with_du_totals() {
    let dir = tempfile::tempdir().unwrap();
    // Deno, in ~/Library/Caches and in the XDG cache dir.
    let mut lc = Tree::new(dir.path(), "LC");
    let mut xdg = Tree::new(dir.path(), "XDG");
    for t in [&mut lc, &mut xdg] {
        t.file("deno/v8_code_cache_v2", 180_000)
            .file("deno/v8_code_cache_v2-wal", 32_000)
            .file("deno/dep_analysis_cache_v2", 40_000)
            .file("deno/npm/registry.npmjs.org/chalk/5.3.0/index.js", 6_000)
            .file("deno/remote/https/deno.land/abc123", 9_000);
        // The `deno` dir itself is the producer's structure: no item of its own.
    }
    for rel in [
        "deno/v8_code_cache_v2",
        "deno/v8_code_cache_v2-wal",
        "deno/dep_analysis_cache_v2",
        "deno/npm",
        "deno/remote",
    ] {
        lc.item(rel, Some("deno-dir"));
        xdg.item(rel, Some("deno-dir-xdg"));
    }
    // Nextcloud's File Provider tmp: chunk folders of numbered 104,857,600-byte files (sparse here).
    let mut nc = Tree::new(
        dir.path(),
        "Containers/com.nextcloud.desktopclient.FileProviderExt/Data/tmp",
    );
    nc.sparse("__fpfsdocID(123456)/0", 104_857_600)
        .sparse("__fpfsdocID(123456)/1", 104_857_600)
        .sparse("__fpfsdocID(123457)/0", 104_857_600)
        .item("__fpfsdocID(123456)", Some("nextcloud-fileprovider-chunks"))
        .item("__fpfsdocID(123457)", Some("nextcloud-fileprovider-chunks"));
    // AppBox's tmp: one UUID dir per signing session.
    let mut ab = Tree::new(
        dir.path(),
        "Containers/com.developerinsider.AppBox/Data/tmp",
    );
    ab.file(
        "0F8C1D2E-3A4B-4C5D-8E9F-A0B1C2D3E4F5/Payload/App.app/App",
        400_000,
    )
    .file("0F8C1D2E-3A4B-4C5D-8E9F-A0B1C2D3E4F5/App.ipa", 350_000)
    .file("notes.txt", 10)
    .item("0F8C1D2E-3A4B-4C5D-8E9F-A0B1C2D3E4F5", Some("appbox-tmp"))
    .item("notes.txt", None);
    // X: two Chrome clones and a Codex one, each a whole app bundle.
    let mut x = Tree::new(dir.path(), "X");
    for (clone, app, framework) in [
        (
            "com.google.Chrome.code_sign_clone/code_sign_clone.tKdILk",
            "Google Chrome.app",
            489_946,
        ),
        (
            "com.google.Chrome.code_sign_clone/code_sign_clone.Qw12Er",
            "Google Chrome.app",
            489_946,
        ),
        (
            "com.openai.codex.code_sign_clone/code_sign_clone.Ab12Cd",
            "Codex.app",
            300_000,
        ),
    ] {
        x.file(&format!("{clone}/{app}/Contents/Info.plist"), 3_000)
            .file(&format!("{clone}/{app}/Contents/MacOS/main"), 150_000)
            .file(
                &format!("{clone}/{app}/Contents/Frameworks/App Framework.framework/Versions/150.0/App Framework"),
                framework,
            )
            .item(clone, Some("chromium-code-sign-clone"));
    }
    x.item("com.google.Chrome.code_sign_clone", None)
        .item("com.openai.codex.code_sign_clone", None);
    // /private/tmp: Claude Code session dirs under claude-<uid>.
    let mut other = Tree::new(dir.path(), "private-tmp");
    other
        .file(
            "claude-502/0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d/tasks/b1.output",
            900_000,
        )
        .file(
            "claude-502/0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d/tasks/b2.output",
            40_000,
        )
        .file(
            "claude-502/-Users-alice-src-app/tool-results/r1.txt",
            70_000,
        )
        .file("launchd-123.sock-lookalike", 10)
        .item(
            "claude-502/0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d",
            Some("claude-code-tmp"),
        )
        .item("claude-502/-Users-alice-src-app", Some("claude-code-tmp"))
        .item("claude-502", None)
        .item("launchd-123.sock-lookalike", None);
    let inv = check(&[
        (RootKind::LibraryCaches, &lc),
        (RootKind::Cache, &xdg),
        (RootKind::ContainerTemp, &nc),
        (RootKind::ContainerTemp, &ab),
        (RootKind::CodeSignClones, &x),
        (RootKind::Other, &other),
    ]);
    // Bundle ids from the clone dirs' parents.
    let mut bundles: Vec<&str> = inv
        .items()
        .filter(|(_, i)| i.producer.as_deref() == Some("chromium-code-sign-clone"))
        .map(|(_, i)| i.captures.bundle.as_deref().unwrap())
        .collect();
    bundles.sort_unstable();
    assert_eq!(
        bundles,
        ["com.google.Chrome", "com.google.Chrome", "com.openai.codex"]
    );
    // Nextcloud chunks: apparent bytes are the chunks' full size, as the report gives them.
    let nc_total = inv
        .producers()
        .into_iter()
        .find(|p| p.id == "nextcloud-fileprovider-chunks")
        .unwrap();
    assert!(nc_total.measure.apparent_bytes >= 3 * 104_857_600);
}

#[test]
fn without_shared_blocks_freeable_equals_allocated_for_every_item() {
    // On a file system that cannot share blocks (ext4, tmpfs), deleting frees what du counts.
    let dir = tempfile::tempdir().unwrap();
    if cachewatch_core::platform::can_share_blocks(dir.path()) {
        eprintln!("skipped: the temp dir's file system can share blocks");
        return;
    }
    let mut x = Tree::new(dir.path(), "X");
    x.file("com.google.Chrome.code_sign_clone/code_sign_clone.tKdILk/Google Chrome.app/Contents/MacOS/Google Chrome", 123_456)
        .item("com.google.Chrome.code_sign_clone/code_sign_clone.tKdILk", Some("chromium-code-sign-clone"))
        .item("com.google.Chrome.code_sign_clone", None);
    let inv = check(&[(RootKind::CodeSignClones, &x)]);
    for (_, item) in inv.items() {
        assert_eq!(item.measure.freeable_bytes, item.measure.allocated_bytes);
    }
    let rs = &inv.roots[0];
    assert_eq!(rs.total.freeable_bytes, rs.total.allocated_bytes);
}
