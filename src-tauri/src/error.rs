//! The error shape of every IPC command: `{code, message}`.

use cachewatch::monitor::MonitorError;
use serde::{Deserialize, Serialize};

use crate::settings::SettingsError;

/// An error as the window receives it: a stable kebab-case `code` to branch on and a `message`
/// to show (lowercase, names the bad value, says what to do).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{code}: {message}")]
pub struct IpcError {
    /// Stable code, e.g. `unknown-plan`, `stopped`, `settings`.
    pub code: String,
    /// Human-readable message.
    pub message: String,
}

impl IpcError {
    /// An error with `code` and `message`.
    pub fn new(code: &str, message: impl Into<String>) -> IpcError {
        IpcError {
            code: code.to_owned(),
            message: message.into(),
        }
    }
}

impl From<MonitorError> for IpcError {
    fn from(e: MonitorError) -> IpcError {
        let code = match &e {
            MonitorError::NoRuntime => "no-runtime",
            MonitorError::Stopped => "stopped",
            MonitorError::UnknownPlan { .. } => "unknown-plan",
            MonitorError::UnknownProducer { .. } => "unknown-producer",
            MonitorError::FlushTimeout { .. } => "flush-timeout",
            MonitorError::Job { .. } => "job-failed",
        };
        IpcError::new(code, e.to_string())
    }
}

impl From<SettingsError> for IpcError {
    fn from(e: SettingsError) -> IpcError {
        IpcError::new("settings", e.to_string())
    }
}
