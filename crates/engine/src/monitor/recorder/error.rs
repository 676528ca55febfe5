//! The errors of the monitor's history link.

use crate::history::HistoryError;

/// A history call of the monitor that failed.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The history database failed; the [`HistoryError`] names the file and the operation, and
    /// says whether the database is locked (a passing condition) or corrupt.
    #[error(transparent)]
    History(#[from] HistoryError),
    /// The blocking task that ran the history call panicked or was cancelled.
    #[error("history job failed: {0}")]
    Job(tokio::task::JoinError),
}

impl RecordError {
    /// The history's error, unless the job itself failed.
    pub fn history(&self) -> Option<&HistoryError> {
        match self {
            RecordError::History(e) => Some(e),
            RecordError::Job(_) => None,
        }
    }

    /// True when another process holds the database lock: try again later. (Anything else, a
    /// corrupt database first, means running without history: see `availability`.)
    pub fn is_locked(&self) -> bool {
        self.history().is_some_and(HistoryError::is_locked)
    }
}
