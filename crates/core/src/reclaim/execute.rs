//! Executing a [`ReclaimPlan`]: re-check each item, then delete it, in parallel; audit on the
//! calling thread.

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::sync::mpsc;
use std::time::SystemTime;

use rayon::prelude::*;

use super::measure::{remeasure, LinkSeen, LinkedInodes, Remeasure};
use super::plan::plan_id;
use super::{
    age_secs, held_protected, held_root, needed_secs, protected_paths, rule_forbids, AuditRecord,
    DeletedItem, KeepReason, KeptItem, PlannedItem, ReclaimError, ReclaimPlan, ReclaimReport,
};
use crate::catalogue::Catalogue;
use crate::process::ProcessProbe;

/// What happened to one planned item.
enum Outcome {
    Deleted(Remeasure),
    Kept(KeepReason),
    AlreadyGone,
    Failed(ReclaimError),
}

/// Executes `plan`: re-checks every planned item just before deleting it and deletes those that
/// pass, items in parallel (rayon). `audit` is called once per item attempted, on the calling
/// thread, as items finish.
///
/// The re-check, per item: the path is absolute and ends in a plain name; its parent resolves
/// (canonicalize) to a dir inside the plan's root, so the item is never the root nor outside it;
/// it is not and does not hold any of the plan's roots (nested roots) nor any protected path (the
/// plan's `policy.protected` and the user's home dir read again now);
/// the rule still exists and still allows deletion; `lstat` gives the planned device and inode
/// (and the same symlink-ness); the owner rule ([`crate::owner::verdict`]) still lets it
/// go, and no open or mapped file lies under it (one probe snapshot for the whole
/// execute); one walk of the item finds nothing modified after the plan's newest mtime, no other
/// filesystem mounted inside, and an age still at least max(threshold, rule floor). Then the item
/// goes: `remove_dir_all` for a dir, `remove_file` for a file or a symlink (the target stays).
/// `NotFound` at any step means already gone (in `already_gone`, audit outcome `already-gone`).
///
/// Freed bytes are the re-measured allocated bytes of what was deleted. An inode with several
/// links counts only when all its links were deleted within this execute (the links met in
/// deleted items reach the highest `st_nlink` seen), and then once, in the first deleted item
/// (plan order) that held one of them; a file hard-linked from outside the deleted items frees
/// nothing.
///
/// A plan whose id does not match its contents (edited or corrupted) deletes nothing: the report
/// carries one [`ReclaimError::PlanMismatch`] with an empty path and no audit call is made.
pub fn execute(
    plan: &ReclaimPlan,
    catalogue: &Catalogue,
    probe: &dyn ProcessProbe,
    now: SystemTime,
    audit: &mut dyn FnMut(&AuditRecord),
) -> ReclaimReport {
    let mut report = ReclaimReport::default();
    let expected = plan_id(&plan.policy, &plan.roots, &plan.items);
    if expected != plan.id {
        let e = ReclaimError::PlanMismatch {
            found: plan.id.clone(),
            expected,
        };
        report.errors.push(e.entry(Path::new("")));
        return report;
    }
    probe.refresh();
    let protected = protected_paths(&plan.policy.protected);
    let protected = &protected;

    let mut deleted: Vec<(usize, DeletedItem, Vec<LinkSeen>)> = Vec::new();
    let linked = LinkedInodes::default();
    let linked = &linked;
    let (tx, rx) = mpsc::channel::<(usize, Outcome)>();
    std::thread::scope(|scope| {
        scope.spawn(move || {
            plan.items
                .par_iter()
                .enumerate()
                .for_each_with(tx, |tx, (i, item)| {
                    let outcome = attempt(item, plan, protected, catalogue, probe, linked, now);
                    // The receiver lives until every sender is dropped; a send cannot fail.
                    tx.send((i, outcome)).ok();
                });
        });
        for (i, outcome) in rx {
            let item = &plan.items[i];
            let text = match outcome {
                Outcome::Deleted(m) => {
                    deleted.push((
                        i,
                        DeletedItem {
                            path: item.path.clone(),
                            producer: item.producer.clone(),
                            allocated_bytes: m.single_link_bytes,
                        },
                        m.multi_link,
                    ));
                    "deleted".to_owned()
                }
                Outcome::Kept(reason) => {
                    let text = format!("skipped: {reason}");
                    report.kept.push(KeptItem {
                        path: item.path.clone(),
                        producer: item.producer.clone(),
                        reason,
                    });
                    text
                }
                Outcome::AlreadyGone => {
                    report.already_gone.push(item.path.clone());
                    "already-gone".to_owned()
                }
                Outcome::Failed(e) => {
                    report.errors.push(e.entry(&item.path));
                    format!("error: {e}")
                }
            };
            audit(&AuditRecord {
                time: now,
                path: item.path.clone(),
                producer: item.producer.clone(),
                allocated_bytes: item.allocated_bytes,
                outcome: text,
            });
        }
    });
    deleted.sort_by_key(|(i, _, _)| *i);
    add_freed_links(&mut deleted);
    report.freed_bytes = deleted.iter().map(|(_, d, _)| d.allocated_bytes).sum();
    report.deleted = deleted.into_iter().map(|(_, d, _)| d).collect();
    report.kept.sort_by(|a, b| a.path.cmp(&b.path));
    report.already_gone.sort();
    report.errors.sort_by(|a, b| a.path.cmp(&b.path));
    report
}

/// Adds to each deleted item the bytes of the multi-link inodes it freed: an inode whose links
/// met in deleted items number at least the highest `st_nlink` any walk saw (the first walk of it
/// ran before any of those links went), counted in the first item (in `deleted`'s order) holding
/// one of its links.
fn add_freed_links(deleted: &mut [(usize, DeletedItem, Vec<LinkSeen>)]) {
    // (dev, ino) -> (links met, highest nlink seen)
    let mut links: HashMap<(u64, u64), (u64, u64)> = HashMap::new();
    for l in deleted.iter().flat_map(|(_, _, ls)| ls) {
        let e = links.entry((l.dev, l.ino)).or_insert((0, 0));
        e.0 += 1;
        e.1 = e.1.max(l.nlink);
    }
    let mut counted: HashSet<(u64, u64)> = HashSet::new();
    for (_, d, ls) in deleted.iter_mut() {
        for l in ls.iter() {
            let key = (l.dev, l.ino);
            let all_met = links.get(&key).is_some_and(|(met, nlink)| met >= nlink);
            if all_met && counted.insert(key) {
                d.allocated_bytes += l.allocated_bytes;
            }
        }
    }
}

fn is_not_found(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::NotFound
}

fn changed(what: impl Into<String>) -> Outcome {
    Outcome::Kept(KeepReason::Changed { what: what.into() })
}

/// Re-checks one item and deletes it when every check passes.
fn attempt(
    item: &PlannedItem,
    plan: &ReclaimPlan,
    protected: &[PathBuf],
    catalogue: &Catalogue,
    probe: &dyn ProcessProbe,
    linked: &LinkedInodes,
    now: SystemTime,
) -> Outcome {
    let resolved = match resolve_inside_root(item) {
        Ok(Some(p)) => p,
        Ok(None) => return Outcome::AlreadyGone,
        Err(e) => return Outcome::Failed(e),
    };
    if resolved != item.path {
        return changed(format!("path now resolves to {}", resolved.display()));
    }
    if let Some(root) = held_root(&resolved, &plan.roots) {
        return Outcome::Kept(KeepReason::HoldsRoot { root: root.clone() });
    }
    if let Some(p) = held_protected(&[item.path.as_path(), resolved.as_path()], protected) {
        return Outcome::Kept(KeepReason::HoldsProtected { path: p.clone() });
    }
    let Some(rule) = catalogue.rule(&item.producer) else {
        return Outcome::Kept(KeepReason::UnknownProducer);
    };
    if rule_forbids(rule) {
        return Outcome::Kept(KeepReason::Never);
    }
    let md = match std::fs::symlink_metadata(&resolved) {
        Ok(md) => md,
        Err(e) if is_not_found(&e) => return Outcome::AlreadyGone,
        Err(source) => {
            return Outcome::Failed(ReclaimError::Stat {
                path: resolved,
                source,
            })
        }
    };
    if md.dev() != item.dev || md.ino() != item.ino {
        return changed(format!(
            "replaced since the plan: device/inode {}/{} is now {}/{}",
            item.dev,
            item.ino,
            md.dev(),
            md.ino()
        ));
    }
    if let (Some(planned), Ok(born)) = (item.born, md.created()) {
        if planned != born {
            return changed("replaced since the plan: the birth time differs (inode reused)");
        }
    }
    if md.file_type().is_symlink() != item.is_symlink {
        return changed("symlink-ness changed since the plan");
    }
    let owner = crate::owner::verdict(probe, rule, item.owner_pid, item.birth_time);
    if let Some(reason) = owner.keep_reason() {
        return Outcome::Kept(reason);
    }
    if let Some(open) = probe.open_file_under(&resolved) {
        return Outcome::Kept(KeepReason::InUse {
            pid: open.pid,
            path: open.path,
        });
    }
    let m = match remeasure(&resolved, &md, linked) {
        Ok(m) => m,
        Err(e) => return Outcome::Failed(e),
    };
    if m.other_device {
        return changed("another filesystem is mounted inside");
    }
    if let (Some(now_newest), Some(planned)) = (m.newest_mtime, item.newest_mtime) {
        if now_newest > planned {
            return changed("modified after the plan (newer mtime inside)");
        }
    }
    let age = age_secs(m.newest_mtime, item.name_ts, now);
    let needed = needed_secs(&plan.policy, rule);
    if age < needed {
        return Outcome::Kept(KeepReason::TooYoung {
            age_secs: age,
            needed_secs: needed,
        });
    }
    let removed = if md.is_dir() {
        std::fs::remove_dir_all(&resolved)
    } else {
        std::fs::remove_file(&resolved)
    };
    match removed {
        Ok(()) => Outcome::Deleted(m),
        Err(e) if is_not_found(&e) => Outcome::AlreadyGone,
        Err(source) => Outcome::Failed(ReclaimError::Remove {
            path: resolved,
            source,
        }),
    }
}

/// The item's path with its parent resolved, `Ok(None)` when the parent is gone.
///
/// # Errors
/// [`ReclaimError::BadPath`] for a path that is relative, has `.`/`..` or no final name;
/// [`ReclaimError::OutsideRoot`] when the resolved parent is not the root or inside it (so the
/// item is strictly inside); [`ReclaimError::Canonicalize`] when resolving fails otherwise.
fn resolve_inside_root(item: &PlannedItem) -> Result<Option<PathBuf>, ReclaimError> {
    let path = &item.path;
    let plain = path.is_absolute()
        && path
            .components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
    let (Some(parent), Some(name), true) = (path.parent(), path.file_name(), plain) else {
        return Err(ReclaimError::BadPath { path: path.clone() });
    };
    let canon_parent = match std::fs::canonicalize(parent) {
        Ok(p) => p,
        Err(e) if is_not_found(&e) => return Ok(None),
        Err(source) => {
            return Err(ReclaimError::Canonicalize {
                path: path.clone(),
                source,
            })
        }
    };
    let resolved = canon_parent.join(name);
    if !item.root.is_absolute() || !canon_parent.starts_with(&item.root) || resolved == item.root {
        return Err(ReclaimError::OutsideRoot {
            path: path.clone(),
            resolved,
            root: item.root.clone(),
        });
    }
    Ok(Some(resolved))
}
