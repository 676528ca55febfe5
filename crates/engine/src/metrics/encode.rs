//! The metric families, encoded by `prometheus-client` (the Prometheus project's Rust client):
//! OpenMetrics text for `/metrics`, the Prometheus text format (0.0.4) for the textfile form.
//!
//! Every family is one [`Def`] constant (name without unit or `_total`, help, unit, type) and one
//! line in the function that fills it ([`monitor_families`], or the textfile form's). Adding a
//! gauge is a constant and a [`Families::push`].

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

use super::AlertCounts;
use crate::snapshot::Snapshot;

/// A family's description: `name` without its unit suffix (added from `unit`) nor `_total` (added
/// to a counter's samples by the encoder).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Def {
    /// Name without the unit suffix and without `_total`.
    pub name: &'static str,
    /// HELP text.
    pub help: &'static str,
    /// `true`: the unit is bytes (`_bytes` suffix and `# UNIT ... bytes`).
    pub bytes: bool,
    /// `true`: the unit is seconds (`_seconds` suffix and `# UNIT ... seconds`).
    pub seconds: bool,
    /// Gauge or counter.
    pub kind: MetricType,
}

const fn gauge(name: &'static str, bytes: bool, help: &'static str) -> Def {
    Def {
        name,
        help,
        bytes,
        seconds: false,
        kind: MetricType::Gauge,
    }
}

const fn gauge_seconds(name: &'static str, help: &'static str) -> Def {
    Def {
        name,
        help,
        bytes: false,
        seconds: true,
        kind: MetricType::Gauge,
    }
}

const fn counter(name: &'static str, bytes: bool, help: &'static str) -> Def {
    Def {
        name,
        help,
        bytes,
        seconds: false,
        kind: MetricType::Counter,
    }
}

/// `cachewatch_producer_allocated_bytes{producer}`.
pub(crate) const PRODUCER_ALLOCATED: Def = gauge(
    "cachewatch_producer_allocated",
    true,
    "Allocated bytes of a producer's items (as du counts them).",
);
/// `cachewatch_producer_items{producer}`.
pub(crate) const PRODUCER_ITEMS: Def = gauge(
    "cachewatch_producer_items",
    false,
    "Number of a producer's items.",
);
/// `cachewatch_producer_orphan_bytes{producer}`.
pub(crate) const PRODUCER_ORPHAN: Def = gauge(
    "cachewatch_producer_orphan",
    true,
    "Allocated bytes of a producer's items whose owner process (pid in the name) is gone.",
);
/// `cachewatch_producer_reclaimable_bytes{producer}`.
pub(crate) const PRODUCER_RECLAIMABLE: Def = gauge(
    "cachewatch_producer_reclaimable",
    true,
    "Allocated bytes a reclaim at the current age threshold would free.",
);
/// `cachewatch_unattributed_group_bytes{root,shape,writer}` (the 20 largest groups).
pub(crate) const GROUP_BYTES: Def = gauge(
    "cachewatch_unattributed_group",
    true,
    "Allocated bytes of a group of unattributed entries sharing a name shape (an unknown producer), with the name of its writer (empty when unknown); the 20 largest groups.",
);
/// `cachewatch_unattributed_group_items{root,shape,writer}`.
pub(crate) const GROUP_ITEMS: Def = gauge(
    "cachewatch_unattributed_group_items",
    false,
    "Number of entries in a group of unattributed entries sharing a name shape; the 20 largest groups.",
);
/// `cachewatch_root_allocated_bytes{kind,path}`.
pub(crate) const ROOT_ALLOCATED: Def = gauge(
    "cachewatch_root_allocated",
    true,
    "Allocated bytes of a watched root.",
);
/// `cachewatch_root_up{kind,path}`.
pub(crate) const ROOT_UP: Def = gauge(
    "cachewatch_root_up",
    false,
    "1 while a watched root's path leads to a real dir, 0 once it was removed or replaced by a symbolic link or a non-dir (its figures are then 0 and it is not followed).",
);
/// `cachewatch_volume_free_bytes{mount}`.
pub(crate) const VOLUME_FREE: Def = gauge(
    "cachewatch_volume_free",
    true,
    "Free bytes on a volume holding a watched root.",
);
/// `cachewatch_unexplained_growth_bytes{mount}`.
pub(crate) const UNEXPLAINED_GROWTH: Def = gauge(
    "cachewatch_unexplained_growth",
    true,
    "Bytes a volume's free space fell beyond what its watched roots grew over the configured window (unexplained_growth_window, 6 h by default; 0 when it did not; spans with a reclaim left out).",
);
/// `cachewatch_reclaimed_bytes_total{producer}`.
pub(crate) const RECLAIMED_BYTES: Def = counter(
    "cachewatch_reclaimed",
    true,
    "Allocated bytes deleted by auto-reclaim rules since the monitor started.",
);
/// `cachewatch_reclaimed_items_total{producer}`.
pub(crate) const RECLAIMED_ITEMS: Def = counter(
    "cachewatch_reclaimed_items",
    false,
    "Items deleted by auto-reclaim rules since the monitor started.",
);
/// `cachewatch_auto_reclaim_runs_total{rule}`.
pub(crate) const AUTO_RECLAIM_RUNS: Def = counter(
    "cachewatch_auto_reclaim_runs",
    false,
    "Runs of an auto-reclaim rule since the monitor started.",
);
/// `cachewatch_snapshot_age_seconds`.
pub(crate) const SNAPSHOT_AGE: Def = gauge_seconds(
    "cachewatch_snapshot_age",
    "Seconds since the monitor last showed it was running (refreshed every minute while nothing changes): a growing value is a stuck or stopped monitor whose figures are frozen.",
);
/// `cachewatch_monitor_up`.
pub(crate) const MONITOR_UP: Def = gauge(
    "cachewatch_monitor_up",
    false,
    "1 while the monitor task runs, 0 once it stopped on a panic (the figures are then frozen).",
);
/// `cachewatch_alerts_total{rule}`.
pub(crate) const ALERTS: Def = counter(
    "cachewatch_alerts",
    false,
    "Alerts fired since start, per rule.",
);

/// A sample's labels: `(name, value)` pairs; values are escaped by the encoder.
pub(crate) type Labels = Vec<(&'static str, String)>;

/// Families with their samples, in the order they are encoded; a `prometheus-client` collector.
#[derive(Debug, Default)]
pub(crate) struct Families(Vec<(Def, Vec<(Labels, u64)>)>);

impl Families {
    /// Adds family `def` with `samples` (announced with HELP and TYPE even when empty).
    pub(crate) fn push(&mut self, def: Def, samples: impl IntoIterator<Item = (Labels, u64)>) {
        self.0.push((def, samples.into_iter().collect()));
    }

    /// OpenMetrics text, ending with `# EOF`.
    pub(crate) fn openmetrics(self) -> String {
        let mut out = String::with_capacity(4096);
        let registry = self.registry();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &registry) {
            tracing::error!(error = %e, "encoding the metrics failed; the page is cut short");
        }
        out
    }

    /// The Prometheus text exposition format (0.0.4): no `# UNIT`, no `# EOF`, a counter's HELP
    /// and TYPE name its `_total` samples.
    pub(crate) fn prometheus_text(self) -> String {
        let mut out = String::with_capacity(4096);
        let registry = self.registry();
        if let Err(e) = prometheus_client::encoding::prometheus_text::encode(&mut out, &registry) {
            tracing::error!(error = %e, "encoding the metrics failed; the text is cut short");
        }
        out
    }

    fn registry(self) -> Registry {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(self));
        registry
    }
}

impl Collector for Families {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for (def, samples) in &self.0 {
            let unit = if def.bytes {
                Some(&Unit::Bytes)
            } else if def.seconds {
                Some(&Unit::Seconds)
            } else {
                None
            };
            let mut family = encoder.encode_descriptor(def.name, def.help, unit, def.kind)?;
            for (labels, value) in samples {
                let mut sample = family.encode_family(labels)?;
                match def.kind {
                    MetricType::Counter => {
                        sample.encode_counter::<NoLabelSet, u64, u64>(value, None)?;
                    }
                    _ => sample.encode_gauge(value)?,
                }
            }
        }
        Ok(())
    }
}

fn one(name: &'static str, value: &str) -> Labels {
    vec![(name, value.to_owned())]
}

/// Every `/metrics` family, from a monitor's snapshot and the alerts fired per rule, at `now`
/// (Unix seconds: the snapshot's age).
pub(crate) fn monitor_families(snap: &Snapshot, alerts: &AlertCounts, now: u64) -> Families {
    let mut f = Families::default();
    f.push(
        MONITOR_UP,
        [(Labels::new(), u64::from(snap.stopped.is_none()))],
    );
    f.push(
        SNAPSHOT_AGE,
        [(Labels::new(), now.saturating_sub(snap.live_at_unix_secs))],
    );
    let producers = |get: fn(&crate::dto::ProducerDto) -> u64| {
        snap.producers
            .iter()
            .map(move |p| (one("producer", &p.id), get(p)))
    };
    f.push(PRODUCER_ALLOCATED, producers(|p| p.allocated_bytes));
    f.push(PRODUCER_ITEMS, producers(|p| p.items));
    f.push(PRODUCER_ORPHAN, producers(|p| p.orphan_bytes));
    f.push(PRODUCER_RECLAIMABLE, producers(|p| p.reclaimable_bytes));
    f.push(
        ROOT_ALLOCATED,
        snap.roots.iter().map(|r| {
            (
                vec![
                    ("kind", r.kind.as_str().to_owned()),
                    ("path", r.path.clone()),
                ],
                r.allocated_bytes,
            )
        }),
    );
    f.push(
        ROOT_UP,
        snap.roots.iter().map(|r| {
            (
                vec![
                    ("kind", r.kind.as_str().to_owned()),
                    ("path", r.path.clone()),
                ],
                u64::from(r.state == crate::dto::RootStatus::Ok),
            )
        }),
    );
    // One sample per volume, however many roots it holds.
    let mounts: std::collections::BTreeMap<&str, u64> = snap
        .roots
        .iter()
        .filter_map(|r| Some((r.mount.as_deref()?, r.free_bytes?)))
        .collect();
    f.push(
        VOLUME_FREE,
        mounts.into_iter().map(|(m, free)| (one("mount", m), free)),
    );
    f.push(
        UNEXPLAINED_GROWTH,
        snap.unexplained_growth.iter().map(|u| {
            (
                one("mount", &u.mount),
                u64::try_from(u.unexplained_bytes).unwrap_or(0),
            )
        }),
    );
    let groups = |get: fn(&crate::dto::UnattributedGroupDto) -> u64| {
        snap.unattributed_groups.iter().map(move |g| {
            (
                vec![
                    ("root", g.root.clone()),
                    ("shape", g.shape.clone()),
                    ("writer", group_writer(g).to_owned()),
                ],
                get(g),
            )
        })
    };
    f.push(GROUP_BYTES, groups(|g| g.allocated_bytes));
    f.push(GROUP_ITEMS, groups(|g| g.items));
    let a = &snap.auto_reclaim;
    f.push(
        RECLAIMED_BYTES,
        a.reclaimed
            .iter()
            .map(|r| (one("producer", &r.producer), r.bytes)),
    );
    f.push(
        RECLAIMED_ITEMS,
        a.reclaimed
            .iter()
            .map(|r| (one("producer", &r.producer), r.items)),
    );
    f.push(
        AUTO_RECLAIM_RUNS,
        a.rules.iter().map(|r| (one("rule", &r.rule), r.runs)),
    );
    f.push(
        ALERTS,
        alerts.iter().map(|(rule, n)| (one("rule", rule), *n)),
    );
    f
}

/// The name of a group's writer as its `writer` label says it: the strongest evidence's (a
/// process that exited and is remembered from the history database included), else a process
/// holding a member; empty when nothing names one.
fn group_writer(g: &crate::dto::UnattributedGroupDto) -> &str {
    g.evidence
        .first()
        .map(|e| e.name.as_str())
        .or_else(|| g.writers.first().map(|w| w.name.as_str()))
        .unwrap_or("")
}
