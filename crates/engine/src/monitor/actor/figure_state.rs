//! [`FigureState`]: the reclaim figures and what they are computed with. It owns the last
//! figures ([`Figures`]: reclaimable and orphan bytes, groups, guards), whether they are stale,
//! when they were computed and what that cost (which bounds how often they are), the age
//! threshold, and the plans previewed and kept for execute. The figures are computed over the
//! roots' states moved into a blocking job ([`Watching::with_roots`]), so no item is copied.

use std::path::PathBuf;
use std::time::Duration;

use tokio::time::Instant;

use crate::dto::{PreviewProducer, ReclaimEstimate, ReclaimPreview};
use crate::monitor::figures::{self, plan_states, Figures, GroupFigures, GuardInputs};
use crate::monitor::{provenance, MonitorError, MonitorOptions};
use crate::reclaim::{Policy, StreamedPlan};
use crate::units::unix_secs;

use super::watching::{Outside, Watching};

/// Plans kept for execute: a preview the user did not act on is dropped after this many newer
/// ones (each holds a spool: a temp file once long).
pub(in crate::monitor) const KEPT_PLANS: usize = 4;

/// The figures, their freshness and cost, the threshold, the plans kept.
pub(in crate::monitor::actor) struct FigureState {
    pub(in crate::monitor::actor) figures: Figures,
    /// Something besides the roots moved since the figures were computed (the writers seen, a
    /// drain's end); the roots' own changes are [`Watching::changed`].
    stale: bool,
    at: Option<Instant>,
    /// How long the last figures took (bounds how often they are recomputed).
    cost: Duration,
    pub(in crate::monitor::actor) threshold: Duration,
    /// The last plans previewed, oldest first, by id (at most [`KEPT_PLANS`]).
    plans: Vec<(String, StreamedPlan)>,
}

impl FigureState {
    /// No figures yet (stale), at `threshold`.
    pub(in crate::monitor::actor) fn new(threshold: Duration) -> FigureState {
        FigureState {
            figures: Figures::default(),
            stale: true,
            at: None,
            cost: Duration::ZERO,
            threshold,
            plans: Vec::new(),
        }
    }

    /// The figures no longer hold: compute them again at the next chance.
    pub(in crate::monitor::actor) fn mark_stale(&mut self) {
        self.stale = true;
    }

    /// True when the figures no longer hold: marked so, or the roots changed since they were
    /// computed.
    pub(in crate::monitor::actor) fn is_stale(&self, watching: &Watching) -> bool {
        self.stale || watching.changed()
    }

    /// Recomputes the reclaimable and orphan figures off the async threads. The roots' states move
    /// into the blocking job and back (the actor waits for it), so no item is copied.
    pub(in crate::monitor::actor) async fn refresh(
        &mut self,
        watching: &mut Watching,
        out: &mut Outside<'_>,
    ) {
        let catalogue = out.opts.catalogue.clone();
        let threshold = self.threshold;
        let protected = out.opts.protected_paths();
        let now = out.opts.clock.now();
        let started = Instant::now();
        let history = out.records.provenance.history();
        let ignored = out.opts.ignored_shapes.clone();
        let stored = out.records.recorder.stored_writers();
        // The chunks' temporaries are gone after the job: their pages are returned.
        let res = watching
            .with_roots(out, move |roots| {
                let mut a =
                    Figures::compute(roots, &catalogue, threshold, protected, &ignored, now);
                a.add_evidence(roots, &provenance::lock(&history), &stored);
                a
            })
            .await;
        match res {
            Ok(Ok(a)) => self.figures = a,
            Ok(Err(_)) => tracing::error!("reclaimable figures failed (a panic)"),
            // Only when the runtime shuts down: the states were lost, the roots started over.
            Err(e) => tracing::error!(error = %e, "reclaimable figures failed; rescanned"),
        }
        self.stale = false;
        watching.figures_took();
        self.at = Some(Instant::now());
        self.cost = started.elapsed();
    }

    /// Ages cross the threshold and owners start and exit with no file event: the figures follow
    /// the clock and the process table too ([`figures::refresh_due`]). Recomputes them when due;
    /// a refresh due only to follow the process table is skipped when the tables answer as before
    /// ([`guards_hold`]). True when the figures changed.
    pub(in crate::monitor::actor) async fn follow(
        &mut self,
        watching: &mut Watching,
        out: &mut Outside<'_>,
    ) -> bool {
        let stale = self.is_stale(watching);
        let due = figures::refresh_due(
            &self.figures,
            stale,
            self.at.map(|t| t.elapsed()),
            self.cost,
            out.opts.clock.now(),
        );
        if !due {
            return false;
        }
        let crossed = self
            .figures
            .next_crossing
            .is_some_and(|t| out.opts.clock.now() >= t);
        // Only a refresh due for the guards alone can be skipped: ask the process table.
        let hold = !stale && !crossed && {
            let roots: Vec<PathBuf> = watching
                .roots
                .iter()
                .map(|r| r.root.canonical.clone())
                .collect();
            guards_hold(self.figures.guards.clone(), roots).await
        };
        if hold {
            // Due only to follow the process table, and it answers as before: the figures
            // stand. The next look is paced as if they had been computed now.
            self.at = Some(Instant::now());
            return false;
        }
        let before = self.figures.clone();
        self.refresh(watching, out).await;
        self.figures != before
    }

    /// The group of the root whose canonical path is `root` (its bytes) labelled `label`, with the
    /// other roots of its kind.
    pub(in crate::monitor::actor) fn group(
        &self,
        root: &str,
        label: &str,
        watching: &Watching,
    ) -> Option<GroupFigures> {
        self.figures
            .groups
            .iter()
            .find(|g| g.root.as_os_str() == std::ffi::OsStr::new(root) && g.group.label() == label)
            .cloned()
            .map(|mut g| {
                g.others = watching
                    .roots
                    .iter()
                    .filter(|st| st.root.kind == g.root_kind && st.root.canonical != g.root)
                    .map(|st| st.root.canonical.clone())
                    .collect();
                g
            })
    }

    /// Plans a reclaim on the current inventory in chunks ([`plan_states`]) and keeps the plan
    /// by its id (the last [`KEPT_PLANS`]); returns its bounded preview. The roots' states move
    /// into the blocking job and back (the actor waits for it), so no item is copied.
    pub(in crate::monitor::actor) async fn plan(
        &mut self,
        producers: Vec<String>,
        threshold: Duration,
        watching: &mut Watching,
        out: &mut Outside<'_>,
    ) -> Result<ReclaimPreview, MonitorError> {
        if let Some(id) = producers
            .iter()
            .find(|id| out.opts.catalogue.rule(id).is_none())
        {
            return Err(MonitorError::UnknownProducer { id: id.clone() });
        }
        let policy = Policy {
            older_than: threshold,
            producers,
            protected: out.opts.protected_paths(),
        };
        let catalogue = out.opts.catalogue.clone();
        let now = out.opts.clock.now();
        let chunk = out.opts.plan_chunk;
        let planned = watching
            .with_roots(out, move |roots| {
                let probe = crate::process::SystemProbe::under(
                    roots.iter().map(|st| st.root.canonical.clone()),
                );
                plan_states(roots, &catalogue, &policy, &probe, now, chunk)
            })
            .await
            .map_err(|e| job("reclaim plan", e))?;
        let (plan, preview) = match planned {
            Ok(Ok(p)) => p,
            Ok(Err(source)) => {
                return Err(MonitorError::PlanSpool {
                    dir: std::env::temp_dir(),
                    source,
                })
            }
            Err(_) => {
                return Err(MonitorError::Job {
                    what: "reclaim plan",
                    message: "panicked".into(),
                })
            }
        };
        self.plans.retain(|(id, _)| *id != preview.id);
        self.plans.push((preview.id.clone(), plan));
        if self.plans.len() > KEPT_PLANS {
            self.plans.remove(0);
        }
        Ok(preview)
    }

    /// Where the kept plan `plan_id` is ([`FigureState::take_plan`] takes it).
    pub(in crate::monitor::actor) fn find_plan(
        &self,
        plan_id: String,
    ) -> Result<usize, MonitorError> {
        self.plans
            .iter()
            .position(|(id, _)| *id == plan_id)
            .ok_or(MonitorError::UnknownPlan { id: plan_id })
    }

    /// Takes the kept plan at `at` (from [`FigureState::find_plan`]) to execute it.
    pub(in crate::monitor::actor) fn take_plan(&mut self, at: usize) -> StreamedPlan {
        self.plans.remove(at).1
    }

    /// What a reclaim at `threshold` would take now, from the figures' age histograms.
    pub(in crate::monitor::actor) fn estimate(
        &self,
        opts: &MonitorOptions,
        producers: &[String],
        threshold: Duration,
    ) -> Result<ReclaimEstimate, MonitorError> {
        if let Some(id) = producers
            .iter()
            .find(|id| opts.catalogue.rule(id).is_none())
        {
            return Err(MonitorError::UnknownProducer { id: id.clone() });
        }
        let now = opts.clock.now();
        let takes = self
            .figures
            .take_at(&opts.catalogue, producers, threshold, now);
        let mut out = ReclaimEstimate {
            threshold_secs: threshold.as_secs(),
            as_of_unix_secs: self.figures.computed_at.map_or(0, unix_secs),
            ..ReclaimEstimate::default()
        };
        for (id, t) in takes {
            out.items += t.items;
            out.allocated_bytes += t.allocated_bytes;
            out.freeable_bytes += t.freeable_bytes;
            out.producers.push(PreviewProducer {
                managed_by: opts.catalogue.rule(&id).and_then(|r| r.managed_by.clone()),
                producer: id,
                items: t.items,
                allocated_bytes: t.allocated_bytes,
                freeable_bytes: t.freeable_bytes,
                oldest_age_secs: 0,
            });
        }
        Ok(out)
    }
}

/// A blocking job that panicked or was cancelled.
pub(in crate::monitor::actor) fn job(
    what: &'static str,
    e: tokio::task::JoinError,
) -> MonitorError {
    MonitorError::Job {
        what,
        message: e.to_string(),
    }
}

/// True when the process and mount tables, read now off the async threads, answer what the last
/// computation of the figures asked (`inputs`) as they did then ([`GuardInputs::still_hold`]);
/// false when there is no such computation.
async fn guards_hold(inputs: Option<GuardInputs>, roots: Vec<PathBuf>) -> bool {
    let Some(inputs) = inputs else {
        return false;
    };
    let started = Instant::now();
    let held = tokio::task::spawn_blocking(move || {
        let probe = crate::process::SystemProbe::under(roots.iter().cloned());
        let held = inputs.still_hold(&probe, &roots);
        // The probe read every process's open files: what it freed would stay resident in this
        // blocking thread's malloc arena, a few hundred KiB a check at rest, one arena after the
        // other as the pool's threads come and go.
        crate::platform::release_free_memory();
        held
    })
    .await
    .unwrap_or(false);
    tracing::debug!(
        held,
        ms = started.elapsed().as_millis() as u64,
        "checked the process table against the figures' guards"
    );
    held
}
