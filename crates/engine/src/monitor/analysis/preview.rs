//! The reclaim plans of the live inventory, the app's preview ([`plan_states`]) and an
//! auto-reclaim drain's ([`spool_states`]): one [`PlanPass`] over the claimed items in chunks
//! (the mount table read once, the newest-clone guard over every clone at once), its decisions
//! into a [`PlanSink`] (sums in memory, items in spools) and the preview's bounded lists
//! collected on the way. Memory stays flat in the number of items: a chunk of items (the
//! monitor's `plan_chunk`, [`super::CHUNK`] by default) and the spools' buffers (plus 16 bytes
//! per planned item for the device and inode check when roots overlap, so one item may be handed
//! out twice).

use std::io;
use std::time::SystemTime;

use crate::api::preview::{PreviewBuilder, ReclaimPreview};
use crate::catalogue::Catalogue;
use crate::process::ProcessProbe;
use crate::reclaim::{Decision, PlanPass, PlanSink, Policy, StreamedPlan};
use crate::watch::state::RootState;

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
