//! The documentation's `[[auto_reclaim]]` samples (README.md, docs/usage.md, docs/fleet.md) are
//! real configs: each loads, names only catalogue ids and has a trigger (so a user who copies one
//! gets what the page says).

#![allow(clippy::unwrap_used)]

use cachewatch::config;
use cachewatch_core::catalogue::Catalogue;

/// The ```toml blocks of the pages that show configs, those that hold `[[auto_reclaim]]`.
fn auto_reclaim_samples() -> Vec<String> {
    let pages = ["README.md", "docs/usage.md", "docs/fleet.md"].map(|page| {
        let path = format!("{}/../../{page}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    });
    let mut out = Vec::new();
    let mut block: Option<String> = None;
    for line in pages.iter().flat_map(|p| p.lines()) {
        match (&mut block, line.trim()) {
            (None, "```toml") => block = Some(String::new()),
            (Some(b), "```") => {
                if b.contains("[[auto_reclaim]]") {
                    out.push(b.clone());
                }
                block = None;
            }
            (Some(b), _) => {
                b.push_str(line);
                b.push('\n');
            }
            (None, _) => {}
        }
    }
    out
}

#[test]
fn every_auto_reclaim_sample_in_the_readme_loads_with_the_builtin_catalogue() {
    let samples = auto_reclaim_samples();
    assert!(samples.len() >= 3, "found {} samples", samples.len());
    let dir = tempfile::tempdir().unwrap();
    for (i, text) in samples.iter().enumerate() {
        let path = dir.path().join(format!("sample-{i}.toml"));
        std::fs::write(&path, text).unwrap();
        let loaded = config::load(&path).unwrap_or_else(|e| panic!("sample {i}: {e}\n{text}"));
        let rules = loaded
            .auto_reclaim(&Catalogue::builtin())
            .unwrap_or_else(|e| panic!("sample {i}: {e}\n{text}"));
        assert_eq!(rules.len(), text.matches("[[auto_reclaim]]").count());
    }
}
