//! The textfile-collector form: a one-shot scan's figures in the Prometheus text exposition format
//! (0.0.4), which node_exporter's `--collector.textfile.directory` reads from `*.prom` files (written
//! with [`crate::safe_file::write_atomically`]).
//!
//! The format is the one node_exporter parses (Prometheus text, not OpenMetrics): no `# EOF` and
//! no `# UNIT` lines, and a counter's `# HELP`/`# TYPE` name its `_total` samples. The families and
//! help texts are those of `/metrics` that a scan without a monitor can fill:
//! `cachewatch_producer_allocated_bytes{producer}`, `cachewatch_producer_items{producer}` and
//! `cachewatch_root_allocated_bytes{kind,path}`. The file's age is node_exporter's own
//! `node_textfile_mtime_seconds`.

use super::encode::{Families, PRODUCER_ALLOCATED, PRODUCER_ITEMS, ROOT_ALLOCATED};

/// A producer's totals over the scanned roots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerFigures {
    /// Catalogue rule id (the `producer` label).
    pub id: String,
    /// Number of items.
    pub items: u64,
    /// Allocated bytes of its items (as `du` counts them).
    pub allocated_bytes: u64,
}

/// A scanned root's totals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootFigures {
    /// The root kind (the `kind` label): `temp`, `cache`, ...
    pub kind: String,
    /// The path as given (the `path` label).
    pub path: String,
    /// Allocated bytes of the whole root.
    pub allocated_bytes: u64,
}

/// What a one-shot scan measured, in the order to print.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanFigures {
    /// One per root.
    pub roots: Vec<RootFigures>,
    /// One per producer with items.
    pub producers: Vec<ProducerFigures>,
}

/// Renders `figures` in the Prometheus text format (0.0.4), as node_exporter's textfile collector
/// reads it.
pub fn render(figures: &ScanFigures) -> String {
    let mut f = Families::default();
    let one = |id: &str| vec![("producer", id.to_owned())];
    f.push(
        PRODUCER_ALLOCATED,
        figures
            .producers
            .iter()
            .map(|p| (one(&p.id), p.allocated_bytes)),
    );
    f.push(
        PRODUCER_ITEMS,
        figures.producers.iter().map(|p| (one(&p.id), p.items)),
    );
    f.push(
        ROOT_ALLOCATED,
        figures.roots.iter().map(|r| {
            (
                vec![("kind", r.kind.clone()), ("path", r.path.clone())],
                r.allocated_bytes,
            )
        }),
    );
    f.prometheus_text()
}
