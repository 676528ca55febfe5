//! The `[alerts]` section of the config file.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::crash::CrashLoopConfig;

const GIB: u64 = 1 << 30;

/// Alert rules and their limits. Every limit can be turned off (`0`, or leaving out
/// `total_limit_bytes`). Windows and cooldowns are humantime strings in the file (`"1h"`, `"6h"`);
/// sizes are bytes or a size text (`"20 GiB"`, see [`crate::units::parse_size`]).
///
/// ```toml
/// [alerts]
/// producer_growth_bytes = 1073741824   # 1 GiB ...
/// producer_growth_items = 5000         # ... or 5000 items ...
/// producer_growth_window = "1h"        # ... within an hour
/// free_disk_min_bytes = 10737418240    # 10 GiB
/// disk_full_eta_min_hours = 24
/// cooldown = "6h"
/// unexplained_growth_alert = false          # notify on growth outside the watched dirs
/// unexplained_growth_min_bytes = 1073741824 # 1 GiB ...
/// unexplained_growth_min_ratio = 1          # ... and at least 1x what the watched dirs grew
/// unexplained_growth_window = "6h"
///
/// [alerts.crash_loop]
/// crash_loop_reports = 5
/// crash_loop_window = "10m"
/// crash_loop_cooldown = "6h"
/// ```
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AlertsConfig {
    /// A producer that grew by at least this many allocated bytes within
    /// [`AlertsConfig::producer_growth_window`] fires `producer-growth`; 0 turns the byte test off.
    #[serde(with = "crate::units::bytes_text")]
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub producer_growth_bytes: u64,
    /// ... or by at least this many items; 0 turns the item test off.
    #[serde(with = "crate::bounds::producer_growth_items")]
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub producer_growth_items: u64,
    /// The growth window (default 1 h).
    #[serde(with = "crate::bounds::growth_window")]
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub producer_growth_window: Duration,
    /// All watched dirs holding more than this many allocated bytes fire `total-limit`; off when
    /// absent (the default).
    #[serde(with = "crate::units::opt_bytes_text")]
    #[cfg_attr(feature = "ts", ts(type = "number | null"))]
    pub total_limit_bytes: Option<u64>,
    /// Free bytes on a watched volume below this fire `free-disk` (default 10 GiB); 0 turns it off.
    #[serde(with = "crate::units::bytes_text")]
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub free_disk_min_bytes: u64,
    /// A disk-full ETA below this many hours fires `disk-full-eta` (default 24); 0 turns it off.
    #[serde(with = "crate::bounds::disk_full_eta_min_hours")]
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub disk_full_eta_min_hours: u64,
    /// After an alert, the same rule for the same producer stays silent this long (default 6 h).
    #[serde(with = "crate::bounds::cooldown")]
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub cooldown: Duration,
    /// Fire `unexplained-growth` when free space fell by much more than the watched dirs grew
    /// ([`crate::outside_growth`]); off by default (a large download is growth outside the roots
    /// too). `status`, the app and `/metrics` show the figure whatever this says.
    pub unexplained_growth_alert: bool,
    /// Growth outside the roots is worth saying from this many bytes (default 1 GiB) ...
    #[serde(with = "crate::units::bytes_text")]
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub unexplained_growth_min_bytes: u64,
    /// ... and from this many times the watched dirs' own growth (default 1).
    #[serde(with = "crate::bounds::unexplained_growth_min_ratio")]
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub unexplained_growth_min_ratio: u64,
    /// The window free space and the roots are compared over (default 6 h).
    #[serde(with = "crate::bounds::unexplained_window")]
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub unexplained_growth_window: Duration,
    /// Crash-loop settings (`[alerts.crash_loop]`), used by
    /// [`crash::CrashLoopDetector`](crate::crash::CrashLoopDetector).
    pub crash_loop: CrashLoopConfig,
}

impl Default for AlertsConfig {
    fn default() -> Self {
        AlertsConfig {
            producer_growth_bytes: GIB,
            producer_growth_items: 5000,
            producer_growth_window: Duration::from_secs(3600),
            total_limit_bytes: None,
            free_disk_min_bytes: 10 * GIB,
            disk_full_eta_min_hours: 24,
            cooldown: Duration::from_secs(6 * 3600),
            unexplained_growth_alert: false,
            unexplained_growth_min_bytes: GIB,
            unexplained_growth_min_ratio: 1,
            unexplained_growth_window: Duration::from_secs(6 * 3600),
            crash_loop: CrashLoopConfig::default(),
        }
    }
}

impl From<&AlertsConfig> for crate::outside_growth::Limits {
    fn from(c: &AlertsConfig) -> crate::outside_growth::Limits {
        crate::outside_growth::Limits {
            window: c.unexplained_growth_window,
            min_bytes: c.unexplained_growth_min_bytes,
            min_ratio: c.unexplained_growth_min_ratio,
        }
    }
}
