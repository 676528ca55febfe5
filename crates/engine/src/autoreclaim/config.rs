//! The `[[auto_reclaim]]` section of the config file as written. The config checks it against the
//! catalogue (`LoadedConfig::auto_reclaim`) into [`AutoRule`](super::AutoRule)s.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use toml::Spanned;

/// One `[[auto_reclaim]]` table as written (see [`crate::autoreclaim`] for the keys).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleConfig {
    /// Optional name (default: the producer ids joined with `+`).
    #[serde(default)]
    pub name: Option<String>,
    /// Catalogue ids.
    pub producers: Spanned<Vec<Spanned<String>>>,
    /// The age threshold (humantime: `"1h"`, `"3d"`).
    #[serde(with = "crate::bounds::older_than")]
    pub older_than: Duration,
    /// Run on this interval (humantime).
    #[serde(default, with = "crate::bounds::every::opt")]
    pub every: Option<Duration>,
    /// Run when the producers hold more items than this.
    #[serde(default)]
    pub when_items_over: Option<u64>,
    /// Run when the producers hold more allocated bytes than this.
    #[serde(default, with = "crate::units::opt_bytes_text")]
    pub when_bytes_over: Option<u64>,
    /// Run when a watched volume's free bytes fall below this.
    #[serde(default, with = "crate::units::opt_bytes_text")]
    pub when_free_below: Option<u64>,
}
