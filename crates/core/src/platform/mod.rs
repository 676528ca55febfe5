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

#[cfg(target_os = "linux")]
mod fiemap;
#[cfg(target_os = "macos")]
mod private_size;

mod fd;
#[cfg(not(target_os = "macos"))]
mod fd_linux;
#[cfg(target_os = "macos")]
mod fd_macos;
mod open_set;

// The `getattrlistbulk` parser: used on macOS, tested everywhere.
#[cfg(any(target_os = "macos", test))]
mod attrlist;
mod scan_fs;
#[cfg(not(target_os = "macos"))]
mod scan_fs_linux;
#[cfg(target_os = "macos")]
mod scan_fs_macos;
mod volume;

pub use fd::{mount_id, open_dir_beneath, stat_at, stat_fd, EntryStat, FileKind, MountId, FD_WALK};
pub use open_set::{COARSE_BYTES, ENTRY_COST, EXACT_BYTES, EXACT_BYTES_PER_PROCESS};
pub(crate) use scan_fs::{
    is_replaced, listed_stat, open_dir_at, open_dir_path, open_files_limit, scan_stat_at, Listing,
    ScanKind, ScanStat,
};
pub use volume::{combine as combine_volume_free, volume_free, VolumeFree};

use std::io;
use std::path::{Path, PathBuf};

/// The platform's default dirs to watch, existing or not, one field per root kind that has a
/// default (`roots::default_roots` makes them roots).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DefaultDirs {
    /// The per-user temp dir.
    pub temp: PathBuf,
    /// The per-user cache dir.
    pub cache: Option<PathBuf>,
    /// `~/Library/Caches` (macOS).
    pub library_caches: Option<PathBuf>,
    /// `~/Library/Logs/DiagnosticReports` (macOS).
    pub diagnostic_reports: Option<PathBuf>,
    /// The code-sign clone dir `X` beside the temp dir `T` (macOS).
    pub code_sign_clones: Option<PathBuf>,
}

/// The platform's default root dirs, existing or not.
///
/// macOS: `confstr(_CS_DARWIN_USER_TEMP_DIR)`, `confstr(_CS_DARWIN_USER_CACHE_DIR)`,
/// `~/Library/Caches`, `~/Library/Logs/DiagnosticReports`, and the code-sign clone dir `X`, the
/// sibling of the temp dir `T` (there is no public `confstr` name for it; Chromium joins `X` to the
/// temp dir's parent the same way).
/// Elsewhere: `$TMPDIR` or `/tmp` (temp) and `$XDG_CACHE_HOME` or `~/.cache` (cache); a
/// `code-sign-clones` or `other` root only when configured.
pub fn default_dirs() -> DefaultDirs {
    imp::default_dirs()
}

/// The bundle identifier (`CFBundleIdentifier`) of the bundle whose executable `exe` is: the
/// `Info.plist` beside the `MacOS` dir holding it (`<X>.app/Contents/MacOS/<exe>`, and likewise
/// `.appex`, `.xpc` and other bundles), XML or binary. `None` when `exe` lies in no bundle or the
/// plist cannot be read.
///
/// macOS only: elsewhere always `None` (an app there is known by its executable name alone).
pub fn bundle_id_of_exe(exe: &Path) -> Option<String> {
    imp::bundle_id_of_exe(exe)
}

/// The operating system's name and version, as a bug report names them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OsRelease {
    /// The system's name: `macOS`; on Linux the distribution's (`NAME` of `/etc/os-release`,
    /// `Linux` when there is none).
    pub name: String,
    /// Its version: `kern.osproductversion` on macOS (`15.1`); `VERSION_ID` of
    /// `/etc/os-release` on Linux; `None` when it cannot be read.
    pub version: Option<String>,
    /// The kernel's release (`kern.osrelease`, `/proc/sys/kernel/osrelease`), where readable.
    pub kernel: Option<String>,
}

/// The name and version of the operating system this runs on ([`OsRelease`]).
pub fn os_release() -> OsRelease {
    imp::os_release()
}

/// The version of the app whose executable is `exe` (`CFBundleShortVersionString` of the bundle's
/// `Info.plist`, with `CFBundleVersion` in parentheses when it differs), where there is one.
///
/// macOS only: elsewhere always `None` (an executable carries no version to read without
/// running it, which a report never does).
pub fn app_version_of_exe(exe: &Path) -> Option<String> {
    imp::app_version_of_exe(exe)
}

/// The dirs installed apps live in: `/Applications` and `~/Applications` on macOS; none
/// elsewhere (no app bundles to compare a staged update with).
pub fn application_dirs() -> Vec<PathBuf> {
    imp::application_dirs()
}

/// Files that processes hold open or mapped, gathered once (see [`open_files`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenFiles {
    /// `(pid, path)` of every open file descriptor (but directories), working dir and file mapping
    /// seen in the scope, paths as the kernel reports them (absolute, symlinks resolved), each
    /// once (with the lowest pid holding it), sorted by path.
    pub files: Vec<(u32, PathBuf)>,
    /// `(pid, dir)`: the process holds something open at or under `dir` whose exact path was not
    /// kept (past the bound of what one process, or all, may make us hold; or a path the kernel
    /// could not name). An item at, under or above such a dir must be taken as in use. Sorted.
    pub coarse: Vec<(u32, PathBuf)>,
    /// Processes that could not be inspected (other users', or exited meanwhile).
    pub skipped_pids: usize,
    /// Processes that held more new paths in the scope than [`EXACT_BYTES_PER_PROCESS`] (or came
    /// after [`EXACT_BYTES`] was reached): the rest of theirs are in [`OpenFiles::coarse`].
    pub bounded_pids: usize,
}

/// The open files, working dirs and mapped files of every process this user may inspect.
///
/// A directory held open is not counted: a process listing it (`du`, `find`, an indexer, a
/// watcher, another scan) is reading it, not using it, and would otherwise keep any item it
/// happened to be walking through. A process whose working dir is inside an item still keeps it.
///
/// Linux: `/proc/<pid>/fd/*`, `/proc/<pid>/cwd` and `/proc/<pid>/maps` (read line by line, paths
/// unescaped as the kernel escapes them; " (deleted)" dropped only from a file with no link left,
/// as a `stat` of the open file tells). macOS: `libproc` (`proc_pidinfo(PROC_PIDLISTFDS)` and
/// `proc_pidfdinfo(PROC_PIDFDVNODEPATHINFO)` per fd, the working dir, and the file-backed
/// regions). Processes of other users that cannot be read are skipped and counted in
/// [`OpenFiles::skipped_pids`]; never an error.
///
/// Memory is bounded whatever the processes hold: each path is kept once, at most
/// [`EXACT_BYTES_PER_PROCESS`] of new paths per process and [`EXACT_BYTES`] in all (each path's
/// bytes plus [`ENTRY_COST`]); the rest as the dirs they lie in ([`OpenFiles::coarse`], merged
/// upwards past [`COARSE_BYTES`]). [`open_files_under`] keeps only what lies in some dirs.
pub fn open_files() -> OpenFiles {
    imp::open_files(None)
}

/// [`open_files`] at or under `dirs` only (absolute, canonical: the kernel reports canonical
/// paths), filtered while reading, so files elsewhere cost nothing however many there are.
pub fn open_files_under(dirs: &[PathBuf]) -> OpenFiles {
    imp::open_files(Some(dirs))
}

/// The mount points of every mounted file system (empty when they cannot be read).
///
/// Linux: field 5 of `/proc/self/mountinfo` (the kernel's octal escapes of space, tab, newline
/// and backslash undone). macOS: `getfsstat`'s
/// `f_mntonname`. Reclaim's plan keeps an item with a mount point inside it (`holds-mount`).
pub fn mount_points() -> Vec<PathBuf> {
    imp::mount_points()
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

/// True when the file system holding `dir` can share blocks between files, so that a file's
/// allocated bytes may exceed what deleting it frees: APFS on macOS (clones); XFS with reflink,
/// Btrfs, OCFS2 and bcachefs on Linux (reflink copies). False when it cannot, or cannot be asked.
/// One `statfs` call: ask once per root, not per file.
pub fn can_share_blocks(dir: &Path) -> bool {
    #[cfg(target_os = "macos")]
    {
        private_size::can_clone(dir)
    }
    #[cfg(target_os = "linux")]
    {
        std::fs::File::open(dir).is_ok_and(|f| fiemap::can_share_extents(&f))
    }
    #[cfg(not(any(target_os = "macos", target_os = "linux")))]
    {
        let _ = dir;
        false
    }
}

/// Bytes of the regular file at `path` (a symlink is not followed) that no other file shares:
/// what deleting it (its last link) frees, at most its allocated bytes.
///
/// macOS: `getattrlist` with `ATTR_CMNEXT_PRIVATESIZE` (APFS, macOS 10.15+). Linux: the file's
/// allocated bytes (`st_blocks * 512`) minus the bytes of its extents flagged
/// `FIEMAP_EXTENT_SHARED` (`FS_IOC_FIEMAP`). Blocks shared only between files that are deleted
/// together still count as shared, so for such a group this is a lower bound.
///
/// # Errors
/// The I/O error of opening or asking about the file (`NotFound`, `PermissionDenied`, `ELOOP` for a
/// symlink on Linux); `Unsupported` where the file system or the OS cannot tell (tmpfs, non-APFS
/// volumes, other Unix systems).
pub fn private_bytes(path: &Path) -> io::Result<u64> {
    #[cfg(target_os = "macos")]
    {
        private_size::private_bytes(path)
    }
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path)?;
        let allocated = file.metadata()?.blocks() * 512;
        let shared = fiemap::shared_extent_bytes(&file).map_err(|e| match e.raw_os_error() {
            Some(libc::EOPNOTSUPP) | Some(libc::ENOTTY) => {
                io::Error::new(io::ErrorKind::Unsupported, e)
            }
            _ => e,
        })?;
        Ok(allocated.saturating_sub(shared))
    }
    #[cfg(not(any(target_os = "macos", target_os = "linux")))]
    {
        let _ = path;
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "private bytes are known on macOS (APFS) and Linux (FIEMAP) only",
        ))
    }
}
