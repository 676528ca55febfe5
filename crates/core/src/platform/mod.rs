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

mod fd;
#[cfg(not(target_os = "macos"))]
mod fd_linux;
#[cfg(target_os = "macos")]
mod fd_macos;

pub use fd::{mount_id, open_dir_beneath, stat_at, stat_fd, EntryStat, FileKind, MountId, FD_WALK};

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

/// Files that processes hold open or mapped, gathered once (see [`open_files`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenFiles {
    /// `(pid, path)` of every open file descriptor, working dir and file mapping seen, paths as the
    /// kernel reports them (absolute, symlinks resolved). Unsorted; may hold duplicates.
    pub files: Vec<(u32, PathBuf)>,
    /// Processes that could not be inspected (other users', or exited meanwhile).
    pub skipped_pids: usize,
}

/// The open files, working dirs and mapped files of every process this user may inspect.
///
/// Linux: `/proc/<pid>/fd/*`, `/proc/<pid>/cwd` and `/proc/<pid>/maps`. macOS: `libproc`
/// (`proc_pidinfo(PROC_PIDLISTFDS)` and `proc_pidfdinfo(PROC_PIDFDVNODEPATHINFO)` per fd, the
/// working dir, and the file-backed regions). Processes of other users that cannot be read are
/// skipped and counted in [`OpenFiles::skipped_pids`]; never an error.
pub fn open_files() -> OpenFiles {
    imp::open_files()
}

/// Number of threads of process `pid`; `None` when the process is gone or cannot be inspected.
///
/// Linux: the `Threads:` line of `/proc/<pid>/status`. macOS: `libproc`
/// `proc_pidinfo(PROC_PIDTASKINFO).pti_threadnum`.
pub fn thread_count(pid: u32) -> Option<u32> {
    imp::thread_count(pid)
}

/// Hands the allocator's free heap memory back to the OS, so the resident set after a large
/// transient allocation (a full scan) drops to what is live. Cheap when there is little to return;
/// call it after big jobs, not in hot loops.
///
/// Linux with glibc: `malloc_trim(0)`. macOS: `malloc_zone_pressure_relief(NULL, 0)`. Elsewhere a
/// no-op.
pub fn release_free_memory() {
    imp::release_free_memory();
}
