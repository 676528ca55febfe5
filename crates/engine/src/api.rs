//! The one API both front ends call: what "run CacheWatch" means, in one place.
//!
//! The CLI (`crates/cli`) and the menu-bar app (`src-tauri/`) are adapters over this module; neither
//! holds policy of its own:
//! - [`Session`]: the config file, the data dir, the roots, the catalogue, the protected paths and
//!   the monitor's options, resolved the same way for both (`--config`/`CACHEWATCH_CONFIG`,
//!   `--data-dir`/`CACHEWATCH_DATA_DIR`, `--root KIND=PATH`, then the config, then the platform).
//! - [`reclaim`]: plan a reclaim with the session's protected paths, and execute it with every
//!   audit row written before its deletion (safety rule 7), whoever asks: the CLI, the app (through
//!   the monitor) or a rule.
//! - [`history`]: a producer's samples and reclaims over a span (its chart), the past reclaims.
//! - [`groups`]: a group of unattributed entries made a rule (previewed with the engine's own
//!   check, then written into the config) or its shape ignored (`[groups] ignore`).
//! - [`scan_report`]: a one-shot scan's result in the snapshot's DTOs (`cachewatch scan`).
//! - [`report`]: a Markdown draft for the tracker of the program that leaves a group (or a
//!   producer's items) behind, with the figures it is made from; nothing is sent.
//! - [`settings`]: the settings the app's window edits, stored in the config file itself (edited in
//!   place, so the user's comments and other keys survive), never in a second store.
//!
//! Together with [`crate::dto`] this module is the front ends' only door into the engine (CI's
//! module-graph step fails on any other path from `crates/cli` or `src-tauri`): the few engine
//! and core items they use are re-exported here, each under one path, grouped by what they are
//! for ([`units`], [`scan`], [`catalogue`], [`monitor`], ...).

mod front;
pub mod groups;
pub mod history;
pub mod reclaim;
pub mod report;
pub mod rules;
pub mod scan_report;
pub use front::{
    autoreclaim, catalogue, config, crash, explain, metrics, monitor, outside, platform, process,
    roots, safe_file, scan, shapes, units,
};
mod session;
pub mod settings;
pub mod start;

pub use session::{ApiError, Locations, Session};
