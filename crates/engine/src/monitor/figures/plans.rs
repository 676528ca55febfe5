//! The reclaim plans of the live inventory, the app's preview ([`plan_states`]) and an
//! auto-reclaim drain's ([`spool_states`]): one [`PlanPass`] over the claimed items in chunks
//! (the mount table read once, the newest-clone guard over every clone at once), its decisions
//! into a [`PlanSink`] (sums in memory, items in spools) and the preview's bounded lists
//! collected on the way. Memory stays flat in the number of items: a chunk of items (the
//! monitor's `plan_chunk`, [`super::CHUNK`] by default) and the spools' buffers (plus 16 bytes
//! per planned item for the device and inode check when roots overlap, so one item may be handed
//! out twice).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::io;
use std::path::PathBuf;
use std::time::SystemTime;

use crate::catalogue::Catalogue;
use crate::dto::{KeptGroupDto, PreviewProducer, ReclaimPreview, KEPT_EXAMPLES, PREVIEW_ITEMS};
use crate::process::ProcessProbe;
use crate::reclaim::{
    Decision, KeepCode, KeptItem, PlanPass, PlanSink, PlanSummary, PlannedItem, Policy,
    StreamedPlan,
};
use crate::watch::live::RootState;

/// Plans a reclaim of the claimed items of `roots` under `policy` at `now` (the decisions of
/// [`crate::reclaim::plan`]), handed out `chunk` items at a time, returning the plan (its items
/// spooled, read back for execute) and its preview. Blocking: reads the process table through
/// `probe` (refreshed once) and the mount table once.
///
/// # Errors
/// Creating, writing or reading the plan's temp file (in the temp dir).
pub(crate) fn plan_states(
    roots: &[RootState],
    catalogue: &Catalogue,
    policy: &Policy,
    probe: &dyn ProcessProbe,
    now: SystemTime,
    chunk: usize,
) -> io::Result<(StreamedPlan, ReclaimPreview)> {
    let mut view = PreviewBuilder::new();
    let plan = spool_states(roots, catalogue, policy, probe, now, chunk, |d| match d {
        Ok(p) => view.planned(p),
        Err(k) => view.kept(k),
    })?;
    let id = plan.id()?;
    let preview = view.finish(
        catalogue,
        id,
        crate::units::unix_secs(now),
        policy.older_than.as_secs(),
        &plan.summary,
    );
    Ok((plan, preview))
}

/// The plan of [`plan_states`] without its preview (an auto-reclaim drain's): one
/// [`PlanPass`] over the claimed items of `roots`, `chunk` (at least 1) at a time, its decisions
/// into a [`PlanSink`], each also shown to `seen` first. Memory: a chunk of items and the spools'
/// buffers (plus 16 bytes per planned item when roots overlap). Blocking, as [`plan_states`].
///
/// # Errors
/// Creating, writing or reading the plan's temp file (in the temp dir).
pub(crate) fn spool_states(
    roots: &[RootState],
    catalogue: &Catalogue,
    policy: &Policy,
    probe: &dyn ProcessProbe,
    now: SystemTime,
    chunk: usize,
    mut seen: impl FnMut(&Decision),
) -> io::Result<StreamedPlan> {
    let mut pass = PlanPass::new(
        roots.iter().map(|st| &st.root),
        catalogue,
        policy,
        probe,
        now,
        roots
            .iter()
            .flat_map(|st| st.issues.iter().map(|i| i.path.clone())),
    )
    .checking_access();
    // Roots that do not overlap cannot hand an item out twice: no set of the items seen.
    let overlap = roots.iter().enumerate().any(|(i, a)| {
        roots.iter().skip(i + 1).any(|b| {
            let (a, b) = (&a.root.canonical, &b.root.canonical);
            a.starts_with(b) || b.starts_with(a)
        })
    });
    let mut sink = if overlap {
        PlanSink::new()
    } else {
        PlanSink::distinct()
    };
    let mut error: Option<io::Error> = None;
    let mut take = |d: Decision, sink: &mut PlanSink| {
        if error.is_some() {
            return;
        }
        seen(&d);
        if let Err(e) = sink.add(d) {
            error = Some(e);
        }
    };
    for st in roots {
        st.for_each_claimed(chunk.max(1), |items| {
            for item in &items {
                if let Some(d) = pass.decide(&st.root, item) {
                    take(d, &mut sink);
                }
            }
        });
    }
    let planner = pass.finish(|_, d| take(d, &mut sink));
    if let Some(e) = error {
        return Err(e);
    }
    sink.finish(&planner, now)
}

/// A planned item ordered largest first (freeable, allocated, then path ascending).
struct BySize(PlannedItem);

/// The order of [`BySize`]: larger keys first in a preview.
fn size_key(p: &PlannedItem) -> (u64, u64, Reverse<&PathBuf>) {
    (p.freeable_bytes, p.allocated_bytes, Reverse(&p.path))
}

impl BySize {
    fn key(&self) -> (u64, u64, Reverse<&PathBuf>) {
        size_key(&self.0)
    }
}

impl PartialEq for BySize {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl Eq for BySize {}
impl PartialOrd for BySize {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for BySize {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

/// Collects what a preview lists while a plan's decisions stream by: the largest planned items
/// (a heap of [`PREVIEW_ITEMS`]) and the first kept items of each reason. Memory is bounded
/// whatever the number of items.
#[derive(Default)]
pub(crate) struct PreviewBuilder {
    largest: BinaryHeap<Reverse<BySize>>,
    examples: BTreeMap<KeepCode, Vec<KeptItem>>,
}

impl PreviewBuilder {
    /// An empty builder.
    pub fn new() -> PreviewBuilder {
        PreviewBuilder::default()
    }

    /// Takes a planned item (one the plan counted: call it after the plan accepted the item).
    pub fn planned(&mut self, item: &PlannedItem) {
        if self.largest.len() < PREVIEW_ITEMS {
            self.largest.push(Reverse(BySize(item.clone())));
            return;
        }
        let smaller = self
            .largest
            .peek()
            .is_some_and(|Reverse(min)| size_key(item) > min.key());
        if smaller {
            self.largest.pop();
            self.largest.push(Reverse(BySize(item.clone())));
        }
    }

    /// Takes a kept item (one the plan counted).
    pub fn kept(&mut self, item: &KeptItem) {
        let list = self.examples.entry(item.reason.kind()).or_default();
        if list.len() < KEPT_EXAMPLES && list.iter().all(|k| k.path != item.path) {
            list.push(item.clone());
        }
    }

    /// The preview of the plan `id` made at `created_unix_secs` at `threshold_secs`, whose sums
    /// are `summary`.
    pub fn finish(
        self,
        catalogue: &Catalogue,
        id: String,
        created_unix_secs: u64,
        threshold_secs: u64,
        summary: &PlanSummary,
    ) -> ReclaimPreview {
        let mut largest: Vec<PlannedItem> =
            self.largest.into_iter().map(|Reverse(b)| b.0).collect();
        largest.sort_by(|a, b| size_key(b).cmp(&size_key(a)));
        // An item met twice (a root given twice) is planned once: list it once.
        let mut seen = std::collections::HashSet::new();
        largest.retain(|i| seen.insert((i.dev, i.ino)));
        let mut by_reason: BTreeMap<KeepCode, u64> = BTreeMap::new();
        for group in summary.kept.values() {
            *by_reason.entry(group.example.kind()).or_default() += group.items;
        }
        let mut examples = self.examples;
        let mut kept: Vec<KeptGroupDto> = by_reason
            .into_iter()
            .map(|(reason, items)| KeptGroupDto {
                examples: examples.remove(&reason).unwrap_or_default(),
                reason,
                items,
            })
            .collect();
        kept.sort_by(|a, b| {
            b.items
                .cmp(&a.items)
                .then_with(|| a.reason.as_str().cmp(b.reason.as_str()))
        });
        ReclaimPreview {
            id,
            created_unix_secs,
            threshold_secs,
            planned_items: summary.planned_items,
            planned_bytes: summary.planned_bytes,
            planned_freeable_bytes: summary.planned_freeable_bytes,
            producers: summary
                .producers
                .iter()
                .map(|(id, p)| PreviewProducer {
                    producer: id.clone(),
                    items: p.items,
                    allocated_bytes: p.allocated_bytes,
                    freeable_bytes: p.freeable_bytes,
                    oldest_age_secs: p.oldest_age_secs,
                    managed_by: catalogue.rule(id).and_then(|r| r.managed_by.clone()),
                })
                .collect(),
            kept_items: summary.kept_items,
            kept,
            largest,
        }
    }
}
