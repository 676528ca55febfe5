//! CacheWatch core: which dirs to look at ([`roots`]), who put what there ([`catalogue`]), how big it
//! is ([`scan`] into an [`inventory::Inventory`]), who is still using it ([`process`]) and how to
//! delete it safely ([`reclaim`]).
//!
//! Synchronous and free of any async runtime, file watcher or database: the live engine
//! (`cachewatch`) builds on it, and re-exports every module here, so `cachewatch::scan` and
//! `cachewatch_core::scan` are the same. Platform code lives in [`platform`] only.
//!
//! # Known problems
//! - **FSEvents coalesces and reports canonical paths.** On macOS a root given as `/var/folders/...` is
//!   reported as `/private/var/folders/...`; every [`roots::Root`] keeps both spellings and matches
//!   either. FSEvents may also ask for a rescan (`MustScanSubDirs`); the watcher then rescans the root.
//! - **Files of other users** under a root cannot always be read; they are counted as unreadable and
//!   reported, never fatal, and never deleted.
//! - **APFS clones** (and reflink copies on XFS/Btrfs) share blocks that `stat` reports in full for
//!   each clone, so allocated bytes can exceed what deleting an item would free; `du` has the same
//!   blind spot. [`inventory::Measure::freeable_bytes`] subtracts what each file shares (APFS private
//!   size, Linux FIEMAP), at one extra call per file on file systems that can share blocks. Blocks
//!   shared only among items deleted together (many clones of one old app version) still count as
//!   shared, so a sum of freeable bytes is a lower bound for such a group.
//! - **Hard links** are counted once per scan (like `du`); which item gets the bytes of an inode linked
//!   from two items is not specified.
//! - **Full Disk Access.** Without it, macOS hides some dirs (e.g. other apps' containers); the scan
//!   counts them as unreadable. `container-temp` roots (sandboxed apps' `Data/tmp`) are off by
//!   default because reading other apps' containers makes macOS ask the user; a container that
//!   cannot be read is reported by path and left out ([`roots::discover_container_temps`]).
//! - **Open-file checks** see only processes of the current user (`/proc` on Linux, `libproc` on macOS).
//!   Execute re-reads them before each batch of items; a file opened after that, while the batch
//!   runs, is not seen.
//! - **Scanning through a bind mount.** The scanner stays on the root's device, which a bind mount
//!   of the same filesystem shares, so an item holding one is measured with the mounted files;
//!   reclaim still never deletes through it (mount ids are compared) and keeps the item.

pub mod catalogue;
pub mod clock;
pub mod explain;
pub mod inventory;
pub mod owner;
pub mod platform;
pub mod process;
pub mod provenance;
pub mod reclaim;
pub mod roots;
pub mod scan;
pub mod shapes;
#[doc(hidden)]
pub mod toml_lines;
pub mod units;

pub use catalogue::Catalogue;
pub use inventory::Inventory;
pub use roots::{Root, RootKind};
