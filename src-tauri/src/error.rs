//! The error shape of every IPC command: `{code, message}`, `code` one of [`ErrorCode`].

use cachewatch::api::monitor::MonitorError;
use cachewatch::api::ApiError;
use serde::{Deserialize, Serialize};

/// What went wrong, for the window to branch on (serialized kebab-case: `unknown-plan`, ...).
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorCode {
    /// The monitor was started outside a runtime (a bug).
    NoRuntime,
    /// The monitor has stopped.
    Stopped,
    /// A plan id that no plan has (or that was executed already).
    UnknownPlan,
    /// A producer id the catalogue does not know.
    UnknownProducer,
    /// A flush did not complete in time.
    FlushTimeout,
    /// A blocking job (scan, reclaim) failed.
    JobFailed,
    /// Nothing was deleted: the audit rows could not be written first.
    Audit,
    /// The settings could not be read or saved (the config file).
    Settings,
    /// The login item could not be read or changed.
    Autostart,
    /// A URL that is not a catalogue evidence link.
    NotEvidence,
    /// The browser or file manager could not be started.
    Opener,
    /// The history database could not be read.
    History,
    /// A size the settings could not read (`50 MB`: write `50 MiB`).
    BadSize,
    /// A threshold the engine could not read (`12 parsecs`, `500ms`).
    BadThreshold,
    /// A group cannot be acted on: gone or changed, no rule can be made of it, its rule would
    /// claim other entries or miss members, its shape is not ignored.
    Group,
}

impl ErrorCode {
    /// The kebab-case text the window sees.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::NoRuntime => "no-runtime",
            ErrorCode::Stopped => "stopped",
            ErrorCode::UnknownPlan => "unknown-plan",
            ErrorCode::UnknownProducer => "unknown-producer",
            ErrorCode::FlushTimeout => "flush-timeout",
            ErrorCode::JobFailed => "job-failed",
            ErrorCode::Audit => "audit",
            ErrorCode::Settings => "settings",
            ErrorCode::Autostart => "autostart",
            ErrorCode::NotEvidence => "not-evidence",
            ErrorCode::Opener => "opener",
            ErrorCode::History => "history",
            ErrorCode::BadSize => "bad-size",
            ErrorCode::BadThreshold => "bad-threshold",
            ErrorCode::Group => "group",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error as the window receives it: a stable `code` to branch on and a `message` to show
/// (lowercase, names the bad value, says what to do).
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{code}: {message}")]
pub struct IpcError {
    /// What went wrong.
    pub code: ErrorCode,
    /// Human-readable message.
    pub message: String,
    /// The settings field the error is about (`alerts.total_limit_bytes`), for the window to
    /// name and focus; absent when it is about none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub field: Option<String>,
}

impl IpcError {
    /// An error with `code` and `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> IpcError {
        IpcError {
            code,
            message: message.into(),
            field: None,
        }
    }
}

/// The code of a monitor error.
fn monitor_code(e: &MonitorError) -> ErrorCode {
    match e {
        MonitorError::NoRuntime => ErrorCode::NoRuntime,
        MonitorError::Stopped => ErrorCode::Stopped,
        MonitorError::UnknownPlan { .. } => ErrorCode::UnknownPlan,
        MonitorError::UnknownProducer { .. } => ErrorCode::UnknownProducer,
        MonitorError::FlushTimeout { .. } => ErrorCode::FlushTimeout,
        MonitorError::NoAudit { .. } | MonitorError::Audit(_) => ErrorCode::Audit,
        MonitorError::Job { .. } | MonitorError::PlanSpool { .. } => ErrorCode::JobFailed,
    }
}

impl From<MonitorError> for IpcError {
    fn from(e: MonitorError) -> IpcError {
        IpcError::new(monitor_code(&e), e.to_string())
    }
}

impl From<ApiError> for IpcError {
    fn from(e: ApiError) -> IpcError {
        let code = match &e {
            ApiError::UnknownProducer { .. } => ErrorCode::UnknownProducer,
            ApiError::AuditNotWritten { .. } => ErrorCode::Audit,
            ApiError::History(_) | ApiError::GroupKey { .. } => ErrorCode::History,
            ApiError::NoGroup { .. }
            | ApiError::GroupRule(_)
            | ApiError::BadRuleId { .. }
            | ApiError::RuleIdTaken { .. }
            | ApiError::RuleWouldClaim { .. }
            | ApiError::RuleWouldMiss { .. }
            | ApiError::GroupChanged { .. }
            | ApiError::ListRoot { .. }
            | ApiError::EmptyLabel
            | ApiError::NotIgnored { .. } => ErrorCode::Group,
            ApiError::Monitor(m) => monitor_code(m),
            ApiError::Job(_) => ErrorCode::JobFailed,
            ApiError::BadSize { field, .. } => {
                return IpcError {
                    field: Some(field.clone()).filter(|f| !f.is_empty()),
                    ..IpcError::new(ErrorCode::BadSize, e.to_string())
                }
            }
            _ => ErrorCode::Settings,
        };
        IpcError::new(code, e.to_string())
    }
}
