//! A reclaim plan made while the scan streams its items ([`plan_streamed`]): its summary is summed
//! on the fly and its items go to spools (memory while short, an unlinked temp file once long),
//! so planning and executing 700k items keeps memory flat. Execute reads the planned items back
//! in batches ([`StreamedPlan::planned`]) through [`super::Executor::streamed`].

use std::collections::{BTreeMap, HashSet};
use std::hash::{Hash, Hasher};
use std::io;
use std::path::PathBuf;
use std::time::SystemTime;

use super::spool::Spool;
use super::{KeepReason, KeptItem, PlanGuards, PlannedItem, Planner, Policy};
use crate::catalogue::Catalogue;
use crate::inventory::Item;
use crate::process::ProcessProbe;
use crate::roots::{Root, RootKind};
use crate::scan::{scan_root_each, RootSummary, ScanProgress};

/// One producer's planned items, summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProducerPlan {
    /// Items planned (a count).
    pub items: u64,
    /// Their allocated bytes at scan time.
    pub allocated_bytes: u64,
    /// Their freeable bytes at scan time (allocated less blocks shared with clones).
    pub freeable_bytes: u64,
    /// The oldest one's age, seconds.
    pub oldest_age_secs: u64,
}

/// Kept items of one producer for one kind of reason, summed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptGroup {
    /// Items kept (a count).
    pub items: u64,
    /// The reason of the first one met, as an example.
    pub example: KeepReason,
}

/// What a streamed plan holds in memory: sums, never the items.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlanSummary {
    /// Items planned (a count).
    pub planned_items: u64,
    /// Sum of the planned items' allocated bytes.
    pub planned_bytes: u64,
    /// Sum of the planned items' freeable bytes.
    pub planned_freeable_bytes: u64,
    /// Planned items per producer id.
    pub producers: BTreeMap<String, ProducerPlan>,
    /// Items kept (a count).
    pub kept_items: u64,
    /// Kept items per (producer id, reason kind as serialized, e.g. `too-young`).
    pub kept: BTreeMap<(String, String), KeptGroup>,
}

/// A plan whose items live in spools: the summary in memory, the items read back on demand.
pub struct StreamedPlan {
    /// When the plan was made.
    pub created: SystemTime,
    /// The policy, its protected list complete (the home dir and canonical forms added).
    pub policy: Policy,
    /// Every root (canonical and as given, sorted, deduplicated): no item may be or hold one.
    pub roots: Vec<PathBuf>,
    /// The canonical roots the planned items lie in.
    pub item_roots: Vec<PathBuf>,
    /// The sums.
    pub summary: PlanSummary,
    /// Each root's scan summary (totals, issues), in the order given.
    pub scans: Vec<RootSummary>,
    planned: Spool<PlannedItem>,
    kept: Spool<KeptItem>,
}

impl StreamedPlan {
    /// The planned items: in path order when there are at most 16,384, else in scan order
    /// (sorting would hold them all). Each call reads them afresh.
    pub fn planned(&self) -> impl Iterator<Item = io::Result<PlannedItem>> + '_ {
        self.planned.iter()
    }

    /// The kept items (ordered as [`StreamedPlan::planned`]).
    pub fn kept(&self) -> impl Iterator<Item = io::Result<KeptItem>> + '_ {
        self.kept.iter()
    }

    /// True when the items are in path order (few enough to sort in memory).
    pub fn in_path_order(&self) -> bool {
        self.planned.in_memory() && self.kept.in_memory()
    }

    /// The plan id ([`super::plan_id_of`] over the planned items as [`StreamedPlan::planned`]
    /// reads them): one pass over the spool.
    ///
    /// # Errors
    /// Reading the spool's temp file back.
    pub fn id(&self) -> io::Result<String> {
        let mut err = None;
        let items = self.planned().map_while(|r| match r {
            Ok(i) => Some(i),
            Err(e) => {
                err = Some(e);
                None
            }
        });
        let mut h = super::plan::PlanHasher::new(&self.policy, &self.roots);
        for i in items {
            h.item(&i);
        }
        match err {
            Some(e) => Err(e),
            None => Ok(h.finish()),
        }
    }
}

/// Where decisions made item by item go ([`super::PlanPass`], [`Planner::decide`]): the sums of a
/// [`PlanSummary`] and the items in spools, one planned entry per device and inode, one kept
/// entry per path, as [`plan_streamed`] keeps them.
#[derive(Default)]
pub struct PlanSink(State);

impl PlanSink {
    /// An empty sink.
    pub fn new() -> PlanSink {
        PlanSink::default()
    }

    /// An empty sink for items that cannot be met twice (no root is, holds or lies in another):
    /// it keeps no set of the items seen (16 bytes per planned item, 8 per kept one, saved).
    pub fn distinct() -> PlanSink {
        PlanSink(State {
            distinct: true,
            ..State::default()
        })
    }

    /// Takes one decision.
    ///
    /// # Errors
    /// Creating or writing a spool's temp file.
    pub fn add(&mut self, decision: Result<PlannedItem, KeptItem>) -> io::Result<()> {
        match decision {
            Ok(p) => self.0.plan(p),
            Err(k) => self.0.keep(k),
        }
    }

    /// The sums so far.
    pub fn summary(&self) -> &PlanSummary {
        &self.0.summary
    }

    /// The plan of the decisions taken, made by `planner` at `created` (no scan summaries).
    ///
    /// # Errors
    /// Writing a spool's temp file.
    pub fn finish(self, planner: &Planner<'_>, created: SystemTime) -> io::Result<StreamedPlan> {
        let mut st = self.0;
        st.planned.sort_in_memory_by(|a, b| a.path.cmp(&b.path));
        st.kept.sort_in_memory_by(|a, b| a.path.cmp(&b.path));
        st.planned.flush()?;
        st.kept.flush()?;
        let mut item_roots: Vec<PathBuf> = st.item_roots.into_iter().collect();
        item_roots.sort();
        Ok(StreamedPlan {
            created,
            policy: planner.policy().clone(),
            roots: planner.roots().to_vec(),
            item_roots,
            summary: st.summary,
            scans: Vec::new(),
            planned: st.planned,
            kept: st.kept,
        })
    }
}

/// Scans `roots` with `catalogue` and plans a reclaim of them under `policy` at `now`, one item
/// at a time as the scan hands them over (the decisions of [`super::plan`], with
/// [`Planner::decide`]): planned and kept items go to spools, the summary is summed. An item met
/// twice (a root given twice) is planned once per device and inode and kept once per path.
/// `progress` is the scan's ([`ScanProgress`]): a cancel stops the scan, and the plan then covers
/// what was scanned (each scan says `cancelled`).
///
/// # Errors
/// Creating, writing or reading a spool's temp file. Nothing is deleted by planning.
pub fn plan_streamed(
    roots: &[Root],
    catalogue: &Catalogue,
    policy: &Policy,
    probe: &dyn ProcessProbe,
    now: SystemTime,
    progress: &ScanProgress,
) -> io::Result<StreamedPlan> {
    let planner = Planner::new(roots, catalogue, policy, probe, now).checking_access();
    let mut st = State::default();
    let mut scans = Vec::with_capacity(roots.len());
    // Items of code-sign-clones roots (a few dozen app copies at most), for the newest-clone guard.
    let mut clones: Vec<(Root, Item)> = Vec::new();
    // An item is scanned (and planned) in the innermost root holding it only.
    let mut marked = roots.to_vec();
    crate::roots::mark_nested(&mut marked);
    for root in &marked {
        let scan = scan_root_each(root, catalogue, progress, |item| {
            if st.error.is_some() {
                return;
            }
            if root.kind == RootKind::CodeSignClones && item.producer.is_some() {
                clones.push((root.clone(), item.clone()));
            }
            let r = match planner.decide(root, &item) {
                Some(Ok(p)) => st.plan(p),
                Some(Err(k)) => st.keep(k),
                None => Ok(()),
            };
            if let Err(e) = r {
                st.error = Some(e);
            }
        });
        scans.push(scan);
    }
    if let Some(e) = st.error {
        return Err(e);
    }
    // The guards that need the whole scan (what it could not read, the newest clone of each
    // running app) are known only now: planned items they keep move to the kept list.
    let late = PlanGuards::default().with_scan(
        scans
            .iter()
            .flat_map(|s| s.issues.iter().map(|i| i.path.clone())),
        clones.iter().map(|(r, i)| (r, i)),
        probe,
    );
    drop(clones);
    if !late.mounts_only() {
        st = st.regroup(&late)?;
    }
    st.planned.sort_in_memory_by(|a, b| a.path.cmp(&b.path));
    st.kept.sort_in_memory_by(|a, b| a.path.cmp(&b.path));
    st.planned.flush()?;
    st.kept.flush()?;
    let mut item_roots: Vec<PathBuf> = st.item_roots.into_iter().collect();
    item_roots.sort();
    Ok(StreamedPlan {
        created: now,
        policy: planner.policy().clone(),
        roots: planner.roots().to_vec(),
        item_roots,
        summary: st.summary,
        scans,
        planned: st.planned,
        kept: st.kept,
    })
}

/// What [`plan_streamed`] builds while the scan runs.
#[derive(Default)]
struct State {
    summary: PlanSummary,
    planned: Spool<PlannedItem>,
    kept: Spool<KeptItem>,
    /// (device, inode) of every planned item: 16 bytes each, the one per-item cost in memory.
    seen: HashSet<(u64, u64)>,
    /// Hashes of kept paths (one kept entry per path).
    seen_kept: HashSet<u64>,
    item_roots: HashSet<PathBuf>,
    error: Option<io::Error>,
    /// True when no item can be met twice (no root overlaps another): the sets above stay empty.
    distinct: bool,
}

impl State {
    /// The same decisions again with `guards` applied to the planned items: one pass over the
    /// spools into fresh ones (the sums recomputed).
    fn regroup(self, guards: &PlanGuards) -> io::Result<State> {
        let (planned, kept) = {
            let State { planned, kept, .. } = self;
            (planned, kept)
        };
        let mut st = State::default();
        for p in planned.iter() {
            let p = p?;
            match guards.keep_reason(&p.path) {
                Some(reason) => st.keep(KeptItem {
                    path: p.path.clone(),
                    producer: p.producer.clone(),
                    reason,
                })?,
                None => st.plan(p)?,
            }
        }
        for k in kept.iter() {
            st.keep(k?)?;
        }
        Ok(st)
    }

    fn plan(&mut self, p: PlannedItem) -> io::Result<()> {
        if !self.distinct && !self.seen.insert((p.dev, p.ino)) {
            return Ok(());
        }
        let s = &mut self.summary;
        s.planned_items += 1;
        s.planned_bytes += p.allocated_bytes;
        s.planned_freeable_bytes += p.freeable_bytes;
        let by = match s.producers.get_mut(&p.producer) {
            Some(by) => by,
            None => s.producers.entry(p.producer.clone()).or_default(),
        };
        by.items += 1;
        by.allocated_bytes += p.allocated_bytes;
        by.freeable_bytes += p.freeable_bytes;
        by.oldest_age_secs = by.oldest_age_secs.max(p.age_secs);
        if !self.item_roots.contains(&p.root) {
            self.item_roots.insert(p.root.clone());
        }
        self.planned.push(p)
    }

    fn keep(&mut self, k: KeptItem) -> io::Result<()> {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        k.path.hash(&mut h);
        if !self.distinct && !self.seen_kept.insert(h.finish()) {
            return Ok(());
        }
        let s = &mut self.summary;
        s.kept_items += 1;
        let kind = k.reason.code().to_owned();
        s.kept
            .entry((k.producer.clone(), kind))
            .or_insert_with(|| KeptGroup {
                items: 0,
                example: k.reason.clone(),
            })
            .items += 1;
        self.kept.push(k)
    }
}
