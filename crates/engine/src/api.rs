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
//! - [`settings`]: the settings the app's window edits, stored in the config file itself (edited in
//!   place, so the user's comments and other keys survive), never in a second store.

pub mod groups;
pub mod history;
/// The bounded preview and result of a reclaim the window is sent (the shapes live in
/// [`crate::dto`]).
pub mod preview {
    pub use crate::dto::{
        KeptGroupDto, PreviewProducer, ReclaimEstimate, ReclaimPreview, ReclaimResult,
        KEPT_EXAMPLES, PREVIEW_ITEMS, RESULT_ITEMS,
    };
}
pub mod reclaim;
pub mod rules;
mod session;
pub mod settings;
pub mod start;

pub use session::{ApiError, Locations, Session};
