//! CacheWatch engine: watch the per-user temp and cache dirs, attribute what is in them to known
//! leaking producers, keep the growth history, and reclaim space safely.
//!
//! The engine knows nothing of Tauri, clap or any UI. The CLI (`crates/cli`) and the menu-bar app
//! (`src-tauri/`) call the same functions, through [`api`] and [`dto`] only. The synchronous parts
//! live in `cachewatch-core`; the engine names them as its own modules (`crate::scan` is
//! `cachewatch_core::scan`) but does not re-export them: what a front end needs of them is
//! re-exported once, in [`api`].
//!
//! Flow: [`roots`] says which dirs to look at; [`scan`] measures them into an [`inventory::Inventory`],
//! attributing each item to a rule of the [`catalogue`]; [`reclaim`] plans and executes deletions under
//! the safety rules, checking liveness through [`process`]; [`history`] keeps the audit trail.
//!
//! # Known problems
//! See `cachewatch_core`'s crate docs (FSEvents, other users' files, APFS clones, hard links, Full
//! Disk Access, open-file checks).

use cachewatch_core::{
    catalogue, clock, explain, inventory, owner, platform, process, reclaim, roots, scan, shapes,
    toml_lines, units,
};

pub mod alerts;
pub mod api;
pub mod audit;
pub mod autoreclaim;
pub mod bounds;
mod capped_read;
pub mod config;
pub mod crash;
pub mod dto;
pub mod history;
pub mod metrics;
pub mod monitor;
pub mod outside_growth;
pub mod process_leaks;
pub mod safe_file;
pub mod snapshot;
pub mod watch;
