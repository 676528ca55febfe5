//! A one-shot scan's result as the snapshot's DTOs ([`ScanReportDto`]): what `cachewatch scan`
//! prints (its `--json`, its tables, its OpenMetrics text file), in the same shapes as the
//! monitor's snapshot, so `scan --json`, `status --json` and the window share one schema.

use std::ffi::OsStr;
use std::path::Path;
use std::time::SystemTime;

use crate::catalogue::{Catalogue, ProducerKind, ReclaimMode};
use crate::dto::{
    path_bytes, ProducerDto, RootDto, RootStatus, ScanErrorDto, ScanReportDto, UnattributedDto,
    UnattributedGroupDto, WatchMode,
};
use crate::monitor::provenance::{
    self, confirmed_leak, group_evidence, Evidence, EvidenceKind, ProcessHistory,
};
use crate::process::ProcessProbe;
use crate::scan::{RootSummary, Tally, UnattributedGroup};
use crate::shapes::{self, ShapeGroup, Writer};
use crate::watch::live::GroupMember;

/// Writers named per group, at most.
const WRITERS_PER_GROUP: usize = 3;

/// The report of streamed scans (`summaries`, in the order scanned) and what was tallied while
/// they ran. With a process probe, each group gets the processes writing into it and the
/// evidence naming its writer (one sample of the process table, taken only when there is a
/// group); without one (a text file for a cron run), none.
pub fn report(
    summaries: &[RootSummary],
    tally: &Tally,
    catalogue: &Catalogue,
    probe: Option<&dyn ProcessProbe>,
) -> ScanReportDto {
    let roots = summaries.iter().map(root_dto).collect();
    let producers = tally
        .producers()
        .into_iter()
        .map(|p| {
            let rule = catalogue.rule(&p.id);
            ProducerDto {
                name: rule.map_or_else(|| p.id.clone(), |r| r.name.clone()),
                kind: rule.map_or(ProducerKind::Leak, |r| r.kind),
                reclaim: rule.map_or(ReclaimMode::Manual, |r| r.reclaim),
                reclaimable: rule.is_some_and(crate::catalogue::Rule::reclaimable),
                allocated_bytes: p.measure.allocated_bytes,
                apparent_bytes: p.measure.apparent_bytes,
                items: p.items,
                files: p.measure.files,
                growth_bytes_per_hour: None,
                growth_bytes_per_day: None,
                growth_items_per_day: None,
                growth: None,
                orphan_bytes: 0,
                reclaimable_bytes: 0,
                reclaimable_items: 0,
                evidence: rule.map(|r| r.evidence.clone()).unwrap_or_default(),
                notes: rule.map(|r| r.notes.clone()).unwrap_or_default(),
                managed_by: rule.and_then(|r| r.managed_by.clone()),
                top_items: Vec::new(),
                history: Vec::new(),
                id: p.id,
            }
        })
        .collect();
    let unattributed = tally
        .unattributed()
        .into_iter()
        .map(|u| UnattributedDto {
            path: u.path.to_string_lossy().into_owned(),
            path_bytes: path_bytes(&u.path),
            root_kind: u.root_kind,
            allocated_bytes: u.measure.allocated_bytes,
            apparent_bytes: u.measure.apparent_bytes,
        })
        .collect();
    let errors = summaries
        .iter()
        .flat_map(|r| &r.issues)
        .map(|i| ScanErrorDto {
            path: i.path.to_string_lossy().into_owned(),
            path_bytes: path_bytes(&i.path),
            kind: i.kind,
            message: i.message.clone(),
        })
        .collect();
    ScanReportDto {
        roots,
        producers,
        unattributed_groups: groups(tally, probe),
        unattributed,
        errors,
    }
}

/// A scanned root: its totals; no volume figures and no watch (a one-shot scan watches nothing).
fn root_dto(r: &RootSummary) -> RootDto {
    RootDto {
        kind: r.root.kind,
        path: r.root.path.to_string_lossy().into_owned(),
        path_bytes: path_bytes(&r.root.path),
        canonical: r.root.canonical.to_string_lossy().into_owned(),
        canonical_bytes: path_bytes(&r.root.canonical),
        bundle: r.root.container_bundle(),
        state: RootStatus::Ok,
        allocated_bytes: r.total.allocated_bytes,
        apparent_bytes: r.total.apparent_bytes,
        items: r.items,
        files: r.total.files,
        dirs: r.total.dirs,
        vanished: r.vanished,
        free_bytes: None,
        purgeable_bytes: None,
        volume_bytes: None,
        mount: None,
        watch_mode: WatchMode::Off,
        watch_error: None,
        unreadable: r.issues.len() as u64,
        unreadable_paths: r
            .issues
            .iter()
            .take(crate::dto::UNREADABLE_LISTED)
            .map(|i| i.path.to_string_lossy().into_owned())
            .collect(),
        unwatched_paths: Vec::new(),
        rescans: 0,
    }
}

/// The top-level entries of `root` that belong to each of `groups`, at most
/// [`provenance::MEMBERS_LOOKED_AT`] each: one listing of each dir the groups lie in and one
/// `lstat` per member. Birth time: the entry's own (`statx` on Linux where the file system keeps
/// one, `st_birthtime` on macOS), else its mtime (the monitor's inventory has the oldest mtime of
/// the subtree instead; a one-shot scan keeps no subtree times per member).
fn group_members(root: &Path, groups: &[&ShapeGroup]) -> Vec<Vec<GroupMember>> {
    let mut out: Vec<Vec<GroupMember>> = vec![Vec::new(); groups.len()];
    // The top level for groups of top-level entries, and each dir a group one level down lies in.
    let mut dirs: Vec<Option<&OsStr>> = groups.iter().map(|g| g.within.as_deref()).collect();
    dirs.sort();
    dirs.dedup();
    for within in dirs {
        let dir = within.map_or_else(|| root.to_path_buf(), |w| root.join(w));
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Ok(md) = entry.metadata() else {
                continue;
            };
            let Some(gi) = groups
                .iter()
                .position(|g| g.within.as_deref() == within && g.contains(&name, md.is_dir()))
            else {
                continue;
            };
            if out[gi].len() >= provenance::MEMBERS_LOOKED_AT {
                continue;
            }
            out[gi].push(GroupMember {
                path: entry.path(),
                name,
                born: md.created().or_else(|_| md.modified()).ok(),
            });
        }
    }
    out
}

/// The indices of the groups of each root, roots in the groups' order.
fn by_root(groups: &[UnattributedGroup]) -> Vec<(&Path, Vec<usize>)> {
    let mut roots: Vec<&Path> = groups.iter().map(|g| g.root.as_path()).collect();
    roots.dedup();
    roots
        .into_iter()
        .map(|root| {
            let at = (0..groups.len())
                .filter(|&i| groups[i].root == root)
                .collect();
            (root, at)
        })
        .collect()
}

fn groups(tally: &Tally, probe: Option<&dyn ProcessProbe>) -> Vec<UnattributedGroupDto> {
    let groups = tally.unattributed_groups();
    let mut writers: Vec<Vec<Writer>> = vec![Vec::new(); groups.len()];
    let mut evidence: Vec<Vec<Evidence>> = vec![Vec::new(); groups.len()];
    let mut confirmed: Vec<bool> = vec![false; groups.len()];
    if let (Some(probe), false) = (probe, groups.is_empty()) {
        probe.refresh();
        let roots = by_root(&groups);
        for (root, at) in &roots {
            let these: Vec<&ShapeGroup> = at.iter().map(|&i| &groups[i].group).collect();
            for (&i, w) in at
                .iter()
                .zip(shapes::writers(probe, root, &these, WRITERS_PER_GROUP))
            {
                writers[i] = w;
            }
        }
        // One sample: only processes running now are known, so a launch cannot be told from a
        // busy program (no `created-at-launch`); a pid in the names of members whose process has
        // exited names nobody.
        let mut history = ProcessHistory::new(provenance::HISTORY_CAP);
        history.observe(SystemTime::now(), provenance::sample_processes());
        for (root, at) in &roots {
            let these: Vec<&ShapeGroup> = at.iter().map(|&i| &groups[i].group).collect();
            for (&i, members) in at.iter().zip(group_members(root, &these)) {
                let found: Vec<Evidence> =
                    group_evidence(&members, groups[i].group.items, &writers[i], &history)
                        .into_iter()
                        .filter(|e| e.kind != EvidenceKind::CreatedAtLaunch)
                        .collect();
                confirmed[i] = confirmed_leak(&found, groups[i].group.items, &history);
                evidence[i] = found;
            }
        }
    }
    groups
        .iter()
        .zip(writers)
        .zip(evidence)
        .zip(confirmed)
        .map(|(((g, writers), evidence), confirmed_leak)| {
            crate::monitor::group_dto(&crate::monitor::GroupFigures {
                key: crate::history::group_key(&g.root, g.group.within.as_deref(), &g.group.key),
                root_kind: g.root_kind,
                root: g.root.clone(),
                group: g.group.clone(),
                writers,
                evidence,
                confirmed_leak,
                others: Vec::new(),
            })
        })
        .collect()
}
