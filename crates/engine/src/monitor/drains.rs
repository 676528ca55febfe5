//! The auto-reclaim drains the monitor runs: the bookkeeping of its side of auto-reclaim
//! ([`crate::autoreclaim`] holds the rules and a run; `actor/autoreclaim.rs` starts the runs and
//! takes in their ends): which rule ran when, the drain in progress, the totals since start, and
//! the notices (announced at most once per
//! [`ANNOUNCE_GAP`] per rule; "freed nothing" said once per set of reasons).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::sync::oneshot;

use crate::audit::BatchProgress;
use crate::autoreclaim::run::RunOutcome;
use crate::autoreclaim::{
    AutoReclaimDto, AutoReclaimProgress, AutoRule, AutoRuleDto, AutoRun, ProducerFreed,
    ReclaimedDto,
};

use super::MonitorError;

/// A rule's runs are announced (alert, log line) at most this often; the runs in between are
/// summed into the next announcement.
pub const ANNOUNCE_GAP: Duration = Duration::from_secs(15 * 60);

/// A drain's progress is published at most this often (a 700k-item backlog has over a thousand
/// batches).
pub const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// What a drain sends back to the monitor task.
pub(super) enum AutoMsg {
    /// After each batch.
    Progress(BatchProgress),
    /// The run ended (done, paused or failed).
    Done(Box<RunOutcome>),
    /// The blocking task panicked.
    Crashed(String),
}

/// A reply waiting for the run in progress.
pub(super) type Waiter = oneshot::Sender<Result<Option<AutoRun>, MonitorError>>;

/// The drain in progress.
pub(super) struct Running {
    pub(super) rule: usize,
    pub(super) cancel: Arc<AtomicBool>,
    pub(super) progress: AutoReclaimProgress,
}

/// Per-rule state and totals.
#[derive(Default)]
pub(super) struct AutoState {
    pub(super) rules: Vec<AutoRule>,
    pub(super) last_run: Vec<Option<SystemTime>>,
    runs: Vec<u64>,
    last: Vec<Option<AutoRun>>,
    notes: Vec<Option<String>>,
    note_keys: Vec<Option<String>>,
    unannounced: Vec<Vec<AutoRun>>,
    last_announce: Vec<Option<SystemTime>>,
    reclaimed: BTreeMap<String, ProducerFreed>,
    pub(super) running: Option<Running>,
    pub(super) waiters: Vec<Waiter>,
    /// "not run: no history" was said.
    pub(super) no_history_said: bool,
    /// The rule the next check looks at first: the one after the last started, so rules due at
    /// the same time take turns (a short `every` on the first rules kept the others from running).
    pub(super) next: usize,
    /// When progress was last published.
    progress_at: Option<tokio::time::Instant>,
}

impl AutoState {
    pub(super) fn new(rules: Vec<AutoRule>) -> AutoState {
        let n = rules.len();
        AutoState {
            rules,
            last_run: vec![None; n],
            runs: vec![0; n],
            last: vec![None; n],
            notes: vec![None; n],
            note_keys: vec![None; n],
            unannounced: vec![Vec::new(); n],
            last_announce: vec![None; n],
            ..AutoState::default()
        }
    }

    /// How often the monitor looks at the triggers: the shortest `every`, between 250 ms and 5 s;
    /// `None` without rules.
    pub(super) fn tick(&self) -> Option<Duration> {
        if self.rules.is_empty() {
            return None;
        }
        let every = self.rules.iter().filter_map(|r| r.every).min();
        Some(
            every
                .unwrap_or(Duration::from_secs(5))
                .clamp(Duration::from_millis(250), Duration::from_secs(5)),
        )
    }

    /// Stops the drain in progress before its next batch.
    pub(super) fn cancel(&self) {
        if let Some(r) = &self.running {
            r.cancel.store(true, Ordering::Relaxed);
        }
    }

    /// Notes a batch's progress; true when it is time to publish it (see [`PROGRESS_EVERY`]).
    pub(super) fn progress(&mut self, p: &BatchProgress, now: tokio::time::Instant) -> bool {
        let due = self.progress_at.map_or(true, |t| {
            t.checked_add(PROGRESS_EVERY).map_or(true, |at| now >= at)
        });
        if due {
            self.progress_at = Some(now);
        }
        if let Some(r) = &mut self.running {
            r.progress.items_done = p.items_done;
            r.progress.items_total = p.items_total;
            r.progress.deleted_items = p.deleted_items;
            r.progress.deleted_bytes = p.deleted_bytes;
        }
        due
    }

    /// Notes a finished run of rule `i`. Returns the "freed nothing" note when it is new (to be
    /// said once), and the runs to announce when the gap since the last announcement has passed.
    pub(super) fn finished(
        &mut self,
        i: usize,
        run: &AutoRun,
        now: SystemTime,
    ) -> (Option<String>, Option<Vec<AutoRun>>) {
        self.runs[i] += 1;
        for (id, f) in &run.by_producer {
            let t = self.reclaimed.entry(id.clone()).or_default();
            t.items += f.items;
            t.bytes += f.bytes;
        }
        self.last[i] = Some(run.clone());
        let note = crate::autoreclaim::nothing_freed(run);
        let key = note
            .as_ref()
            .map(|_| run.kept.keys().cloned().collect::<Vec<_>>().join(","));
        let new_note = if key.is_some() && key != self.note_keys[i] {
            note.clone()
        } else {
            None
        };
        if key.is_some() || run.deleted_items > 0 {
            self.note_keys[i] = key;
            self.notes[i] = note;
        }
        if run.deleted_items > 0 {
            self.unannounced[i].push(run.clone());
        }
        let due = self.last_announce[i].map_or(true, |t| {
            t.checked_add(ANNOUNCE_GAP).map_or(true, |at| now >= at)
        });
        let announce = if due && !self.unannounced[i].is_empty() {
            self.last_announce[i] = Some(now);
            Some(std::mem::take(&mut self.unannounced[i]))
        } else {
            None
        };
        (new_note, announce)
    }

    /// The snapshot's field.
    pub(super) fn dto(&self) -> AutoReclaimDto {
        AutoReclaimDto {
            enabled: !self.rules.is_empty(),
            progress: self.running.as_ref().map(|r| r.progress.clone()),
            rules: self
                .rules
                .iter()
                .enumerate()
                .map(|(i, r)| AutoRuleDto {
                    rule: r.name.clone(),
                    producers: r.producers.clone(),
                    older_than_secs: r.older_than.as_secs(),
                    runs: self.runs[i],
                    last_run: self.last[i].clone(),
                    note: self.notes[i].clone(),
                })
                .collect(),
            reclaimed: self
                .reclaimed
                .iter()
                .map(|(id, f)| ReclaimedDto {
                    producer: id.clone(),
                    items: f.items,
                    bytes: f.bytes,
                })
                .collect(),
        }
    }
}
