//! Building a [`ReclaimPlan`] from an inventory: which claimed items may go, which stay and why.

use std::path::PathBuf;
use std::time::SystemTime;

use super::{
    held_protected, held_root, last_use_of, needed_secs, protected_paths, KeepReason, KeptItem,
    PlannedItem, Policy, ReclaimPlan,
};
use crate::catalogue::{Catalogue, ReclaimMode, Rule};
use crate::inventory::{Inventory, Item};
use crate::owner;
use crate::process::ProcessProbe;
use crate::roots::Root;

use super::keep::PlanGuards;

/// Plans a reclaim of `inv` under `policy`, at time `now`.
///
/// Candidates are claimed items only (unattributed entries are never planned) of the rules the
/// policy selects: with an empty `policy.producers`, every rule; otherwise only the named ones.
/// Items are kept, each with its [`KeepReason`], when the rule is `reclaim = "never"` or `kind =
/// "system"` (`Never`), `reclaim = "manual"` and not named (`Manual`), younger than max(threshold,
/// `min_age_secs`) (`TooYoung`), the owner rule keeps it ([`crate::owner::verdict`]: an item whose
/// name yields a pid is decided by that pid alone, `OwnerAlive` when it runs and started at or
/// before the item's birth; only an item whose name yields no pid is kept while one of the rule's
/// `owner.processes` runs, `AppRunning`), or a process holds a file under it open or mapped
/// (`InUse`). Rules selected but unknown to the
/// catalogue keep their items (`UnknownProducer`). An item that is a root of the inventory or holds
/// one (nested roots: a temp root inside a cache root) is kept (`HoldsRoot`). An item that is or
/// holds a protected path (`policy.protected` plus the user's home dir, as given and canonical) is
/// kept (`HoldsProtected`); the plan's policy carries that full list, so execute re-checks it and
/// the plan id covers it. An item that is one of its rule's `structure` dirs (a top-level
/// `com.apple.gpuarchiver`) is kept (`Structure`). An item the effective user cannot delete whole
/// (a dir in it, or its parent, not writable or searchable by them) is kept (`NotDeletable`, see
/// [`Planner::checking_access`]).
///
/// An item met twice (a root given twice, or once more through a symlink) is planned once: one
/// planned item per device and inode, one kept entry per path.
///
/// Calls `probe.refresh()` once, then only looks the snapshot up.
pub fn plan(
    inv: &Inventory,
    catalogue: &Catalogue,
    policy: &Policy,
    probe: &dyn ProcessProbe,
    now: SystemTime,
) -> ReclaimPlan {
    let planner = Planner::new(
        inv.roots.iter().map(|r| &r.root),
        catalogue,
        policy,
        probe,
        now,
    )
    .with_guards(PlanGuards::new(inv, probe))
    .checking_access();
    let mut items = Vec::new();
    let mut kept = Vec::new();
    for (root, item) in inv.items() {
        match planner.decide(root, item) {
            Some(Ok(p)) => items.push(p),
            Some(Err(k)) => kept.push(k),
            None => {}
        }
    }
    items.sort_by(|a, b| a.path.cmp(&b.path));
    kept.sort_by(|a, b| a.path.cmp(&b.path));
    // A root given twice (or once more through a symlink) lists its items twice: one entry per
    // device and inode, one kept entry per path.
    let mut seen = std::collections::HashSet::new();
    items.retain(|i| seen.insert((i.dev, i.ino)));
    kept.dedup_by(|a, b| a.path == b.path);
    let planned_bytes = items.iter().map(|i| i.allocated_bytes).sum();
    let planned_freeable_bytes = items.iter().map(|i| i.freeable_bytes).sum();
    let Planner { policy, roots, .. } = planner;
    ReclaimPlan {
        id: plan_id(&policy, &roots, &items),
        created: now,
        policy,
        items,
        kept,
        roots,
        planned_bytes,
        planned_freeable_bytes,
    }
}

/// The decision of [`plan`] for one item at a time, so a plan can be built while a scan streams
/// its items ([`super::plan_streamed`]) instead of from a held inventory.
pub struct Planner<'a> {
    catalogue: &'a Catalogue,
    probe: &'a dyn ProcessProbe,
    now: SystemTime,
    /// The policy with its full protected list (the home dir and canonical forms added).
    pub(super) policy: Policy,
    /// Every root (canonical and as given, sorted, deduplicated).
    pub(super) roots: Vec<PathBuf>,
    /// The keep rules that look past one item (mounts, unreadable parts, newest clones).
    pub(super) guards: PlanGuards,
    /// Whether an item about to be planned is first checked to be deletable whole by the
    /// effective user ([`Planner::checking_access`]).
    check_access: bool,
    /// The last parent dir the access check asked about.
    parents: super::access::ParentMemo,
}

impl<'a> Planner<'a> {
    /// A planner for items of `roots` under `policy` at `now`. Calls `probe.refresh()` once; each
    /// decision then only looks the snapshot up.
    pub fn new<'r>(
        roots: impl IntoIterator<Item = &'r Root>,
        catalogue: &'a Catalogue,
        policy: &Policy,
        probe: &'a dyn ProcessProbe,
        now: SystemTime,
    ) -> Planner<'a> {
        let policy = Policy {
            protected: protected_paths(&policy.protected),
            ..policy.clone()
        };
        let mut roots: Vec<PathBuf> = roots
            .into_iter()
            .flat_map(|r| [r.canonical.clone(), r.path.clone()])
            .filter(|p| p.is_absolute())
            .collect();
        roots.sort();
        roots.dedup();
        // Only items of these roots are asked about: the open files elsewhere need not be read.
        probe.scope_to(&roots);
        probe.refresh();
        Planner {
            catalogue,
            probe,
            now,
            policy,
            roots,
            guards: PlanGuards::mounts(),
            check_access: false,
            parents: Default::default(),
        }
    }

    /// This planner checking, for each item it would plan, that the effective user may delete it
    /// whole: its parent dir and every dir inside it writable and searchable
    /// (`faccessat(AT_EACCESS)`, never through a symlink); an item that is not is kept
    /// ([`KeepReason::NotDeletable`]). Costs a walk of the dirs of each planned item: plans shown
    /// to the user or executed turn it on ([`plan`], [`super::plan_streamed`], previews), the
    /// monitor's periodic figures do not.
    pub fn checking_access(mut self) -> Planner<'a> {
        self.check_access = true;
        self
    }

    /// This planner with `guards` in place of the mount-table-only ones [`Planner::new`] reads:
    /// give it [`PlanGuards::new`] of the inventory when the whole inventory is at hand.
    pub fn with_guards(mut self, guards: PlanGuards) -> Planner<'a> {
        self.guards = guards;
        self
    }

    /// The policy the plan is made under, its protected list complete.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Every root (canonical and as given, sorted, deduplicated).
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// The decision on one item of `root` (see [`plan`]): `None` when it is no candidate
    /// (unattributed, outside the root, or of a producer the policy does not select),
    /// `Some(Ok(_))` to delete it, `Some(Err(_))` to keep it with the reason. Does not
    /// deduplicate: an item met twice is decided twice.
    pub fn decide(&self, root: &Root, item: &Item) -> Option<Result<PlannedItem, KeptItem>> {
        let policy = &self.policy;
        let catalogue = self.catalogue;
        let id = item.producer.as_deref()?;
        if !root.contains(&item.path) {
            return None;
        }
        let named = policy.producers.iter().any(|p| p == id);
        if !policy.producers.is_empty() && !named {
            return None;
        }
        let resolved = item
            .path
            .strip_prefix(&root.path)
            .map_or_else(|_| item.path.clone(), |rel| root.canonical.join(rel));
        let forms = [item.path.as_path(), resolved.as_path()];
        let held = held_root(&item.path, &self.roots)
            .map(|r| KeepReason::HoldsRoot { root: r.clone() })
            .or_else(|| {
                held_protected(&forms, &policy.protected)
                    .map(|p| KeepReason::HoldsProtected { path: p.clone() })
            });
        let structure = root
            .relative(&item.path)
            .and_then(|rel| catalogue.structure_of(root.kind, rel))
            .is_some_and(|r| r.id == id);
        let decision = match (held, catalogue.rule(id)) {
            (Some(reason), _) => Err(reason),
            (None, None) => Err(KeepReason::UnknownProducer),
            (None, Some(_)) if structure => Err(KeepReason::Structure),
            (None, Some(rule)) => decide(
                catalogue, root, item, rule, named, policy, self.probe, self.now,
            ),
        }
        .and_then(|p| self.guards.keep_reason(&p.path).map_or(Ok(p), Err))
        .and_then(|p| match self.check_access {
            true => {
                use super::access::{first_not_deletable, Access};
                match first_not_deletable(&p.path, item.measure.dirs, &self.parents) {
                    Access::Deletable => Ok(p),
                    Access::Refused(path) => Err(KeepReason::NotDeletable { path }),
                    Access::NotChecked(path, e) => Err(KeepReason::NotChecked {
                        path,
                        error: std::io::Error::from(e).to_string(),
                    }),
                }
            }
            false => Ok(p),
        });
        Some(decision.map_err(|reason| KeptItem {
            path: item.path.clone(),
            producer: id.to_owned(),
            reason,
        }))
    }
}

#[allow(clippy::too_many_arguments)]
fn decide(
    catalogue: &Catalogue,
    root: &Root,
    item: &Item,
    rule: &Rule,
    named: bool,
    policy: &Policy,
    probe: &dyn ProcessProbe,
    now: SystemTime,
) -> Result<PlannedItem, KeepReason> {
    if !rule.reclaimable() {
        return Err(KeepReason::Never);
    }
    if rule.reclaim == ReclaimMode::Manual && !named {
        return Err(KeepReason::Manual);
    }
    if rule.versioned {
        if let Some(version) = catalogue.newest_version(rule, &item.path) {
            return Err(KeepReason::NewestVersion { version });
        }
    }
    if rule.id == super::staged::SPARKLE_INSTALLATION {
        let bundle = item.captures.bundle.as_deref().unwrap_or_default();
        if let Some(reason) = super::staged::keep_reason(&item.path, bundle, probe) {
            return Err(reason);
        }
    }
    let name_ts = item.captures.ts;
    let newest = item.measure.newest_mtime;
    let needed = needed_secs(policy, rule);
    // A cache ages from its last use: read the access times only when its changes say it is old
    // enough (an access can only make it younger).
    let mut age = super::read_age(newest, name_ts, now).age_secs;
    if age >= needed {
        let used = last_use_of(rule, || super::newest_access(&item.path));
        age = super::read_age_used(newest, used, name_ts, now).age_secs;
    }
    if age < needed {
        return Err(KeepReason::TooYoung {
            age_secs: age,
            needed_secs: needed,
        });
    }
    let owner_pid = owner::owner_pid(rule, &item.captures);
    let owner_app = owner::owner_app(rule, &item.captures);
    let birth_time = owner::birth_of(item);
    let verdict = owner::verdict(probe, rule, owner_pid, owner_app, birth_time);
    if let Some(reason) = verdict.keep_reason() {
        return Err(reason);
    }
    if let Some(name) = owner::app_in_item_running(probe, rule, &item.path) {
        return Err(KeepReason::AppRunning { name });
    }
    if let Some(open) = probe.open_file_under(&item.path) {
        return Err(KeepReason::InUse {
            pid: open.pid,
            path: open.path,
        });
    }
    Ok(PlannedItem {
        path: item.path.clone(),
        root: root.canonical.clone(),
        producer: rule.id.clone(),
        allocated_bytes: item.measure.allocated_bytes,
        apparent_bytes: item.measure.apparent_bytes,
        freeable_bytes: item.measure.freeable_bytes,
        age_secs: age,
        dev: item.dev,
        ino: item.ino,
        is_symlink: item.is_symlink,
        newest_mtime: item.measure.newest_mtime,
        name_ts,
        owner_pid,
        owner_app: owner_app.map(str::to_owned),
        birth_time,
        born: item.measure.birth_time,
    })
}

/// FNV-1a, 64 bits, from a given offset basis.
struct Fnv(u64);

impl Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// The plan id: two FNV-1a hashes (different bases) over the policy (threshold, producers,
/// protected paths), the roots and every planned item's path,
/// root, producer, device, inode, symlink flag, owner pid and times, as 32 hex digits. Stable across runs and Rust
/// versions (no `DefaultHasher`).
pub(super) fn plan_id(policy: &Policy, roots: &[PathBuf], items: &[PlannedItem]) -> String {
    plan_id_of(policy, roots, items)
}

/// [`plan_id`] of a plan whose items are read back one at a time (a spooled plan): the same id
/// the held plan of the same items, in the same order, has.
pub fn plan_id_of<'i>(
    policy: &Policy,
    roots: &[PathBuf],
    items: impl IntoIterator<Item = &'i PlannedItem>,
) -> String {
    let mut h = PlanHasher::new(policy, roots);
    for i in items {
        h.item(i);
    }
    h.finish()
}

/// The plan id computed item by item (see [`plan_id_of`]).
pub(super) struct PlanHasher {
    a: Fnv,
    b: Fnv,
}

impl PlanHasher {
    /// A hasher that has taken `policy` and `roots`.
    pub fn new(policy: &Policy, roots: &[PathBuf]) -> PlanHasher {
        use std::os::unix::ffi::OsStrExt;
        let mut h = PlanHasher {
            a: Fnv(0xcbf2_9ce4_8422_2325),
            b: Fnv(0x6c62_272e_07bb_0142),
        };
        h.both(&policy.older_than.as_secs().to_le_bytes());
        h.both(&policy.older_than.subsec_nanos().to_le_bytes());
        for p in &policy.producers {
            h.both(p.as_bytes());
            h.both(&[0]);
        }
        h.both(&[0xff]);
        for p in &policy.protected {
            h.both(p.as_os_str().as_bytes());
            h.both(&[0]);
        }
        h.both(&[0xff]);
        for r in roots {
            h.both(r.as_os_str().as_bytes());
            h.both(&[0]);
        }
        h.both(&[0xff]);
        h
    }

    fn both(&mut self, bytes: &[u8]) {
        self.a.write(bytes);
        self.b.write(bytes);
    }

    /// Takes the next planned item.
    pub fn item(&mut self, i: &PlannedItem) {
        use std::os::unix::ffi::OsStrExt;
        self.both(i.path.as_os_str().as_bytes());
        self.both(&[0]);
        self.both(i.root.as_os_str().as_bytes());
        self.both(&[0]);
        self.both(i.producer.as_bytes());
        self.both(&[0]);
        self.both(&i.dev.to_le_bytes());
        self.both(&i.ino.to_le_bytes());
        self.both(&[u8::from(i.is_symlink)]);
        self.both(&i.owner_pid.map_or([0; 5], |pid| {
            let mut v = [1; 5];
            v[1..].copy_from_slice(&pid.to_le_bytes());
            v
        }));
        for t in [i.newest_mtime, i.name_ts, i.birth_time, i.born] {
            self.both(&time_bytes(t));
        }
        if let Some(app) = &i.owner_app {
            self.both(app.as_bytes());
            self.both(&[0]);
        }
    }

    /// The id: 32 hex digits.
    pub fn finish(self) -> String {
        format!("{:016x}{:016x}", self.a.0, self.b.0)
    }
}

/// A tag byte and the nanoseconds since the epoch (negative before it).
fn time_bytes(t: Option<SystemTime>) -> [u8; 17] {
    let mut out = [0u8; 17];
    if let Some(t) = t {
        let nanos: i128 = match t.duration_since(std::time::UNIX_EPOCH) {
            Ok(d) => d.as_nanos() as i128,
            Err(e) => -(e.duration().as_nanos() as i128),
        };
        out[0] = 1;
        out[1..].copy_from_slice(&nanos.to_le_bytes());
    }
    out
}
