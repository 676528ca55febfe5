//! The pure evaluator: inputs and the time in, alerts out, cooldowns remembered.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use super::text::{reclaim_sentence, suggested_older_than_secs};
use super::{Alert, AlertRule, AlertsConfig};
use crate::catalogue::{ReclaimMode, Rule};
use crate::dto::AlertDto;
use crate::history::Growth;
use crate::units::{format_bytes, format_span};

/// One producer, as the alert rules see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerInput {
    /// Rule id.
    pub id: String,
    /// Human name.
    pub name: String,
    /// Allocated bytes of its items now.
    pub allocated_bytes: u64,
    /// Its items now.
    pub items: u64,
    /// Its growth over [`AlertsConfig::producer_growth_window`] (from
    /// [`History::growth`](crate::history::History::growth)); `None` without history.
    pub growth: Option<Growth>,
    /// Whether cachewatch may delete its items.
    pub reclaim: ReclaimMode,
    /// The rule's age floor, seconds.
    pub min_age_secs: u64,
    /// Upstream report URLs (the first one is quoted).
    pub evidence: Vec<String>,
    /// The tool's own clean-up command (`brew cleanup`), offered before cachewatch's reclaim.
    pub managed_by: Option<String>,
}

impl ProducerInput {
    /// The input for catalogue rule `rule` with its current size and growth.
    pub fn from_rule(
        rule: &Rule,
        allocated_bytes: u64,
        items: u64,
        growth: Option<Growth>,
    ) -> Self {
        ProducerInput {
            id: rule.id.clone(),
            name: rule.name.clone(),
            allocated_bytes,
            items,
            growth,
            reclaim: rule.reclaim,
            min_age_secs: rule.min_age_secs,
            evidence: rule.evidence.clone(),
            managed_by: rule.managed_by.clone(),
        }
    }
}

/// A group of unattributed entries sharing a name shape (an unknown producer), as the alert rules
/// see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupInput {
    /// The shape (`tmp<rand8>/`).
    pub shape: String,
    /// The group's label on one line (what `rules add` takes back, whatever bytes its names
    /// hold).
    pub label: String,
    /// The root's path.
    pub root: String,
    /// Allocated bytes of its members now.
    pub allocated_bytes: u64,
    /// Its members now.
    pub items: u64,
    /// Its growth over the window, from what the monitor saw of it since it started; `None`
    /// until it was seen twice.
    pub growth: Option<Growth>,
    /// A process seen writing into it (`bun (pid 4242)`), else the writer its evidence names
    /// (`katago (exited; last seen 2 h ago)`).
    pub writer: Option<String>,
    /// Every writer named has exited while its members remain (a confirmed leak).
    pub confirmed_leak: bool,
}

/// What the monitor knows when it evaluates the rules.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AlertInputs {
    /// Producers with their growth.
    pub producers: Vec<ProducerInput>,
    /// Allocated bytes of all roots.
    pub total_allocated_bytes: u64,
    /// Free bytes of the fullest watched volume; `None` when unknown.
    pub free_bytes: Option<u64>,
    /// Time until that volume is full at the recent growth rate; `None` when not growing.
    pub disk_full_eta: Option<Duration>,
    /// Growth outside the roots per volume ([`crate::outside_growth::unexplained_growth`]);
    /// the notable ones fire `unexplained-growth` when the config turns it on.
    pub unexplained: Vec<crate::outside_growth::Unexplained>,
    /// Groups of unattributed entries by name shape, with their growth.
    pub groups: Vec<GroupInput>,
    /// Crash-loop alerts already evaluated (with their own cooldown) by
    /// [`crash::CrashLoopDetector`](crate::crash::CrashLoopDetector); passed through unchanged.
    pub crash_alerts: Vec<AlertDto>,
}

/// Evaluates the alert rules and remembers when each (rule, producer) last fired.
#[derive(Debug, Clone)]
pub struct Alerter {
    config: AlertsConfig,
    last_fired: HashMap<(AlertRule, Option<String>), SystemTime>,
}

impl Alerter {
    /// An alerter with no alert history.
    pub fn new(config: AlertsConfig) -> Alerter {
        Alerter {
            config,
            last_fired: HashMap::new(),
        }
    }

    /// The rules in force.
    pub fn config(&self) -> &AlertsConfig {
        &self.config
    }

    /// Replaces the limits (the settings were saved); the cooldowns already running are kept.
    pub fn set_config(&mut self, config: AlertsConfig) {
        self.config = config;
    }

    /// Remembers alerts that fired before (e.g. [`History::recent_alerts`](
    /// crate::history::History::recent_alerts) after a restart), so they stay silent for the rest
    /// of their cooldown. Crash-loop and unknown rules are ignored (the crash detector keeps its
    /// own cooldowns).
    pub fn restore(&mut self, fired: &[AlertDto]) {
        for a in fired.iter().filter_map(Alert::from_dto) {
            if a.rule == AlertRule::CrashLoop {
                continue;
            }
            let e = self
                .last_fired
                .entry((a.rule, a.producer))
                .or_insert(a.time);
            *e = (*e).max(a.time);
        }
    }

    /// The alerts that fire at `now`: each rule whose condition holds and that did not fire for
    /// the same producer within the cooldown; then the crash-loop alerts of `inputs`. Firing
    /// starts the cooldown.
    pub fn evaluate(&mut self, inputs: &AlertInputs, now: SystemTime) -> Vec<Alert> {
        let mut candidates = Vec::new();
        if let Some(limit) = self.config.total_limit_bytes {
            if inputs.total_allocated_bytes > limit {
                candidates.push(total_limit(inputs.total_allocated_bytes, limit, now));
            }
        }
        if let Some(free) = inputs.free_bytes {
            let min = self.config.free_disk_min_bytes;
            if min > 0 && free < min {
                candidates.push(free_disk(free, min, now));
            }
        }
        if let Some(eta) = inputs.disk_full_eta {
            let min = Duration::from_secs(self.config.disk_full_eta_min_hours.saturating_mul(3600));
            if eta < min {
                candidates.push(disk_full(eta, inputs.free_bytes, now));
            }
        }
        if self.config.unexplained_growth_alert {
            let largest = inputs
                .unexplained
                .iter()
                .filter(|u| u.notable)
                .max_by_key(|u| u.unexplained_bytes);
            if let Some(u) = largest {
                candidates.push(unexplained(u, now));
            }
        }
        for p in &inputs.producers {
            if let Some(a) = self.producer_growth(p, now) {
                candidates.push(a);
            }
        }
        for g in &inputs.groups {
            if let Some(a) = self.group_growth(g, now) {
                candidates.push(a);
            }
        }
        let mut fired: Vec<Alert> = candidates
            .into_iter()
            .filter(|a| self.take_cooldown(a, now))
            .collect();
        fired.extend(inputs.crash_alerts.iter().filter_map(Alert::from_dto));
        fired
    }

    /// True (and the cooldown starts) when `a` may fire at `now`.
    fn take_cooldown(&mut self, a: &Alert, now: SystemTime) -> bool {
        let key = (a.rule, a.producer.clone());
        if let Some(last) = self.last_fired.get(&key) {
            if now.duration_since(*last).unwrap_or_default() < self.config.cooldown {
                return false;
            }
        }
        self.last_fired.insert(key, now);
        true
    }

    /// Growth over the window (scaled down when measured over more) when it passes the
    /// producer-growth limits, and the rate per hour when at least an hour was observed.
    fn growth_over_limits(&self, g: Growth) -> Option<(i64, i64, String)> {
        let window = self.config.producer_growth_window;
        let (bytes, items) = if g.span() > window {
            (g.bytes_per(window)?, g.items_per(window)?)
        } else {
            (g.bytes, g.items)
        };
        let by_bytes = self.config.producer_growth_bytes > 0
            && bytes >= i64::try_from(self.config.producer_growth_bytes).unwrap_or(i64::MAX);
        let by_items = self.config.producer_growth_items > 0
            && items >= i64::try_from(self.config.producer_growth_items).unwrap_or(i64::MAX);
        if !(by_bytes || by_items) {
            return None;
        }
        let hour = Duration::from_secs(3600);
        let rate = g
            .bytes_per(hour)
            .filter(|_| g.span() >= hour)
            .map(|r| format!(" ({}/h)", format_bytes(r.into())))
            .unwrap_or_default();
        Some((bytes, items, rate))
    }

    fn group_growth(&self, grp: &GroupInput, now: SystemTime) -> Option<Alert> {
        let g = grp.growth?;
        let (_, _, rate) = self.growth_over_limits(g)?;
        let mut message = format!(
            "Unattributed entries of shape {} in {} grew {} and {} items in {}{rate}; now {} in {} items.",
            grp.shape,
            grp.root,
            format_bytes(g.bytes.into()),
            g.items,
            format_span(g.span().as_secs()),
            format_bytes(grp.allocated_bytes.into()),
            grp.items,
        );
        if let Some(w) = &grp.writer {
            message.push_str(&format!(" Written by {w}."));
        }
        if grp.confirmed_leak {
            message.push_str(&format!(
                " Its writers have all exited: a confirmed leak of {}.",
                format_bytes(grp.allocated_bytes.into())
            ));
        }
        message.push_str(&format!(
            " No rule knows this producer; make one: cachewatch rules add --id ID -- '{}'.",
            grp.label.replace('\'', r"'\''")
        ));
        Some(Alert {
            rule: AlertRule::UnknownProducerGrowth,
            producer: Some(format!("{}:{}", grp.root, grp.shape)),
            title: format!("Unknown producer growing: {}", grp.shape),
            message,
            time: now,
        })
    }

    fn producer_growth(&self, p: &ProducerInput, now: SystemTime) -> Option<Alert> {
        let g = p.growth?;
        let window = self.config.producer_growth_window;
        // Growth measured over more than the window (sparse samples) is scaled down to it.
        let (bytes, items) = if g.span() > window {
            (g.bytes_per(window)?, g.items_per(window)?)
        } else {
            (g.bytes, g.items)
        };
        let by_bytes = self.config.producer_growth_bytes > 0
            && bytes >= i64::try_from(self.config.producer_growth_bytes).unwrap_or(i64::MAX);
        let by_items = self.config.producer_growth_items > 0
            && items >= i64::try_from(self.config.producer_growth_items).unwrap_or(i64::MAX);
        if !(by_bytes || by_items) {
            return None;
        }
        let hour = Duration::from_secs(3600);
        // A rate only from at least an hour of data: minutes of a burst extrapolated to an hour
        // read as a figure nobody observed.
        let rate = g
            .bytes_per(hour)
            .filter(|_| g.span() >= hour)
            .map(|r| format!(" ({}/h)", format_bytes(r.into())))
            .unwrap_or_default();
        let mut message = format!(
            "{} grew {} and {} items in {}{rate}; now {} in {} items.",
            p.name,
            format_bytes(g.bytes.into()),
            g.items,
            format_span(g.span().as_secs()),
            format_bytes(p.allocated_bytes.into()),
            p.items,
        );
        if let Some(cmd) = &p.managed_by {
            message.push_str(&format!(
                " Its tool manages it: run `{cmd}` first (its own clean-up)."
            ));
        }
        match p.reclaim {
            ReclaimMode::Never => message.push_str(" cachewatch does not delete these."),
            ReclaimMode::Auto | ReclaimMode::Manual => {
                message.push_str(&reclaim_sentence(&crate::dto::SuggestedReclaim {
                    producer: p.id.clone(),
                    older_than_secs: suggested_older_than_secs(p.min_age_secs),
                }))
            }
        }
        if let Some(url) = p.evidence.first() {
            message.push_str(&format!(" Upstream: {url}"));
        }
        Some(Alert {
            rule: AlertRule::ProducerGrowth,
            producer: Some(p.id.clone()),
            title: format!("{} is growing fast", p.name),
            message,
            time: now,
        })
    }
}

fn total_limit(total: u64, limit: u64, now: SystemTime) -> Alert {
    Alert {
        rule: AlertRule::TotalLimit,
        producer: None,
        title: "Temp and cache dirs are large".to_string(),
        message: format!(
            "The watched dirs hold {}, above the limit of {}. See `cachewatch status` for the \
             largest producers and `cachewatch reclaim` to free space.",
            format_bytes(total.into()),
            format_bytes(limit.into())
        ),
        time: now,
    }
}

fn free_disk(free: u64, min: u64, now: SystemTime) -> Alert {
    Alert {
        rule: AlertRule::FreeDisk,
        producer: None,
        title: "Disk space is low".to_string(),
        message: format!(
            "Only {} free, below {}. See `cachewatch status` for what can be reclaimed.",
            format_bytes(free.into()),
            format_bytes(min.into())
        ),
        time: now,
    }
}

fn disk_full(eta: Duration, free: Option<u64>, now: SystemTime) -> Alert {
    let free = free.map_or_else(String::new, |f| {
        format!(" ({} free)", format_bytes(f.into()))
    });
    Alert {
        rule: AlertRule::DiskFullEta,
        producer: None,
        title: "Disk filling up".to_string(),
        message: format!(
            "At the recent growth rate the disk is full in {}{free}. See what grew with \
             `cachewatch history --since 24h`.",
            format_span(eta.as_secs())
        ),
        time: now,
    }
}

fn unexplained(u: &crate::outside_growth::Unexplained, now: SystemTime) -> Alert {
    Alert {
        rule: AlertRule::UnexplainedGrowth,
        producer: None,
        title: "Something outside the watched dirs is growing".to_string(),
        message: format!(
            "{} It grew {}.",
            u.message(),
            format_bytes(u.unexplained_bytes.into())
        ),
        time: now,
    }
}
