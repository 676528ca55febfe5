//! One planned item: re-check it through file descriptors, then delete it relative to its parent's
//! fd (see `tree.rs`).

use std::collections::HashMap;
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::time::SystemTime;

use super::execute::{Checkpoint, CheckpointFn};
use super::measure::{remeasure, LinkedInodes, Remeasure};
use super::tree::{self, ChildDir, RootDir, Walk};
use super::{
    held_protected, held_root, last_use_of, needed_secs, KeepReason, PlannedItem, Policy,
    ReclaimError,
};
use crate::catalogue::Catalogue;
use crate::platform::FileKind;
use crate::process::ProcessProbe;

/// What happened to one planned item.
pub(super) enum Outcome {
    Deleted(Remeasure),
    Kept(KeepReason),
    AlreadyGone,
    Failed(ReclaimError),
}

/// What every attempt of one execute shares.
pub(super) struct Context<'a> {
    /// The plan's policy (its protected list complete).
    pub policy: &'a Policy,
    /// Every root of the plan: no item may be or hold one.
    pub plan_roots: &'a [PathBuf],
    pub protected: &'a [PathBuf],
    pub catalogue: &'a Catalogue,
    pub probe: &'a dyn ProcessProbe,
    pub linked: &'a LinkedInodes,
    pub now: SystemTime,
    /// The plan's item roots, opened and locked; `None` for a root that is gone.
    pub roots: &'a HashMap<PathBuf, Option<RootDir>>,
    pub checkpoint: Option<&'a CheckpointFn<'a>>,
}

impl Context<'_> {
    fn reached(&self, at: Checkpoint, item: &PlannedItem) {
        if let Some(f) = self.checkpoint {
            f(at, item);
        }
    }
}

fn changed(what: impl Into<String>) -> Outcome {
    Outcome::Kept(KeepReason::Changed { what: what.into() })
}

fn mount_at(path: PathBuf) -> Outcome {
    Outcome::Kept(KeepReason::HoldsMount { path })
}

/// Re-checks one item and deletes it when every check passes.
pub(super) fn attempt(item: &PlannedItem, cx: &Context<'_>) -> Outcome {
    let rel = match tree::relative(&item.path, &item.root) {
        Ok(rel) => rel,
        Err(e) => return Outcome::Failed(e),
    };
    if let Some(root) = held_root(&item.path, cx.plan_roots) {
        return Outcome::Kept(KeepReason::HoldsRoot { root: root.clone() });
    }
    if let Some(p) = held_protected(&[item.path.as_path()], cx.protected) {
        return Outcome::Kept(KeepReason::HoldsProtected { path: p.clone() });
    }
    let Some(rule) = cx.catalogue.rule(&item.producer) else {
        return Outcome::Kept(KeepReason::UnknownProducer);
    };
    if !rule.reclaimable() {
        return Outcome::Kept(KeepReason::Never);
    }
    let Some(Some(root)) = cx.roots.get(&item.root) else {
        return Outcome::AlreadyGone;
    };
    let loc = match tree::locate(root, rel, &item.path) {
        Ok(Walk::Found(loc)) => loc,
        Ok(Walk::Gone) => return Outcome::AlreadyGone,
        Ok(Walk::Diverted(e)) => {
            return changed(format!(
                "the path to it now goes through a symlink, a non-dir or a mount point ({e})"
            ))
        }
        Err(e) => return Outcome::Failed(e),
    };
    if let Some(other) = cx
        .catalogue
        .claimed_above(rule.root, &item.root, rel, &item.producer)
    {
        return changed(format!(
            "it now lies inside an item of producer {:?}",
            other.id
        ));
    }
    if !Catalogue::signature_holds(rule, &item.root, rel) {
        return changed(format!(
            "it no longer holds what producer {:?} is known by",
            rule.id
        ));
    }
    let st = &loc.stat;
    if st.dev != item.dev || st.ino != item.ino {
        return changed(format!(
            "replaced since the plan: device/inode {}/{} is now {}/{}",
            item.dev, item.ino, st.dev, st.ino
        ));
    }
    if let (Some(planned), Some(born)) = (item.born, st.born) {
        if planned != born {
            return changed("replaced since the plan: the birth time differs (inode reused)");
        }
    }
    if (st.kind == FileKind::Symlink) != item.is_symlink {
        return changed("symlink-ness changed since the plan");
    }
    if root.fence.crossed_by(st) {
        return mount_at(item.path.clone());
    }
    let owner = crate::owner::verdict(
        cx.probe,
        rule,
        item.owner_pid,
        item.owner_app.as_deref(),
        item.birth_time,
    );
    if let Some(reason) = owner.keep_reason() {
        return Outcome::Kept(reason);
    }
    if let Some(name) = crate::owner::app_in_item_running(cx.probe, rule, &item.path) {
        return Outcome::Kept(KeepReason::AppRunning { name });
    }
    if let Some(open) = cx.probe.open_file_under(&item.path) {
        return Outcome::Kept(KeepReason::InUse {
            pid: open.pid,
            path: open.path,
        });
    }
    cx.reached(Checkpoint::Rechecked, item);
    let parent = loc.parent.as_ref().map_or(root.fd.as_fd(), AsFd::as_fd);
    let item_fd = if st.kind == FileKind::Dir {
        match tree::open_child(parent, &loc.name, &item.path, st, &root.fence) {
            Ok(ChildDir::Open(fd)) => Some(fd),
            Ok(ChildDir::Gone) => return Outcome::AlreadyGone,
            Ok(ChildDir::Mount) => return mount_at(item.path.clone()),
            Ok(ChildDir::Replaced) => return changed("replaced since the plan (while opening it)"),
            Err(e) => return Outcome::Failed(e),
        }
    } else {
        None
    };
    let item_dir = item_fd.as_ref().map(AsFd::as_fd);
    let m = match remeasure(item_dir, &item.path, st, &root.fence, cx.linked) {
        Ok(m) => m,
        Err(e) => return Outcome::Failed(e),
    };
    if let Some(p) = m.mount_inside {
        return mount_at(p);
    }
    if let (Some(now_newest), Some(planned)) = (m.newest_mtime, item.newest_mtime) {
        if now_newest > planned {
            return changed("modified after the plan (newer mtime inside)");
        }
    }
    let used = last_use_of(rule, || m.newest_atime);
    let age = super::read_age_used(m.newest_mtime, used, item.name_ts, cx.now).age_secs;
    let needed = needed_secs(cx.policy, rule);
    if age < needed {
        return Outcome::Kept(KeepReason::TooYoung {
            age_secs: age,
            needed_secs: needed,
        });
    }
    cx.reached(Checkpoint::BeforeDelete, item);
    if let Some(dir) = item_dir {
        if let Err(e) = super::beneath::remove_contents(dir, &item.path, &root.fence) {
            return Outcome::Failed(e);
        }
    }
    // The name must still name the item: a dir swapped in under its name is left alone.
    match crate::platform::stat_at(parent, &loc.name) {
        Ok(now) if now.dev == item.dev && now.ino == item.ino => {}
        Ok(_) if item_dir.is_some() => {
            return Outcome::Failed(ReclaimError::ChangedWhileDeleting {
                path: item.path.clone(),
                what: "its emptied dir was moved away and another entry took its name",
            })
        }
        Ok(_) => return changed("replaced just before its removal"),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Outcome::AlreadyGone,
        Err(source) => {
            return Outcome::Failed(ReclaimError::Stat {
                path: item.path.clone(),
                source,
            })
        }
    }
    match tree::unlink(parent, &loc.name, item_dir.is_some(), &item.path) {
        Ok(true) => Outcome::Deleted(m),
        Ok(false) => Outcome::AlreadyGone,
        Err(e) => Outcome::Failed(e),
    }
}
