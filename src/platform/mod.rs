//! The only place that says `cfg(target_os)`: a facade with the same functions on macOS
//! (`macos.rs`) and elsewhere (`other.rs`, tested on Linux).

#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
use macos as imp;

#[cfg(not(target_os = "macos"))]
mod other;
#[cfg(not(target_os = "macos"))]
use other as imp;

use std::path::PathBuf;

use crate::roots::RootKind;

/// The platform's default root dirs, existing or not, in [`RootKind::ALL`] order.
///
/// macOS: `confstr(_CS_DARWIN_USER_TEMP_DIR)`, `confstr(_CS_DARWIN_USER_CACHE_DIR)`,
/// `~/Library/Caches`, `~/Library/Logs/DiagnosticReports`.
/// Elsewhere: `$TMPDIR` or `/tmp` (temp) and `$XDG_CACHE_HOME` or `~/.cache` (cache).
pub fn default_root_paths() -> Vec<(RootKind, PathBuf)> {
    imp::default_root_paths()
}
