//! What `cachewatch reclaim` prints for humans: the plan and the report, item by item when short
//! (or with `--list`), else one row per producer and the kept items counted by reason, so a
//! backlog of 700k items prints a dozen lines, not 700k.

use std::collections::BTreeMap;
use std::io::Write;

use cachewatch::reclaim::{KeptItem, ReclaimErrorEntry, ReclaimPlan, ReclaimReport};

use crate::format::{age, bytes, count, Align, Table};

/// More items than this print as a summary unless `--list` is given.
pub const LIST_LIMIT: usize = 40;

/// Prints the plan: every item when `list` or when there are at most [`LIST_LIMIT`], else a
/// per-producer summary; then the kept items (listed, or counted by reason).
pub fn plan(plan: &ReclaimPlan, list: bool, out: &mut dyn Write) -> std::io::Result<()> {
    if plan.items.is_empty() {
        writeln!(out, "Nothing to reclaim.")?;
    } else if list || plan.items.len() <= LIST_LIMIT {
        let mut t = Table::new(&[
            ("DELETE", Align::Left),
            ("PRODUCER", Align::Left),
            ("AGE", Align::Right),
            ("ALLOCATED", Align::Right),
        ]);
        for i in &plan.items {
            t.row(vec![
                i.path.display().to_string(),
                i.producer.clone(),
                age(i.age_secs),
                bytes(i.allocated_bytes),
            ]);
        }
        t.write(out)?;
    } else {
        // producer -> (items, allocated bytes, oldest age)
        let mut by: BTreeMap<&str, (u64, u64, u64)> = BTreeMap::new();
        for i in &plan.items {
            let e = by.entry(i.producer.as_str()).or_default();
            e.0 += 1;
            e.1 += i.allocated_bytes;
            e.2 = e.2.max(i.age_secs);
        }
        let mut t = Table::new(&[
            ("DELETE FROM", Align::Left),
            ("ITEMS", Align::Right),
            ("ALLOCATED", Align::Right),
            ("OLDEST", Align::Right),
        ]);
        for (producer, (n, b, oldest)) in by {
            t.row(vec![producer.to_owned(), count(n), bytes(b), age(oldest)]);
        }
        t.write(out)?;
    }
    if !plan.items.is_empty() {
        writeln!(
            out,
            "{} item(s), {} allocated{}.",
            count(plan.items.len() as u64),
            bytes(plan.planned_bytes),
            if list || plan.items.len() <= LIST_LIMIT {
                ""
            } else {
                " (--list shows every item)"
            }
        )?;
    }
    if !plan.kept.is_empty() {
        writeln!(out)?;
        kept(&plan.kept, list, out)?;
    }
    Ok(())
}

/// Prints kept items: each with its reason when `list` or few, else counted by reason.
fn kept(items: &[KeptItem], list: bool, out: &mut dyn Write) -> std::io::Result<()> {
    if list || items.len() <= LIST_LIMIT {
        let mut t = Table::new(&[
            ("KEEP", Align::Left),
            ("PRODUCER", Align::Left),
            ("WHY", Align::Left),
        ]);
        for k in items {
            t.row(vec![
                k.path.display().to_string(),
                k.producer.clone(),
                k.reason.to_string(),
            ]);
        }
        return t.write(out);
    }
    // (producer, reason kind) -> (items, one example reason)
    let mut by: BTreeMap<(&str, String), (u64, String)> = BTreeMap::new();
    for k in items {
        let kind = serde_json::to_value(&k.reason)
            .ok()
            .and_then(|v| v["reason"].as_str().map(str::to_owned))
            .unwrap_or_default();
        let e = by
            .entry((k.producer.as_str(), kind))
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
pub fn report(
    r: &ReclaimReport,
    audit_errors: &[ReclaimErrorEntry],
    list: bool,
    interrupted: bool,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    writeln!(
        out,
        "\n{}Deleted {} item(s), freed {}.",
        if interrupted {
            "Interrupted: stopped between batches. "
        } else {
            ""
        },
        count(r.deleted.len() as u64),
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
    for e in r.errors.iter().chain(audit_errors) {
        writeln!(
            out,
            "failed {}: {}",
            crate::format::path(&e.path),
            e.message
        )?;
    }
    Ok(())
}
