//! CacheWatch engine: watch the per-user temp and cache dirs, attribute what is in them to known
//! leaking producers, keep the growth history, and reclaim space safely.
//!
//! The engine knows nothing of Tauri, clap or any UI. The CLI (`src/main.rs`, feature `cli`) and the
//! menu-bar app (`src-tauri/`) call the same functions.
//!
//! Flow: [`roots`] says which dirs to look at; [`scan`] measures them into an [`inventory::Inventory`],
//! attributing each item to a rule of the [`catalogue`]; [`reclaim`] plans and executes deletions under
//! the safety rules, checking liveness through [`process`]; [`history`] keeps the audit trail.
//!
//! # Known problems
//! - **FSEvents coalesces and reports canonical paths.** On macOS a root given as `/var/folders/...` is
//!   reported as `/private/var/folders/...`; every [`roots::Root`] keeps both spellings and matches
//!   either. FSEvents may also ask for a rescan (`MustScanSubDirs`); the watcher then rescans the root.
//! - **Files of other users** under a root cannot always be read; they are counted as unreadable and
//!   reported, never fatal, and never deleted.
//! - **APFS clones** share blocks that `stat` reports in full for each clone, so allocated bytes can
//!   exceed what deleting an item would free. `du` has the same blind spot.
//! - **Hard links** are counted once per scan (like `du`); which item gets the bytes of an inode linked
//!   from two items is not specified.
//! - **Full Disk Access.** Without it, macOS hides some dirs (e.g. other apps' containers); the scan
//!   counts them as unreadable.
//! - **Open-file checks** see only processes of the current user (`/proc` on Linux, `libproc` on macOS).

pub mod alerts;
pub mod catalogue;
pub mod clock;
pub mod config;
pub mod crash;
pub mod history;
pub mod inventory;
pub mod metrics;
pub mod monitor;
pub mod platform;
pub mod process;
pub mod procwatch;
pub mod reclaim;
pub mod roots;
pub mod scan;
pub mod snapshot;
mod toml_lines;
pub mod units;
pub mod watch;

pub use catalogue::Catalogue;
pub use inventory::Inventory;
pub use roots::{Root, RootKind};
