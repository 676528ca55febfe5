//! Alert rules, evaluation and cooldowns.
//!
//! SKELETON — owned by the history/alerts helper.

use serde::{Deserialize, Serialize};

/// The `[alerts]` section of the config file. Filled in by the history/alerts helper.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AlertsConfig {}
