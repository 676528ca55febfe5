//! Reclaim as every front end runs it: a plan with the session's protected paths, then an execute
//! whose audit rows are in the history database before anything is deleted (safety rule 7). The
//! service lives in [`crate::audit`], under the monitor that runs it for the app; this is its
//! place in the API.

pub use crate::audit::{
    execute_streamed_batches, plan_streamed, run_batches, AuditNotWritten, AuditedReport,
    BatchProgress, NextBatch,
};
