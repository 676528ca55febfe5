//! Building a [`Snapshot`] from the monitor's state.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use crate::catalogue::Catalogue;
use crate::catalogue::{ProducerKind, ReclaimMode};
use crate::dto::{
    ItemDto, MonitorState, ProducerDto, RootDto, ScanProgressDto, UnattributedDto,
    UnattributedGroupDto, WriterDto,
};
use crate::inventory::Measure;
use crate::snapshot::Snapshot;
use crate::units::unix_secs;
use crate::watch::live::{RootState, TOP_ITEMS, TOP_UNATTRIBUTED};

use super::disks::{VolumeSpace, Volumes};
use super::figures::Figures;
use super::recorder::Recorder;
use super::MonitorOptions;

pub use crate::watch::live::Totals;

/// Totals per producer id over every root (unattributed items left out), from the totals each root
/// keeps by deltas: O(producers), not O(items).
pub fn producer_totals(roots: &[RootState]) -> BTreeMap<String, Totals> {
    let mut out: BTreeMap<String, Totals> = BTreeMap::new();
    for st in roots {
        for (id, g) in st.producers() {
            let t = out.entry(id.to_string()).or_default();
            t.items += g.totals.items;
            t.measure.add(&g.totals.measure);
        }
    }
    out
}

/// Space of the volume under each root (same order), `None` where unknown or the root is gone.
pub fn volume_space(roots: &[RootState]) -> Vec<Option<VolumeSpace>> {
    let volumes = Volumes::read();
    roots
        .iter()
        .map(|st| {
            if st.gone() {
                None
            } else {
                volumes.space_of(&st.root.canonical)
            }
        })
        .collect()
}

/// Seconds from the newest mtime in `measure` to `now` (0 when unknown or in the future).
pub fn age_secs(measure: &Measure, now: SystemTime) -> u64 {
    measure
        .newest_mtime
        .and_then(|m| now.duration_since(m).ok())
        .map_or(0, |d| d.as_secs())
}

/// The snapshot before the first scan finishes.
pub fn empty_snapshot(opts: &MonitorOptions) -> Snapshot {
    Snapshot {
        taken_at_unix_secs: unix_secs(opts.clock.now()),
        state: MonitorState::Scanning,
        scan_progress: ScanProgressDto {
            roots_done: 0,
            roots_total: opts.roots.len() as u32,
            entries_done: 0,
        },
        threshold_secs: opts.threshold.as_secs(),
        total_allocated_bytes: 0,
        total_apparent_bytes: 0,
        disk_full_eta_secs: None,
        disk_full_eta_span_secs: None,
        total_growth: None,
        unexplained_growth: Vec::new(),
        roots: Vec::new(),
        producers: Vec::new(),
        unattributed_groups: Vec::new(),
        hidden_groups: 0,
        ignored_shapes: opts.ignored_shapes.clone(),
        unattributed: Vec::new(),
        alerts: Vec::new(),
        crash_groups: Vec::new(),
        errors: opts.notices.clone(),
        auto_reclaim: crate::autoreclaim::AutoReclaimDto {
            enabled: !opts.auto_reclaim.is_empty(),
            ..Default::default()
        },
        live_at_unix_secs: unix_secs(SystemTime::now()),
        stopped: None,
    }
}

/// What a snapshot is made of.
pub struct Inputs<'a> {
    pub roots: &'a [RootState],
    pub catalogue: &'a Catalogue,
    pub state: MonitorState,
    pub progress: ScanProgressDto,
    pub threshold: Duration,
    pub figures: &'a Figures,
    pub recorder: &'a Recorder,
    pub now: SystemTime,
    pub auto: crate::autoreclaim::AutoReclaimDto,
    /// [`MonitorOptions::notices`].
    pub notices: &'a [String],
    /// [`MonitorOptions::ignored_shapes`].
    pub ignored_shapes: &'a [String],
}

/// Builds the snapshot: per root totals and volume space, per producer totals with growth,
/// orphans, reclaimable figures and top items, the top unattributed entries, alerts and errors.
pub fn snapshot(inp: Inputs<'_>) -> Snapshot {
    let space = volume_space(inp.roots);
    let mut roots = Vec::with_capacity(inp.roots.len());
    let mut errors: Vec<String> = inp.notices.to_vec();
    errors.extend_from_slice(inp.recorder.errors());
    for (st, space) in inp.roots.iter().zip(&space) {
        if let Some(e) = &st.watch_error {
            errors.push(format!("{} {:?}: {e}", st.root.kind, st.root.path));
        }
        roots.push(RootDto {
            kind: st.root.kind,
            path: st.root.path.to_string_lossy().into_owned(),
            path_bytes: crate::dto::path_bytes(&st.root.path),
            canonical: st.root.canonical.to_string_lossy().into_owned(),
            canonical_bytes: crate::dto::path_bytes(&st.root.canonical),
            bundle: st.root.container_bundle(),
            state: st.status,
            allocated_bytes: st.total.allocated_bytes,
            apparent_bytes: st.total.apparent_bytes,
            items: st.item_count() as u64,
            files: st.total.files,
            dirs: st.total.dirs,
            vanished: 0,
            free_bytes: space.as_ref().map(|s| s.free_bytes),
            purgeable_bytes: space.as_ref().map(|s| s.purgeable_bytes),
            volume_bytes: space.as_ref().map(|s| s.total_bytes),
            mount: space.as_ref().map(|s| s.mount.clone()),
            watch_mode: st.mode,
            watch_error: st.watch_error.clone(),
            unreadable: st.issues.len() as u64,
            unreadable_paths: st
                .issues
                .iter()
                .take(crate::dto::UNREADABLE_LISTED)
                .map(|i| i.path.to_string_lossy().into_owned())
                .collect(),
            unwatched_paths: st
                .unwatched
                .iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect(),
            rescans: st.scans.saturating_sub(1),
        });
    }

    // Per producer: the totals and largest items each root keeps, merged over the roots.
    type Largest = Vec<(u64, PathBuf)>;
    let mut per: BTreeMap<&str, (Totals, Largest)> = BTreeMap::new();
    let mut unattributed: Vec<(u64, PathBuf, &RootState, Measure)> = Vec::new();
    for st in inp.roots {
        for (id, g) in st.producers() {
            let e = per.entry(id).or_default();
            e.0.items += g.totals.items;
            e.0.measure.add(&g.totals.measure);
            e.1.extend(
                g.top
                    .items
                    .iter()
                    .map(|(b, rel)| (*b, st.root.canonical.join(rel))),
            );
        }
        // The live largest entries, and the largest that joined no group when the figures were
        // computed (the live list may be all members of a group).
        let mut rels: Vec<&std::path::Path> = st
            .unattributed()
            .top
            .items
            .iter()
            .map(|(_, rel)| &**rel)
            .collect();
        rels.extend(
            inp.figures
                .lone
                .iter()
                .filter_map(|p| p.strip_prefix(&st.root.canonical).ok())
                .filter(|rel| rel.components().count() == 1),
        );
        rels.sort();
        rels.dedup();
        for rel in rels {
            // A top-level entry that is another root: that root reports what is in it.
            if st.root.nested.iter().any(|n| n.as_path() == rel) {
                continue;
            }
            // A member of a top-level group shown: the group counts it (as `scan` lists only
            // the entries that joined no group).
            let in_group = st.item_at(rel).is_some_and(|it| {
                let dir = !it.is_symlink && it.measure.dirs > 0;
                inp.figures.groups.iter().any(|g| {
                    g.root == st.root.canonical
                        && g.group.within.is_none()
                        && g.group.contains(rel.as_os_str(), dir)
                })
            });
            if in_group {
                continue;
            }
            if let Some(mut m) = st.measure_at(rel) {
                // A dir whose children (or its subdirs' children) form groups: the groups show
                // them, the dir only the rest (nothing but the dirs holding them left: not
                // listed), as `scan`.
                let held = st.nested_groups(rel.as_os_str());
                if !held.is_empty() {
                    let (rest, bare) = crate::shapes::rest_of(&m, &held);
                    if bare {
                        continue;
                    }
                    m = rest;
                }
                unattributed.push((m.allocated_bytes, st.root.canonical.join(rel), st, m));
            }
        }
    }
    let entry_of = |path: &std::path::Path| {
        inp.roots
            .iter()
            .find_map(|st| st.root.relative(path).and_then(|rel| st.measure_at(rel)))
    };
    let mut producers: Vec<ProducerDto> = per
        .into_iter()
        .map(|(id, (t, mut items))| {
            items.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
            items.truncate(TOP_ITEMS);
            let rule = inp.catalogue.rule(id);
            let a = inp.figures.producers.get(id).copied().unwrap_or_default();
            let growth = inp.recorder.growth(id);
            ProducerDto {
                id: id.to_owned(),
                name: rule.map_or_else(|| id.to_owned(), |r| r.name.clone()),
                kind: rule.map_or(ProducerKind::Leak, |r| r.kind),
                reclaim: rule.map_or(ReclaimMode::Manual, |r| r.reclaim),
                reclaimable: rule.is_some_and(crate::catalogue::Rule::reclaimable),
                allocated_bytes: t.measure.allocated_bytes,
                apparent_bytes: t.measure.apparent_bytes,
                items: t.items,
                files: t.measure.files,
                growth_bytes_per_hour: growth.bytes_per_hour,
                growth_bytes_per_day: growth.bytes_per_day,
                growth_items_per_day: growth.items_per_day,
                growth: growth.observed.map(Into::into),
                orphan_bytes: a.orphan_bytes,
                reclaimable_bytes: a.reclaimable_bytes,
                reclaimable_items: a.reclaimable_items,
                evidence: rule.map(|r| r.evidence.clone()).unwrap_or_default(),
                notes: rule.map(|r| r.notes.clone()).unwrap_or_default(),
                managed_by: rule.and_then(|r| r.managed_by.clone()),
                top_items: items
                    .iter()
                    .map(|(bytes, path)| ItemDto {
                        path: path.to_string_lossy().into_owned(),
                        allocated_bytes: *bytes,
                        age_secs: entry_of(path).map_or(0, |m| age_secs(&m, inp.now)),
                    })
                    .collect(),
                history: inp.recorder.chart(id),
            }
        })
        .collect();
    producers.sort_by(|a, b| {
        b.allocated_bytes
            .cmp(&a.allocated_bytes)
            .then_with(|| a.id.cmp(&b.id))
    });
    unattributed.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    unattributed.truncate(TOP_UNATTRIBUTED);
    let unattributed = unattributed
        .into_iter()
        .map(|(_, path, st, m)| UnattributedDto {
            path: path.to_string_lossy().into_owned(),
            path_bytes: crate::dto::path_bytes(&path),
            root_kind: st.root.kind,
            allocated_bytes: m.allocated_bytes,
            apparent_bytes: m.apparent_bytes,
        })
        .collect();
    let free_min = space.iter().flatten().map(|s| s.free_bytes).min();
    let eta = free_min.and_then(|free| inp.recorder.disk_full_eta(free));
    Snapshot {
        taken_at_unix_secs: unix_secs(inp.now),
        state: inp.state,
        scan_progress: inp.progress,
        threshold_secs: inp.threshold.as_secs(),
        total_allocated_bytes: counted_roots(inp.roots)
            .map(|r| r.total.allocated_bytes)
            .sum(),
        total_apparent_bytes: counted_roots(inp.roots)
            .map(|r| r.total.apparent_bytes)
            .sum(),
        disk_full_eta_secs: eta.map(|(secs, _)| secs),
        disk_full_eta_span_secs: eta.map(|(_, span)| span),
        total_growth: inp.recorder.total_observed().map(Into::into),
        unexplained_growth: inp.recorder.unexplained().to_vec(),
        roots,
        producers,
        unattributed_groups: inp.figures.groups.iter().map(group_dto).collect(),
        hidden_groups: inp.figures.hidden_groups,
        ignored_shapes: inp.ignored_shapes.to_vec(),
        unattributed,
        alerts: inp.recorder.recent_alerts(),
        crash_groups: inp.recorder.crash_groups(),
        errors,
        auto_reclaim: inp.auto,
        live_at_unix_secs: unix_secs(SystemTime::now()),
        stopped: None,
    }
}

/// The roots whose bytes count in totals over all roots: a root nested inside another on the
/// same device is already in that one's scan (`roots::counted_in_totals`).
pub fn counted_roots(roots: &[RootState]) -> impl Iterator<Item = &RootState> {
    let counted = crate::roots::counted_in_totals(roots.iter().map(|r| &r.root));
    roots
        .iter()
        .zip(counted)
        .filter(|(_, c)| *c)
        .map(|(r, _)| r)
}

/// What the snapshot shows of a group of unattributed entries.
/// What the snapshot and `scan --json` show of a group.
pub(crate) fn group_dto(g: &super::figures::GroupFigures) -> UnattributedGroupDto {
    UnattributedGroupDto {
        shape: g.group.shown(),
        label: g.group.label(),
        root_kind: g.root_kind,
        root: g.root.to_string_lossy().into_owned(),
        root_bytes: crate::dto::path_bytes(&g.root),
        items: g.group.items,
        allocated_bytes: g.group.measure.allocated_bytes,
        apparent_bytes: g.group.measure.apparent_bytes,
        oldest_mtime: g.group.oldest_mtime.map(unix_secs),
        newest_mtime: g.group.newest_mtime.map(unix_secs),
        examples: g
            .group
            .examples
            .iter()
            .map(|e| cachewatch_core::shapes::name_escaped(e))
            .collect(),
        writers: g
            .writers
            .iter()
            .map(|w| WriterDto {
                pid: w.pid,
                name: w.name.clone(),
            })
            .collect(),
        evidence: g
            .evidence
            .iter()
            .map(super::provenance::evidence_dto)
            .collect(),
        confirmed_leak: g.confirmed_leak,
        history_key: crate::history::key_hex(&g.key),
    }
}
