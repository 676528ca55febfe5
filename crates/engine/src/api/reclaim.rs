//! Reclaim as every front end runs it: a plan with the session's protected paths, then an execute
//! whose audit rows are in the history database before anything is deleted (safety rule 7). The
//! service lives in [`crate::audit`], under the monitor that runs it for the app; this is its
//! place in the API, with what a front end without a monitor (the CLI) needs around it: the
//! history database opened for writing and the probe of open files under the roots.

use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use crate::catalogue::Catalogue;
use crate::history::{History, HistoryError};
use crate::process::SystemProbe;
use crate::roots::Root;
use crate::scan::ScanProgress;

use super::{ApiError, Session};

pub use crate::audit::{
    execute_streamed_batches, plan_streamed, run_batches, AuditNotWritten, AuditedReport,
    BatchProgress, NextBatch,
};
pub use crate::reclaim::{
    path_text, AuditRecord, BatchOutcome, DeletedItem, KeepCode, KeepReason, KeptItem, PlannedItem,
    ReclaimErrorEntry, Spool, StreamedPlan, DEFAULT_BATCH_SIZE,
};

/// The probe of open files a reclaim of `roots` checks liveness with: it reads open files under
/// the roots only (and when each plan starts).
pub fn probe_under(roots: &[Root]) -> SystemProbe {
    SystemProbe::under(roots.iter().map(|r| r.canonical.clone()))
}

/// A reclaim planned by [`Session::plan_reclaim`]: the plan (its items spooled, its summary
/// held) and the probe its execute checks liveness with again.
pub struct Planned {
    /// The plan.
    pub plan: StreamedPlan,
    probe: SystemProbe,
}

/// The history database opened for writing, for audited deletions.
#[derive(Debug)]
pub struct OpenHistory {
    /// The database, shared by the batches.
    pub history: Mutex<History>,
    /// Its file.
    pub path: PathBuf,
}

/// Why an execute did not run or stopped: nothing is deleted without its audit row written first.
#[derive(Debug, thiserror::Error)]
pub enum ExecuteError {
    /// The session has no data dir for the history database.
    #[error(transparent)]
    Session(#[from] ApiError),
    /// The history database cannot be opened: nothing was deleted.
    #[error("opening the history database {}", path.display())]
    History {
        /// The database file.
        path: PathBuf,
        /// Why (boxed: the history's errors are large).
        #[source]
        source: Box<HistoryError>,
    },
    /// An audit row could not be written before its deletion: nothing more was deleted.
    #[error(transparent)]
    Audit(#[from] AuditNotWritten),
}

impl Session {
    /// Plans a reclaim of `producers` (empty: every `reclaim = "auto"` producer) for items older
    /// than `older_than` under `roots`, keeping the session's protected paths.
    ///
    /// # Errors
    /// The plan's temp file cannot be written.
    pub fn plan_reclaim(
        &self,
        roots: &[Root],
        catalogue: &Catalogue,
        producers: Vec<String>,
        older_than: Duration,
    ) -> std::io::Result<Planned> {
        let probe = probe_under(roots);
        let plan = plan_streamed(
            roots,
            catalogue,
            producers,
            older_than,
            self.protected_paths(),
            &probe,
            SystemTime::now(),
            &ScanProgress::new(),
        )?;
        Ok(Planned { plan, probe })
    }

    /// The session's history database, opened for writing (created when missing).
    ///
    /// # Errors
    /// No data dir; the database cannot be opened or created.
    pub fn open_history(&self) -> Result<OpenHistory, ExecuteError> {
        let path = self.db_path()?;
        match History::open(&path) {
            Ok(h) => Ok(OpenHistory {
                history: Mutex::new(h),
                path,
            }),
            Err(e) => Err(ExecuteError::History {
                path,
                source: Box::new(e),
            }),
        }
    }

    /// Executes `planned` in audited batches of `batch_size` items: each batch's audit rows are
    /// written to the session's history database before the batch is deleted. `on_batch` sees
    /// each batch done and may stop the execute between batches.
    ///
    /// # Errors
    /// The history database cannot be opened (nothing deleted) or an audit row cannot be written
    /// (nothing more deleted).
    pub fn execute_reclaim(
        &self,
        planned: &Planned,
        catalogue: &Catalogue,
        batch_size: usize,
        on_batch: &mut dyn FnMut(&BatchProgress, &BatchOutcome) -> ControlFlow<()>,
    ) -> Result<AuditedReport, ExecuteError> {
        let db = self.open_history()?;
        Ok(execute_streamed_batches(
            &planned.plan,
            catalogue,
            &planned.probe,
            &db.history,
            &db.path,
            SystemTime::now(),
            batch_size,
            on_batch,
        )?)
    }
}
