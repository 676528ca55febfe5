//! What the user was doing in the window, kept in the shell so that it survives the window: the
//! webview is destroyed a short while after the window closes (see `window`), and a new one
//! restores this at load (`get_ui_state`) together with the engine's snapshot.
//!
//! Two parts: the view (selected producer, expanded rows, the threshold being edited), which the
//! window writes as it changes (`set_ui_view`); and the reclaim started from the window, which
//! the `execute_reclaim` command records here whether or not a window is still there to hear the
//! answer (`reclaim-job` event for a window that is).

use std::collections::VecDeque;
use std::sync::Mutex;

use cachewatch::dto::{ReclaimPreview, ReclaimResult};
use serde::{Deserialize, Serialize};

use crate::error::IpcError;

/// How many plan previews made by the window are remembered (to show the one being executed).
const PLANS_KEPT: usize = 8;

/// The window's view state.
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UiView {
    /// The producer the reclaim panel is of (`None`: every auto producer).
    pub scope: Option<String>,
    /// The producer rows shown expanded (with their charts), by id.
    pub expanded: Vec<String>,
    /// The threshold set in the reclaim panel, seconds (`None`: the snapshot's).
    pub threshold_secs: Option<u64>,
    /// A producer a notification click asked to show; the window brings it into view and clears it.
    pub focus: Option<String>,
}

/// The reclaim the window started, as far as it went.
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "kebab-case")]
pub enum ReclaimJob {
    /// None running, none to show.
    #[default]
    Idle,
    /// The confirmed plan is being executed.
    Executing {
        /// The plan as the confirmation showed it.
        plan: ReclaimPreview,
    },
    /// It ended: the report.
    Done {
        /// The plan executed.
        plan: ReclaimPreview,
        /// What was deleted, kept and freed.
        report: ReclaimResult,
    },
    /// It failed.
    Failed {
        /// The plan whose execution failed.
        plan: ReclaimPreview,
        /// Why.
        error: IpcError,
    },
}

/// What a new window restores.
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UiState {
    /// The view.
    pub view: UiView,
    /// The reclaim started from the window.
    pub reclaim: ReclaimJob,
}

#[derive(Debug, Default)]
struct Inner {
    state: UiState,
    plans: VecDeque<ReclaimPreview>,
}

/// The store (managed state).
#[derive(Debug, Default)]
pub struct UiStore(Mutex<Inner>);

impl UiStore {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The state now.
    pub fn get(&self) -> UiState {
        self.lock().state.clone()
    }

    /// Replaces the view.
    pub fn set_view(&self, view: UiView) {
        self.lock().state.view = view;
    }

    /// A notification asked for `producer`: the next window (or the open one) shows it.
    pub fn focus(&self, producer: String) {
        self.lock().state.view.focus = Some(producer);
    }

    /// Remembers a plan the window made, to show it while it runs.
    pub fn planned(&self, plan: &ReclaimPreview) {
        let mut inner = self.lock();
        inner.plans.retain(|p| p.id != plan.id);
        inner.plans.push_back(plan.clone());
        while inner.plans.len() > PLANS_KEPT {
            inner.plans.pop_front();
        }
    }

    /// Plan `plan_id` starts executing; the job it now is (`Idle` when the window never showed
    /// that plan: nothing to show then).
    pub fn executing(&self, plan_id: &str) -> ReclaimJob {
        let mut inner = self.lock();
        let job = match inner.plans.iter().position(|p| p.id == plan_id) {
            Some(i) => inner
                .plans
                .remove(i)
                .map_or(ReclaimJob::Idle, |plan| ReclaimJob::Executing { plan }),
            None => return inner.state.reclaim.clone(),
        };
        inner.state.reclaim = job.clone();
        job
    }

    /// Plan `plan_id` ended with `outcome`; the job it now is.
    pub fn executed(&self, plan_id: &str, outcome: &Result<ReclaimResult, IpcError>) -> ReclaimJob {
        let mut inner = self.lock();
        if let ReclaimJob::Executing { plan } = &inner.state.reclaim {
            if plan.id == plan_id {
                let plan = plan.clone();
                inner.state.reclaim = match outcome {
                    Ok(report) => ReclaimJob::Done {
                        plan,
                        report: report.clone(),
                    },
                    Err(error) => ReclaimJob::Failed {
                        plan,
                        error: error.clone(),
                    },
                };
            }
        }
        inner.state.reclaim.clone()
    }

    /// The user closed the result: nothing more to show.
    pub fn dismiss(&self) {
        let mut inner = self.lock();
        if !matches!(inner.state.reclaim, ReclaimJob::Executing { .. }) {
            inner.state.reclaim = ReclaimJob::Idle;
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    fn plan(id: &str) -> ReclaimPreview {
        ReclaimPreview {
            id: id.to_owned(),
            created_unix_secs: 1_700_000_000,
            threshold_secs: 86_400,
            planned_items: 3,
            planned_bytes: 12_288,
            planned_freeable_bytes: 12_288,
            producers: Vec::new(),
            kept_items: 0,
            kept: Vec::new(),
            largest: Vec::new(),
        }
    }

    #[test]
    fn a_reclaim_started_in_a_window_outlives_it() {
        let s = UiStore::default();
        s.planned(&plan("a"));
        s.planned(&plan("b"));
        assert_eq!(s.executing("b"), ReclaimJob::Executing { plan: plan("b") });
        // the window is gone; a new one asks
        assert!(matches!(s.get().reclaim, ReclaimJob::Executing { .. }));
        let report = ReclaimResult {
            deleted_items: 3,
            freed_bytes: 12288,
            ..ReclaimResult::default()
        };
        s.executed("b", &Ok(report.clone()));
        assert_eq!(
            s.get().reclaim,
            ReclaimJob::Done {
                plan: plan("b"),
                report
            }
        );
        s.dismiss();
        assert_eq!(s.get().reclaim, ReclaimJob::Idle);
    }

    #[test]
    fn an_unknown_plan_or_a_stale_answer_changes_nothing() {
        let s = UiStore::default();
        assert_eq!(s.executing("nope"), ReclaimJob::Idle);
        s.planned(&plan("a"));
        s.executing("a");
        let err = IpcError::new(ErrorCode::UnknownPlan, "no plan \"z\"");
        s.executed("z", &Err(err.clone()));
        assert!(matches!(s.get().reclaim, ReclaimJob::Executing { .. }));
        s.dismiss();
        assert!(
            matches!(s.get().reclaim, ReclaimJob::Executing { .. }),
            "a running reclaim is not dismissed"
        );
        s.executed("a", &Err(err.clone()));
        assert_eq!(
            s.get().reclaim,
            ReclaimJob::Failed {
                plan: plan("a"),
                error: err
            }
        );
    }

    #[test]
    fn the_view_and_a_notification_focus_are_kept() {
        let s = UiStore::default();
        let view = UiView {
            scope: Some("metal-gpuarchiver".into()),
            expanded: vec!["metal-gpuarchiver".into()],
            threshold_secs: Some(3600),
            focus: None,
        };
        s.set_view(view.clone());
        assert_eq!(s.get().view, view);
        s.focus("xcode-previews".into());
        assert_eq!(s.get().view.focus.as_deref(), Some("xcode-previews"));
        assert_eq!(s.get().view.scope, view.scope);
    }
}
