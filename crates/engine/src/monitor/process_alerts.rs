//! The process watch's alerts in the monitor (`[[process_watch]]`, [`crate::process_leaks`]):
//! samples the watched processes on an interval (off the async threads) and turns suspected thread
//! leaks into `process-leak` alerts, at most one per watched name within the alerts' cooldown
//! (restored from the stored alerts after a restart).

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

use crate::dto::AlertDto;
use crate::process_leaks::{leak_title, ProcessWatchConfig, ProcessWatcher, PROCESS_LEAK_RULE};

/// At most how often a sample hands the heap it freed back to the OS: a watch may sample every
/// second, and what one sample freed the next reuses.
const RELEASE_EVERY: Duration = Duration::from_secs(60);

/// The process watch state of the monitor.
#[derive(Debug)]
pub(super) struct ProcWatch {
    /// `None` while a sample runs in a blocking task, or when nothing is watched.
    watcher: Option<ProcessWatcher>,
    rules: Vec<ProcessWatchConfig>,
    interval: Option<Duration>,
    cooldown: Duration,
    /// When a sample last handed the freed heap back to the OS (see [`RELEASE_EVERY`]).
    released_at: Option<Instant>,
    /// When each watched name last alerted.
    fired: BTreeMap<String, SystemTime>,
}

impl ProcWatch {
    /// A watch of `rules` (none: [`ProcWatch::interval`] is `None` and nothing is sampled).
    pub(super) fn new(rules: &[ProcessWatchConfig], cooldown: Duration) -> ProcWatch {
        let interval = rules
            .iter()
            .map(|r| Duration::from_secs(r.sample_interval_secs.clamp(1, 86_400)))
            .min();
        ProcWatch {
            watcher: (!rules.is_empty()).then(|| ProcessWatcher::new(rules.to_vec())),
            rules: rules.to_vec(),
            interval,
            cooldown,
            released_at: None,
            fired: BTreeMap::new(),
        }
    }

    /// The sampling interval: the shortest of the entries'; `None` when nothing is watched.
    pub(super) fn interval(&self) -> Option<Duration> {
        self.interval
    }

    /// Starts the cooldowns from alerts already fired (newest first or in any order), so a
    /// restarted monitor does not alert again what it alerted within the cooldown.
    pub(super) fn restore(&mut self, fired: &[AlertDto]) {
        for a in fired.iter().filter(|a| a.rule == PROCESS_LEAK_RULE) {
            let Some(name) = self
                .rules
                .iter()
                .map(|r| &r.name)
                .find(|n| leak_title(n) == a.title)
            else {
                continue;
            };
            let Some(at) =
                SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(a.time_unix_secs))
            else {
                continue;
            };
            let last = self.fired.entry(name.clone()).or_insert(at);
            *last = (*last).max(at);
        }
    }

    /// Samples the watched processes at `now` (blocking work on the blocking pool) and returns the
    /// alerts of the suspected leaks whose name is out of its cooldown (the cooldown starts).
    pub(super) async fn sample(&mut self, now: SystemTime) -> Vec<AlertDto> {
        let Some(mut watcher) = self.watcher.take() else {
            return Vec::new();
        };
        let release = self
            .released_at
            .map_or(true, |t| t.elapsed() >= RELEASE_EVERY);
        if release {
            self.released_at = Some(Instant::now());
        }
        let res = tokio::task::spawn_blocking(move || {
            watcher.sample(now);
            let suspects = watcher.suspects(now);
            if release {
                // What reading the process table freed, back to the OS (see `actor::figure_state::guards_hold`).
                crate::platform::release_free_memory();
            }
            (watcher, suspects)
        })
        .await;
        let suspects = match res {
            Ok((watcher, suspects)) => {
                self.watcher = Some(watcher);
                suspects
            }
            Err(e) => {
                tracing::error!(error = %e, "process sample failed; starting the process watch over");
                self.watcher = Some(ProcessWatcher::new(self.rules.clone()));
                return Vec::new();
            }
        };
        let mut out = Vec::new();
        for s in suspects {
            let cooling = self
                .fired
                .get(&s.name)
                .is_some_and(|t| now.duration_since(*t).unwrap_or_default() < self.cooldown);
            if cooling {
                continue;
            }
            self.fired.insert(s.name.clone(), now);
            out.push(s.alert(now));
        }
        out
    }
}
