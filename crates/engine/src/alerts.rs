//! Alert rules, evaluation and cooldowns.
//!
//! [`AlertsConfig`] (the `[alerts]` section of the config) sets the rules; an [`Alerter`] evaluates
//! them on [`AlertInputs`] the monitor gathers (current sizes, growth from the
//! [`history`](crate::history), free space, disk-full ETA) and returns the [`Alert`]s that fire,
//! each at most once per cooldown per rule and producer. The evaluator is pure: time is passed in,
//! and its cooldown state can be restored from the alerts stored in the history DB, so a restart
//! does not repeat an alert.
//!
//! Rules (`rule` in [`AlertDto`]): `producer-growth` (a producer grew more than N bytes or M items
//! in a window: leaks like Metal's `gpuarchiver-*` are thousands of small dirs, so items count as
//! much as bytes), `total-limit`, `free-disk`, `disk-full-eta`, `unexplained-growth` (off by
//! default: free space fell by much more than the watched dirs grew, [`crate::outside_growth`]),
//! `root-gone` (a watched root removed or replaced by a link, fired by the monitor when it sees it)
//! and `crash-loop` (evaluated by [`crash::CrashLoopDetector`](crate::crash::CrashLoopDetector),
//! passed through here).

mod config;
mod eval;
mod text;
pub use text::{for_app, suggestion_in};

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::dto::AlertDto;
pub use crate::dto::AlertRule;

pub use crate::units::format_bytes;
pub use config::AlertsConfig;
pub use eval::{AlertInputs, Alerter, GroupInput, ProducerInput};

/// An alert that fired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alert {
    /// The rule.
    pub rule: AlertRule,
    /// The producer (rule id), where the alert is about one.
    pub producer: Option<String>,
    /// Short title.
    pub title: String,
    /// The text: producer, amount, rate, what to do.
    pub message: String,
    /// When it fired.
    pub time: SystemTime,
}

impl Alert {
    /// The DTO with row id `id` (0 when it is not stored).
    pub fn to_dto(&self, id: i64) -> AlertDto {
        AlertDto {
            id,
            ..AlertDto::new(
                crate::units::unix_secs(self.time),
                self.rule,
                self.producer.clone(),
                self.title.clone(),
                self.message.clone(),
            )
        }
    }

    /// The alert a DTO describes; `None` when its time is out of range.
    pub fn from_dto(dto: &AlertDto) -> Option<Alert> {
        Some(Alert {
            rule: dto.rule,
            producer: dto.producer.clone(),
            title: dto.title.clone(),
            message: dto.message.clone(),
            time: UNIX_EPOCH.checked_add(Duration::from_secs(dto.time_unix_secs))?,
        })
    }
}

impl From<&Alert> for AlertDto {
    fn from(a: &Alert) -> AlertDto {
        a.to_dto(0)
    }
}
