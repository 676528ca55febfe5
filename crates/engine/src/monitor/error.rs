//! What a monitor command can fail with.

use std::path::PathBuf;

/// Errors of the monitor.
#[derive(Debug, thiserror::Error)]
pub enum MonitorError {
    /// `spawn` was called outside a tokio runtime.
    #[error("the monitor needs a tokio runtime: call spawn from inside one")]
    NoRuntime,
    /// The monitor task has stopped (shut down or panicked).
    #[error("the monitor has stopped")]
    Stopped,
    /// `execute_reclaim` with an id no `plan_reclaim` returned, already executed, or dropped for
    /// newer plans.
    #[error(
        "unknown reclaim plan {id:?}: preview again (the last few plans are kept until executed)"
    )]
    UnknownPlan {
        /// The id given.
        id: String,
    },
    /// A plan's items could not be written to or read back from its temp file (in `dir`).
    #[error("reclaim plan: its temp file in {dir:?} could not be written or read: {source}")]
    PlanSpool {
        /// The temp dir.
        dir: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A producer id that the catalogue does not know.
    #[error("unknown producer {id:?}: see `cachewatch producers` for the ids")]
    UnknownProducer {
        /// The id given.
        id: String,
    },
    /// `flush` did not see its marker event from a root in time.
    #[error("flush timed out waiting for events from root {path:?}")]
    FlushTimeout {
        /// The root's canonical path.
        path: PathBuf,
    },
    /// A reclaim was asked for but there is no history database to write its audit rows to first,
    /// so nothing was deleted (safety rule 7).
    #[error("nothing deleted: no history database to write the audit rows to first{why}")]
    NoAudit {
        /// Why there is none (`: ...`), or empty.
        why: String,
    },
    /// The audit rows could not be written before deleting, so nothing was deleted.
    #[error(transparent)]
    Audit(#[from] crate::audit::AuditNotWritten),
    /// A blocking job (scan, measure, reclaim) panicked.
    #[error("{what} failed: {message}")]
    Job {
        /// Which job.
        what: &'static str,
        /// The panic or join error.
        message: String,
    },
}
