//! The app's reclaim plan of the live inventory ([`plan_states`]): one [`PlanPass`] over the
//! claimed items in chunks (the mount table read once, the newest-clone guard over every clone at
//! once), its decisions into a [`PlanSink`] (sums in memory, items in spools) and the preview's
//! bounded lists collected on the way. Memory stays flat in the number of items: a chunk of
//! [`super::CHUNK`] items and the spools' buffers (plus 16 bytes per planned item for the device
//! and inode check when roots overlap, so one item may be handed out twice).

use std::io;
use std::time::SystemTime;

use crate::api::preview::{PreviewBuilder, ReclaimPreview};
use crate::catalogue::Catalogue;
use crate::process::ProcessProbe;
use crate::reclaim::{Decision, PlanPass, PlanSink, Policy, StreamedPlan};
use crate::watch::state::RootState;

use super::CHUNK;

/// Plans a reclaim of the claimed items of `roots` under `policy` at `now` (the decisions of
/// [`crate::reclaim::plan`]), returning the plan (its items spooled, read back for execute) and
/// its preview. Blocking: reads the process table through `probe` (refreshed once) and the mount
/// table once.
///
/// # Errors
/// Creating, writing or reading the plan's temp file (in the temp dir).
pub(crate) fn plan_states(
    roots: &[RootState],
    catalogue: &Catalogue,
    policy: &Policy,
    probe: &dyn ProcessProbe,
    now: SystemTime,
) -> io::Result<(StreamedPlan, ReclaimPreview)> {
    let mut pass = PlanPass::new(
        roots.iter().map(|st| &st.root),
        catalogue,
        policy,
        probe,
        now,
        roots
            .iter()
            .flat_map(|st| st.issues.iter().map(|i| i.path.clone())),
    );
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
    let mut view = PreviewBuilder::new();
    let mut error: Option<io::Error> = None;
    let mut take = |d: Decision, sink: &mut PlanSink| {
        if error.is_some() {
            return;
        }
        match &d {
            Ok(p) => view.planned(p),
            Err(k) => view.kept(k),
        }
        if let Err(e) = sink.add(d) {
            error = Some(e);
        }
    };
    for st in roots {
        st.for_each_claimed(CHUNK, |items| {
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
    let plan = sink.finish(&planner, now)?;
    let id = plan.id()?;
    let preview = view.finish(
        id,
        now.duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        policy.older_than.as_secs(),
        &plan.summary,
    );
    Ok((plan, preview))
}
