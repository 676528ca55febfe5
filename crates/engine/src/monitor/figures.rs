//! The figures that need the process table: reclaimable bytes and items at the current threshold
//! and orphan bytes (owner pid in the name dead or reused, by the same owner rule the plan applies:
//! [`crate::owner::item_verdict`]), per producer, and per producer the age histogram of what a
//! reclaim could take but for age ([`AgeHistogram`]), so a threshold preview needs no walk.
//!
//! One dry plan pass at threshold zero ([`reclaim::PlanPass`], the mount table read once, the
//! newest-clone guard over every clone at once) over the claimed items in chunks: an item planned
//! at zero is one a reclaim takes once it is old enough, so the figures at the current threshold
//! and at any other are read from its age.

mod guards;
mod histogram;
mod plans;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use crate::catalogue::Catalogue;
use crate::owner;
use crate::process::{ProcessProbe, SystemProbe};
use crate::reclaim::{self, KeepReason, Policy};
use crate::roots::RootKind;
use crate::shapes::{self, ShapeGroup, Writer};
use crate::watch::live::{RootState, TOP_UNATTRIBUTED};

pub use guards::GuardInputs;
pub use histogram::{AgeHistogram, Take};
pub(crate) use plans::{plan_states, spool_states};

/// Reclaim figures of one producer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProducerFigures {
    /// Allocated bytes of items whose owner pid (in the name, for a rule with `owner.pid_in_name`)
    /// is dead or reused ([`crate::owner::OwnerVerdict::is_orphan`], the plan's owner rule with its
    /// start-time slack). Items whose name yields no pid are never counted.
    pub orphan_bytes: u64,
    /// Allocated bytes a reclaim at the threshold would delete.
    pub reclaimable_bytes: u64,
    /// Items a reclaim at the threshold would delete.
    pub reclaimable_items: u64,
}

/// Reclaim figures of every producer. Two are equal when what the snapshot shows of them is
/// (the figures and the next crossing): the histograms and the time computed are left out, so a
/// refresh that changed nothing publishes nothing.
#[derive(Debug, Clone, Default)]
pub struct Figures {
    /// By producer id.
    pub producers: BTreeMap<String, ProducerFigures>,
    /// By producer id: the items a reclaim would take but for their age (planned at threshold
    /// zero), by age.
    pub histograms: BTreeMap<String, AgeHistogram>,
    /// When these figures were computed (`None`: never).
    pub computed_at: Option<SystemTime>,
    /// The earliest time an item kept only for being too young reaches its needed age (the
    /// figures are stale from then on, with no file event); `None` when no item waits for age.
    pub next_crossing: Option<SystemTime>,
    /// The unattributed entries grouped by name shape, with their writers (largest first, at
    /// most [`GROUPS_SHOWN`]).
    pub groups: Vec<GroupFigures>,
    /// Groups left out for their shape label being ignored (config `[groups] ignore`).
    pub hidden_groups: u64,
    /// Per root, the largest top-level unattributed entries that joined no group (at most
    /// [`TOP_UNATTRIBUTED`] each), full paths: what the snapshot lists as unattributed beside
    /// the live largest entries, so a group's members never fill that list.
    pub lone: Vec<PathBuf>,
    /// What the computation asked the process table (and the open files and mounts under the
    /// roots): while these answers hold, the inventory is unchanged and no item crossed the
    /// threshold, a new computation gives the same figures.
    pub guards: Option<GuardInputs>,
}

/// A group of unattributed entries of one root, with the processes seen writing into it.
#[derive(Debug, Clone)]
pub struct GroupFigures {
    /// The root's kind.
    pub root_kind: RootKind,
    /// The root's canonical path.
    pub root: PathBuf,
    /// The group.
    pub group: ShapeGroup,
    /// Processes holding a file open inside a member (at most three).
    pub writers: Vec<Writer>,
    /// What names the members' writer, strongest first ([`super::provenance::group_evidence`]),
    /// with the writers the history database remembers that no longer show: empty until
    /// [`Figures::add_evidence`].
    pub evidence: Vec<cachewatch_core::provenance::Evidence>,
    /// The key the group's history is stored under ([`crate::history::group_key`]).
    pub key: Vec<u8>,
    /// Every writer named has exited while the members remain (and the process table was looked
    /// at to say so): a confirmed leak of the group's bytes.
    pub confirmed_leak: bool,
    /// The other roots of the same kind (canonical paths), where a rule made from the group
    /// claims too: filled when the group is handed out to act on (`MonitorHandle::group`),
    /// empty in the figures.
    pub others: Vec<PathBuf>,
}

impl PartialEq for GroupFigures {
    /// Equal when what the snapshot shows of them is.
    fn eq(&self, o: &GroupFigures) -> bool {
        self.root == o.root
            && self.group.shape == o.group.shape
            && self.group.within == o.group.within
            && self.group.items == o.group.items
            && self.group.measure == o.group.measure
            && self.group.oldest_mtime == o.group.oldest_mtime
            && self.group.examples == o.group.examples
            && self.writers == o.writers
            && self.evidence == o.evidence
            && self.confirmed_leak == o.confirmed_leak
    }
}

impl PartialEq for Figures {
    fn eq(&self, other: &Figures) -> bool {
        self.producers == other.producers
            && self.next_crossing == other.next_crossing
            && self.groups == other.groups
            && self.hidden_groups == other.hidden_groups
    }
}

/// Groups of unattributed entries the snapshot (and `/metrics`) carries, at most: bounds the
/// label cardinality of `cachewatch_unattributed_group_bytes{root,shape}`.
pub const GROUPS_SHOWN: usize = 20;

/// Writers named per group, at most.
const WRITERS_PER_GROUP: usize = 3;

/// The groups of every root, largest allocated first, at most [`GROUPS_SHOWN`], each with the
/// processes of `probe` (refreshed) writing into it; those whose shape label is in `ignored` are
/// left out (and counted: the second value).
fn shape_groups(
    roots: &[RootState],
    probe: &dyn ProcessProbe,
    ignored: &[String],
) -> (Vec<GroupFigures>, u64, Vec<PathBuf>) {
    let mut all: Vec<(&RootState, ShapeGroup)> = Vec::new();
    let mut lone_paths = Vec::new();
    for st in roots {
        let grouped = st.shape_groups();
        let mut lone = grouped.lone;
        lone.sort_by(|a, b| {
            b.measure
                .allocated_bytes
                .cmp(&a.measure.allocated_bytes)
                .then_with(|| a.name.cmp(&b.name))
        });
        lone_paths.extend(
            lone.iter()
                .take(TOP_UNATTRIBUTED)
                .map(|l| st.root.canonical.join(&l.name)),
        );
        all.extend(grouped.groups.into_iter().map(|g| (st, g)));
    }
    let before = all.len();
    if !ignored.is_empty() {
        all.retain(|(_, g)| !ignored.contains(&g.label()));
    }
    let hidden = (before - all.len()) as u64;
    all.sort_by(|a, b| {
        b.1.measure
            .allocated_bytes
            .cmp(&a.1.measure.allocated_bytes)
            .then_with(|| a.0.root.canonical.cmp(&b.0.root.canonical))
            .then_with(|| a.1.label().cmp(&b.1.label()))
    });
    all.truncate(GROUPS_SHOWN);
    let shown = all
        .into_iter()
        .map(|(st, group)| {
            let writers = shapes::writers(probe, &st.root.canonical, &[&group], WRITERS_PER_GROUP)
                .into_iter()
                .flatten()
                .collect();
            GroupFigures {
                key: crate::history::group_key(
                    &st.root.canonical,
                    group.within.as_deref(),
                    &group.key,
                ),
                root_kind: st.root.kind,
                root: st.root.canonical.clone(),
                group,
                writers,
                evidence: Vec::new(),
                confirmed_leak: false,
                others: Vec::new(),
            }
        })
        .collect();
    (shown, hidden, lone_paths)
}

/// Claimed items handed out at a time to a plan (the monitor's default `plan_chunk`): bounds its
/// memory (the items of a chunk) whatever the size of the inventory.
pub(crate) const CHUNK: usize = 8192;

/// Claimed items handed out at a time to the figures: a refresh runs every few seconds to minutes
/// for as long as the monitor runs, so its chunk is smaller than a plan's (2048 items with their
/// paths, about 0.7 MB) and the resident set moves less while it runs; the time per item is the
/// same.
const FIGURES_CHUNK: usize = 2048;

/// A probe refreshed once for a whole refresh: the plan of each chunk would refresh it again.
pub(crate) struct Refreshed<'a>(pub(crate) &'a dyn ProcessProbe);

impl ProcessProbe for Refreshed<'_> {
    fn process(&self, pid: u32) -> Option<crate::process::ProcessInfo> {
        self.0.process(pid)
    }
    fn is_running(&self, name: &str) -> bool {
        self.0.is_running(name)
    }
    fn app_running(&self, app: &str) -> bool {
        self.0.app_running(app)
    }
    fn application_dirs(&self) -> Vec<std::path::PathBuf> {
        self.0.application_dirs()
    }
    fn open_file_under(&self, dir: &std::path::Path) -> Option<crate::process::OpenFile> {
        self.0.open_file_under(dir)
    }
    fn open_files_under(
        &self,
        dir: &std::path::Path,
        limit: usize,
    ) -> Vec<crate::process::OpenFile> {
        self.0.open_files_under(dir, limit)
    }
    fn refresh(&self) {}
    fn refresh_open_files(&self) {}
}

impl Figures {
    /// Computes the figures for the claimed items of `roots`: a dry plan naming every producer
    /// that has items (so manual rules count too; `never` and `system` rules plan nothing), and the
    /// owner verdict of every item of a known rule. The items are handed out in chunks of
    /// [`FIGURES_CHUNK`], so the memory used does not grow with the inventory (the time does: one pass
    /// over the items). Blocking (reads the process table once, the mount table once).
    pub fn compute(
        roots: &[RootState],
        catalogue: &Catalogue,
        threshold: Duration,
        protected: Vec<PathBuf>,
        ignored: &[String],
        now: SystemTime,
    ) -> Figures {
        // Only open files under the roots matter: a neighbour's thousands of mappings elsewhere
        // are never collected.
        let probe = SystemProbe::under(roots.iter().map(|st| st.root.canonical.clone()));
        Figures::compute_with(roots, catalogue, threshold, protected, ignored, &probe, now)
    }

    /// [`Figures::compute`] against `probe` (refreshed once, before any lookup).
    pub fn compute_with(
        roots: &[RootState],
        catalogue: &Catalogue,
        threshold: Duration,
        protected: Vec<PathBuf>,
        ignored: &[String],
        probe: &dyn ProcessProbe,
        now: SystemTime,
    ) -> Figures {
        let mut out = Figures {
            computed_at: Some(now),
            ..Figures::default()
        };
        probe.refresh();
        let root_paths: Vec<PathBuf> = roots.iter().map(|st| st.root.canonical.clone()).collect();
        let recording = guards::Recording::new(probe);
        (out.groups, out.hidden_groups, out.lone) = shape_groups(roots, &recording, ignored);
        let mut ids: Vec<String> = roots
            .iter()
            .flat_map(|st| st.producers().keys().map(|id| id.to_string()))
            .collect();
        ids.sort();
        ids.dedup();
        if ids.is_empty() {
            out.guards = Some(recording.finish(&root_paths));
            return out;
        }
        // At threshold zero: every item the plan would take once old enough is planned.
        let policy = Policy {
            older_than: Duration::ZERO,
            producers: ids,
            protected,
        };
        let probe = Refreshed(&recording);
        let mut pass = reclaim::PlanPass::new(
            roots.iter().map(|st| &st.root),
            catalogue,
            &policy,
            &probe,
            now,
            roots
                .iter()
                .flat_map(|st| st.issues.iter().map(|i| i.path.clone())),
        );
        let threshold = threshold.as_secs();
        for st in roots {
            st.for_each_claimed(FIGURES_CHUNK, |items| {
                for item in &items {
                    out.add_orphan(catalogue, &probe, item);
                    if let Some(d) = pass.decide(&st.root, item) {
                        out.add(catalogue, threshold, d, now);
                    }
                }
            });
        }
        pass.finish(|_, d| out.add(catalogue, threshold, d, now));
        out.guards = Some(recording.finish(&root_paths));
        out
    }

    /// Names the writers of the groups from the members' names and births against the
    /// processes `seen` (and the holders already found, and those seen holding a member when it
    /// changed): one pass over each root's unattributed items, at most
    /// [`super::provenance::MEMBERS_LOOKED_AT`] members a group (the dir of a group one level down
    /// is listed), one `lstat` per sighting of a holder under the root. The writers `stored` in
    /// the history database (by group key) that the evidence no longer shows are added back,
    /// alive when the latest sample saw a process of that name. Blocking.
    pub fn add_evidence(
        &mut self,
        roots: &[RootState],
        seen: &super::provenance::Seen,
        stored: &super::recorder::StoredWriters,
    ) {
        let history = &seen.history;
        for st in roots {
            let mine: Vec<usize> = (0..self.groups.len())
                .filter(|&i| self.groups[i].root == st.root.canonical)
                .collect();
            if mine.is_empty() {
                continue;
            }
            let shapes: Vec<&ShapeGroup> = mine.iter().map(|&i| &self.groups[i].group).collect();
            let members = st.group_members(&shapes, super::provenance::MEMBERS_LOOKED_AT);
            for (&i, members) in mine.iter().zip(members) {
                let g = &self.groups[i];
                let mut evidence =
                    super::provenance::group_evidence(&members, g.group.items, &g.writers, history);
                let sighted: Vec<_> = seen
                    .held
                    .sightings()
                    .iter()
                    .filter(|s| s.in_group(&g.root, &g.group))
                    .collect();
                super::provenance::held::add_sighted(
                    &mut evidence,
                    &g.writers,
                    &sighted,
                    g.group.items,
                    history,
                );
                let remembered = stored.get(&g.key).map(Vec::as_slice).unwrap_or_default();
                super::provenance::add_remembered(&mut evidence, remembered, history);
                let confirmed =
                    super::provenance::confirmed_leak(&evidence, g.group.items, history);
                self.groups[i].evidence = evidence;
                self.groups[i].confirmed_leak = confirmed;
            }
        }
    }

    fn add_orphan(
        &mut self,
        catalogue: &Catalogue,
        probe: &dyn ProcessProbe,
        item: &crate::inventory::Item,
    ) {
        let Some(id) = item.producer.as_deref() else {
            return;
        };
        let fig = match self.producers.get_mut(id) {
            Some(f) => f,
            None => self.producers.entry(id.to_owned()).or_default(),
        };
        let orphan = catalogue
            .rule(id)
            .is_some_and(|rule| owner::item_verdict(probe, rule, item).is_orphan());
        if orphan {
            fig.orphan_bytes += item.measure.allocated_bytes;
        }
    }

    /// Adds one decision of the zero-threshold pass: a planned item to its histogram and, when
    /// at least max(`threshold`, floor) seconds old, to the reclaimable figures; an item too young
    /// even for the floor only to the next crossing.
    fn add(
        &mut self,
        catalogue: &Catalogue,
        threshold: u64,
        d: reclaim::Decision,
        now: SystemTime,
    ) {
        let wait = match d {
            Ok(p) => {
                let floor = catalogue.rule(&p.producer).map_or(0, |r| r.min_age_secs);
                let needed = threshold.max(floor);
                let hist = match self.histograms.get_mut(&p.producer) {
                    Some(h) => h,
                    None => self
                        .histograms
                        .entry(p.producer.clone())
                        .or_insert_with(|| AgeHistogram::new(floor)),
                };
                hist.add(p.age_secs, p.allocated_bytes, p.freeable_bytes, now);
                if p.age_secs >= needed {
                    let fig = self.producers.entry(p.producer).or_default();
                    fig.reclaimable_bytes += p.allocated_bytes;
                    fig.reclaimable_items += 1;
                    None
                } else {
                    Some(needed - p.age_secs)
                }
            }
            Err(k) => match k.reason {
                KeepReason::TooYoung {
                    age_secs,
                    needed_secs,
                } => Some(needed_secs.saturating_sub(age_secs)),
                _ => None,
            },
        };
        // A crossing past the end of time never comes (a user rule's `min_age_secs` is any u64).
        if let Some(at) = wait.and_then(|w| now.checked_add(Duration::from_secs(w))) {
            self.next_crossing = Some(self.next_crossing.map_or(at, |t| t.min(at)));
        }
    }

    /// What a reclaim of `producers` (empty: every `reclaim = "auto"` producer, as a plan
    /// selects them) at `threshold` would take at `now`, per producer with something to take,
    /// from the histograms (no walk over the items): exact to the bucket width
    /// ([`AgeHistogram::take_at`]). Only what the last refresh saw: items created, changed or
    /// removed since are not in it.
    pub fn take_at(
        &self,
        catalogue: &Catalogue,
        producers: &[String],
        threshold: Duration,
        now: SystemTime,
    ) -> BTreeMap<String, Take> {
        let selected = |id: &str| {
            if producers.is_empty() {
                catalogue
                    .rule(id)
                    .is_some_and(|r| r.reclaim == crate::catalogue::ReclaimMode::Auto)
            } else {
                producers.iter().any(|p| p == id)
            }
        };
        self.histograms
            .iter()
            .filter(|(id, _)| selected(id))
            .map(|(id, h)| (id.clone(), h.take_at(threshold.as_secs(), now)))
            .filter(|(_, t)| t.items > 0)
            .collect()
    }
}

/// The owner and app guards (the process table) are re-read at least this often, so a process that
/// starts or exits changes the figures with no file event.
pub(super) const GUARD_INTERVAL: Duration = Duration::from_secs(10);
/// After a change to the inventory, the figures are recomputed at most once per this many times
/// the cost of the last computation (at most 1/20 of a core on a large inventory), and never twice
/// in a second.
const COST_FACTOR: u32 = 20;
const MIN_GAP: Duration = Duration::from_secs(1);
/// With the inventory unchanged (only the clock and the process table move), at most once per this
/// many times the cost. On 700,000 items (about 1.5 s a computation) the guards and the ages are
/// then followed every 5 minutes or so; on a small inventory every [`GUARD_INTERVAL`]. When only
/// the guards are due, the monitor first asks a fresh process table what the last computation
/// asked ([`GuardInputs::still_hold`], a few ms) and computes again only when an answer changed.
/// A reclaim checks both again for itself, item by item.
const IDLE_COST_FACTOR: u32 = 200;

/// Whether the monitor's tick recomputes the figures: never before; when the inventory changed
/// (`stale`), after at least `COST_FACTOR` x `cost` and a second since the last one (`since_last`);
/// otherwise, after at least `IDLE_COST_FACTOR` x `cost`, when an item crossed the threshold by the
/// clock (`now` past [`Figures::next_crossing`]) or [`GUARD_INTERVAL`] passed.
pub(super) fn refresh_due(
    figures: &Figures,
    stale: bool,
    since_last: Option<Duration>,
    cost: Duration,
    now: SystemTime,
) -> bool {
    let Some(since) = since_last else {
        return true;
    };
    if since < (cost * COST_FACTOR).max(MIN_GAP) {
        return false;
    }
    if stale {
        return true;
    }
    since >= cost * IDLE_COST_FACTOR
        && (since >= GUARD_INTERVAL || figures.next_crossing.is_some_and(|t| now >= t))
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    #[test]
    fn a_large_inventory_at_rest_is_recomputed_every_200_times_its_cost() {
        // 700,000 items: a computation takes about 1.5 s.
        let cost = Duration::from_millis(1_500);
        let now = SystemTime::UNIX_EPOCH + S(1_000_000);
        let idle = Figures::default();
        assert!(
            !refresh_due(&idle, false, Some(S(30)), cost, now),
            "guards alone: not yet"
        );
        assert!(!refresh_due(&idle, false, Some(S(299)), cost, now));
        assert!(refresh_due(&idle, false, Some(S(300)), cost, now));
        let crossed = Figures {
            next_crossing: Some(now - S(1)),
            ..Figures::default()
        };
        assert!(
            !refresh_due(&crossed, false, Some(S(120)), cost, now),
            "a crossing waits too"
        );
        assert!(refresh_due(&crossed, false, Some(S(300)), cost, now));
        // A change to the inventory is shown sooner: 20 times the cost.
        assert!(!refresh_due(&idle, true, Some(S(29)), cost, now));
        assert!(refresh_due(&idle, true, Some(S(30)), cost, now));
        assert!(refresh_due(&idle, false, None, cost, now), "never computed");
    }

    #[test]
    fn a_small_inventory_follows_the_clock_and_the_process_table_closely() {
        let cost = Duration::from_millis(10);
        let now = SystemTime::UNIX_EPOCH + S(1_000_000);
        let idle = Figures::default();
        assert!(!refresh_due(&idle, false, Some(S(9)), cost, now));
        assert!(refresh_due(&idle, false, Some(GUARD_INTERVAL), cost, now));
        let crossed = Figures {
            next_crossing: Some(now),
            ..Figures::default()
        };
        assert!(refresh_due(&crossed, false, Some(S(2)), cost, now));
        assert!(!refresh_due(
            &crossed,
            false,
            Some(Duration::from_millis(999)),
            cost,
            now
        ));
        let later = Figures {
            next_crossing: Some(now + S(1)),
            ..Figures::default()
        };
        assert!(
            !refresh_due(&later, false, Some(S(5)), cost, now),
            "not crossed yet"
        );
        assert!(refresh_due(&idle, true, Some(S(1)), cost, now));
    }
}
