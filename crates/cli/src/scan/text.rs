//! `cachewatch scan`'s text report: roots, producers, containers, groups with their writers.

use std::io::Write;
use std::path::Path;
use std::time::SystemTime;

use cachewatch::api::units::unix_secs;

use super::super::format::{bytes, Align, Table};
use cachewatch::dto::{RootDto, ScanReportDto, UnattributedGroupDto};

use super::enum_word;

/// Containers listed under the `container-temp` heading, largest first.
const TOP_CONTAINERS: usize = 10;

/// The `container-temp` roots under one heading: the largest containers' temp dirs by bundle id.
fn write_containers(containers: &[&RootDto], out: &mut dyn Write) -> std::io::Result<()> {
    let mut sorted: Vec<&&RootDto> = containers.iter().filter(|c| c.items > 0).collect();
    if sorted.is_empty() {
        return Ok(());
    }
    sorted.sort_by_key(|c| std::cmp::Reverse(c.allocated_bytes));
    writeln!(out)?;
    let mut t = Table::new(&[
        ("CONTAINER TEMP (container-temp)", Align::Left),
        ("ALLOCATED", Align::Right),
        ("ITEMS", Align::Right),
    ]);
    for c in sorted.iter().take(TOP_CONTAINERS) {
        t.row(vec![
            c.bundle.clone().unwrap_or_default(),
            bytes(c.allocated_bytes),
            c.items.to_string(),
        ]);
    }
    t.write(out)?;
    if sorted.len() > TOP_CONTAINERS {
        writeln!(out, "  ... (all of them with --json)")?;
    }
    Ok(())
}

/// The UNKNOWN PRODUCERS table: one row per group of unattributed entries.
fn write_groups(groups: &[UnattributedGroupDto], out: &mut dyn Write) -> std::io::Result<()> {
    let now = unix_secs(SystemTime::now());
    let mut t = Table::new(&[
        ("UNKNOWN PRODUCERS", Align::Left),
        ("ROOT", Align::Left),
        ("ITEMS", Align::Right),
        ("ALLOCATED", Align::Right),
        ("NEWEST", Align::Right),
        ("WRITER", Align::Left),
    ]);
    for g in groups {
        let writer = match (g.writers.first(), g.evidence.first()) {
            (Some(w), _) => format!("{} (pid {})", w.name, w.pid),
            (None, Some(e)) => evidence_text(e),
            (None, None) => "-".to_owned(),
        };
        t.row(vec![
            super::super::format::escape(&g.shape).into_owned(),
            g.root_kind.to_string(),
            g.items.to_string(),
            bytes(g.allocated_bytes),
            g.newest_mtime.map_or_else(
                || "-".to_owned(),
                |m| format!("{} ago", super::super::format::age(now.saturating_sub(m))),
            ),
            writer,
        ]);
    }
    t.write(out)?;
    writeln!(
        out,
        "  (`cachewatch rules suggest` prints a rule for each; `rules add SHAPE --id ID` adds one)"
    )
}

/// One piece of evidence as the table says it: `katago (pid in name, 28 of 30)`.
fn evidence_text(e: &cachewatch::dto::EvidenceDto) -> String {
    use cachewatch::dto::EvidenceKindDto as K;
    let kind = match e.kind {
        K::PidInName => "pid in name",
        K::CreatedAtLaunch => "created at launch",
        K::Held => "held open",
        K::InPath => "in path",
    };
    format!(
        "{} ({kind}, {} of {})",
        super::super::format::escape(&e.name),
        e.agree,
        e.total
    )
}

pub(super) fn print_human(r: &ScanReportDto, out: &mut dyn Write) -> std::io::Result<()> {
    let mut roots = Table::new(&[
        ("ROOT", Align::Left),
        ("ALLOCATED", Align::Right),
        ("APPARENT", Align::Right),
        ("ITEMS", Align::Right),
        ("UNREADABLE", Align::Right),
        ("PATH", Align::Left),
    ]);
    let (containers, plain): (Vec<&RootDto>, Vec<&RootDto>) =
        r.roots.iter().partition(|root| root.bundle.is_some());
    for root in &plain {
        roots.row(vec![
            root.kind.to_string(),
            bytes(root.allocated_bytes),
            bytes(root.apparent_bytes),
            root.items.to_string(),
            root.unreadable.to_string(),
            root.path.clone(),
        ]);
    }
    if let Some(first) = containers.first() {
        let sum = |f: fn(&RootDto) -> u64| containers.iter().map(|c| f(c)).sum::<u64>();
        let dir = Path::new(&first.path)
            .ancestors()
            .nth(3)
            .unwrap_or(Path::new(""));
        roots.row(vec![
            first.kind.to_string(),
            bytes(sum(|c| c.allocated_bytes)),
            bytes(sum(|c| c.apparent_bytes)),
            sum(|c| c.items).to_string(),
            sum(|c| c.unreadable).to_string(),
            format!("{} ({} containers)", dir.display(), containers.len()),
        ]);
    }
    roots.write(out)?;
    write_containers(&containers, out)?;

    writeln!(out)?;
    if r.producers.is_empty() {
        writeln!(out, "No known producer has items here.")?;
    } else {
        let mut producers = Table::new(&[
            ("PRODUCER", Align::Left),
            ("KIND", Align::Left),
            ("RECLAIM", Align::Left),
            ("ITEMS", Align::Right),
            ("ALLOCATED", Align::Right),
            ("APPARENT", Align::Right),
        ]);
        for p in &r.producers {
            producers.row(vec![
                p.id.clone(),
                enum_word(&p.kind),
                enum_word(&p.reclaim),
                p.items.to_string(),
                bytes(p.allocated_bytes),
                bytes(p.apparent_bytes),
            ]);
        }
        producers.write(out)?;
    }

    if !r.unattributed_groups.is_empty() {
        writeln!(out)?;
        write_groups(&r.unattributed_groups, out)?;
    }

    if !r.unattributed.is_empty() {
        writeln!(out)?;
        let mut un = Table::new(&[
            ("UNATTRIBUTED", Align::Left),
            ("ALLOCATED", Align::Right),
            ("APPARENT", Align::Right),
        ]);
        for u in &r.unattributed {
            un.row(vec![
                u.path.clone(),
                bytes(u.allocated_bytes),
                bytes(u.apparent_bytes),
            ]);
        }
        un.write(out)?;
    }

    if !r.errors.is_empty() {
        writeln!(out)?;
        writeln!(out, "{} path(s) could not be read:", r.errors.len())?;
        for e in r.errors.iter().take(10) {
            writeln!(
                out,
                "  {}: {}",
                super::super::format::escape(&e.path),
                e.message
            )?;
        }
        if r.errors.len() > 10 {
            writeln!(out, "  ... (all of them with --json)")?;
        }
    }
    Ok(())
}
