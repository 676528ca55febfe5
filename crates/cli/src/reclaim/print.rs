//! What `cachewatch reclaim` prints for humans: the plan and the report, item by item when short
//! (or with `--list`), else one row per producer and the kept items counted by reason, so a
//! backlog of 700k items prints a dozen lines, not 700k. Listings are read back from the plan's
//! spools, never held.

use std::collections::BTreeMap;
use std::io::Write;

use cachewatch::api::reclaim::{KeptItem, StreamedPlan};

use super::{listing, Done};
use crate::format::{age, bytes, count, Align, Table};

/// More items than this print as a summary unless `--list` is given.
pub const LIST_LIMIT: usize = 40;

const KEEP_COLUMNS: [(&str, Align); 3] = [
    ("KEEP", Align::Left),
    ("PRODUCER", Align::Left),
    ("WHY", Align::Left),
];

fn keep_row(k: &KeptItem) -> Vec<String> {
    vec![
        k.path.display().to_string(),
        k.producer.clone(),
        k.reason.to_string(),
    ]
}

/// Prints the plan: every item when `list` or when there are at most [`LIST_LIMIT`], else a
/// per-producer summary; then the kept items (listed, or counted by reason).
pub fn plan(plan: &StreamedPlan, list: bool, out: &mut dyn Write) -> std::io::Result<()> {
    let s = &plan.summary;
    let listed = list || s.planned_items <= LIST_LIMIT as u64;
    if s.planned_items == 0 {
        writeln!(out, "Nothing to reclaim.")?;
    } else if listed {
        let columns = [
            ("DELETE", Align::Left),
            ("PRODUCER", Align::Left),
            ("AGE", Align::Right),
            ("ALLOCATED", Align::Right),
        ];
        let rows = || {
            plan.planned().map(|i| {
                i.map(|i| {
                    vec![
                        i.path.display().to_string(),
                        i.producer.clone(),
                        age(i.age_secs),
                        bytes(i.allocated_bytes),
                    ]
                })
            })
        };
        listing::write(&columns, rows, out)?;
    } else {
        let mut t = Table::new(&[
            ("DELETE FROM", Align::Left),
            ("ITEMS", Align::Right),
            ("ALLOCATED", Align::Right),
            ("OLDEST", Align::Right),
        ]);
        for (producer, p) in &s.producers {
            t.row(vec![
                producer.clone(),
                count(p.items),
                bytes(p.allocated_bytes),
                age(p.oldest_age_secs),
            ]);
        }
        t.write(out)?;
    }
    if s.planned_items > 0 {
        writeln!(
            out,
            "{} item(s), {} allocated{}.",
            count(s.planned_items),
            bytes(s.planned_bytes),
            if listed {
                ""
            } else {
                " (--list shows every item)"
            }
        )?;
    }
    if s.kept_items == 0 {
        return Ok(());
    }
    writeln!(out)?;
    if list || s.kept_items <= LIST_LIMIT as u64 {
        let rows = || plan.kept().map(|k| k.map(|k| keep_row(&k)));
        return listing::write(&KEEP_COLUMNS, rows, out);
    }
    let mut t = Table::new(&[
        ("KEEP", Align::Left),
        ("ITEMS", Align::Right),
        ("WHY (FOR EXAMPLE)", Align::Left),
    ]);
    for ((producer, _), g) in &s.kept {
        t.row(vec![
            producer.clone(),
            count(g.items),
            g.example.to_string(),
        ]);
    }
    t.write(out)
}

/// The producers of the plan whose tool manages their cache, with the tool's own command
/// (`managed_by`), by producer id.
pub fn managed_by(
    plan: &StreamedPlan,
    catalogue: &cachewatch::api::catalogue::Catalogue,
) -> BTreeMap<String, String> {
    plan.summary
        .producers
        .keys()
        .filter_map(|p| Some((p.clone(), catalogue.rule(p)?.managed_by.clone()?)))
        .collect()
}

/// Names, for each producer in the plan whose tool manages its cache (`managed_by`), the tool's
/// own command: the better first step than deleting its entries.
pub fn managed(
    plan: &StreamedPlan,
    catalogue: &cachewatch::api::catalogue::Catalogue,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    for (producer, cmd) in managed_by(plan, catalogue) {
        writeln!(
            out,
            "{producer} is managed by its tool: `{cmd}` cleans it the tool's way; run it \
             first, or go on to delete these entries."
        )?;
    }
    Ok(())
}

/// Prints kept items: each with its reason when `list` or few, else counted by reason.
fn kept(items: &[KeptItem], list: bool, out: &mut dyn Write) -> std::io::Result<()> {
    if list || items.len() <= LIST_LIMIT {
        let mut t = Table::new(&KEEP_COLUMNS);
        for k in items {
            t.row(keep_row(k));
        }
        return t.write(out);
    }
    // (producer, reason kind) -> (items, one example reason)
    let mut by: BTreeMap<(&str, &str), (u64, String)> = BTreeMap::new();
    for k in items {
        let e = by
            .entry((k.producer.as_str(), k.reason.code()))
            .or_insert_with(|| (0, k.reason.to_string()));
        e.0 += 1;
    }
    let mut t = Table::new(&[
        ("KEEP", Align::Left),
        ("ITEMS", Align::Right),
        ("WHY (FOR EXAMPLE)", Align::Left),
    ]);
    for ((producer, _), (n, example)) in by {
        t.row(vec![producer.to_owned(), count(n), example]);
    }
    t.write(out)
}

/// Prints what an execute did: counts, freed bytes, what was kept at the re-check, failures.
pub fn report(d: &Done, list: bool, interrupted: bool, out: &mut dyn Write) -> std::io::Result<()> {
    let r = &d.audited.report;
    writeln!(
        out,
        "\n{}Deleted {} item(s), freed {}.",
        if interrupted {
            "Interrupted: stopped between batches. "
        } else {
            ""
        },
        count(d.deleted_items),
        bytes(r.freed_bytes)
    )?;
    if !r.already_gone.is_empty() {
        writeln!(
            out,
            "{} item(s) were already gone.",
            count(r.already_gone.len() as u64)
        )?;
    }
    if !r.kept.is_empty() {
        writeln!(out, "Kept at the re-check just before deleting:")?;
        kept(&r.kept, list, out)?;
    }
    for e in d.audited.errors() {
        writeln!(
            out,
            "failed {}: {}",
            crate::format::path(&e.path),
            e.message
        )?;
    }
    Ok(())
}
