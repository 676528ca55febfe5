//! File-descriptor primitives for a reclaim that cannot be raced: open dirs beneath a dir fd
//! without following symlinks or crossing mounts, stat entries relative to a dir fd, and tell
//! which mount an fd lies on. Linux: `openat2` + `statx` (`fd_linux.rs`); macOS: `openat` with
//! `O_NOFOLLOW`/`O_NOFOLLOW_ANY` + `fstatfs` (`fd_macos.rs`).

use std::os::fd::{BorrowedFd, OwnedFd};
use std::path::Path;
use std::time::SystemTime;

#[cfg(not(target_os = "macos"))]
use super::fd_linux as imp;
#[cfg(target_os = "macos")]
use super::fd_macos as imp;

/// How this build walks to an item, for logs and the README: `openat2(RESOLVE_BENEATH |
/// RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV)` with a per-component `openat(O_NOFOLLOW)` fallback on
/// Linux; per-component `openat(O_NOFOLLOW | O_NOFOLLOW_ANY)` on macOS.
pub const FD_WALK: &str = imp::FD_WALK;

/// Which mount an entry lies on: Linux `statx` `stx_mnt_id` (falls back to the device on kernels
/// before 5.8); macOS `fstatfs` `f_fsid` and `f_mntonname`. Only compared for equality.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MountId(pub(super) Box<[u8]>);

/// The kind of an entry, as `lstat` sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A directory.
    Dir,
    /// A symbolic link (never followed).
    Symlink,
    /// Anything else: a regular file, a socket, a fifo, a device.
    Other,
}

/// What reclaim needs of one entry's `lstat`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryStat {
    /// Device id (`st_dev`, the same encoding as `std::os::unix::fs::MetadataExt::dev`).
    pub dev: u64,
    /// Inode number.
    pub ino: u64,
    /// Directory, symlink or other.
    pub kind: FileKind,
    /// Number of hard links.
    pub nlink: u64,
    /// Allocated bytes (`st_blocks * 512`).
    pub allocated_bytes: u64,
    /// Last modification, when the filesystem reports one.
    pub mtime: Option<SystemTime>,
    /// Last access, as the volume records it (`relatime` on Linux, APFS's default on macOS;
    /// never later than creation on a `noatime` volume), when the filesystem reports one.
    pub atime: Option<SystemTime>,
    /// Birth time (`statx` `btime`, `st_birthtime`), when the filesystem reports one.
    pub born: Option<SystemTime>,
    /// The mount the entry lies on, when the stat call tells (Linux `statx`); `None` on macOS,
    /// where [`mount_id`] of an opened dir tells instead. For a mount point this is the mounted
    /// filesystem's mount, not the parent's.
    pub mount: Option<MountId>,
}

/// Opens the directory at `rel` (one or more plain components, no `..`) beneath `dir`, never
/// following a symlink in any component and never crossing into another mount. The fd is
/// `O_RDONLY | O_DIRECTORY | O_CLOEXEC`.
///
/// # Errors
/// The OS error: `NotFound` when a component is missing; `ELOOP` (a component is a symlink),
/// `ENOTDIR` (a component is not a dir), `EXDEV` (a component is a mount point or the path
/// escapes `dir`) when the path is not a plain dir path beneath `dir`; `EINVAL` for a `rel` that is
/// absolute or has `.`/`..`.
pub fn open_dir_beneath(dir: BorrowedFd<'_>, rel: &Path) -> std::io::Result<OwnedFd> {
    let plain = !rel.as_os_str().is_empty()
        && rel
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
    if !plain {
        return Err(std::io::Error::from(std::io::ErrorKind::InvalidInput));
    }
    imp::open_dir_beneath(dir, rel)
}

/// `lstat` of the entry `name` (one plain component) in `dir`, never following a symlink.
///
/// # Errors
/// The OS error (`NotFound` when the entry is gone).
pub fn stat_at(dir: BorrowedFd<'_>, name: &std::ffi::OsStr) -> std::io::Result<EntryStat> {
    imp::stat_at(dir, name)
}

/// `fstat` of an open fd.
///
/// # Errors
/// The OS error.
pub fn stat_fd(fd: BorrowedFd<'_>) -> std::io::Result<EntryStat> {
    imp::stat_fd(fd)
}

/// The mount the open `fd` lies on (for a dir opened at a mount point: the mounted one).
///
/// # Errors
/// The OS error of `statx`/`fstatfs`.
pub fn mount_id(fd: BorrowedFd<'_>) -> std::io::Result<MountId> {
    imp::mount_id(fd)
}

/// `SystemTime` from seconds and nanoseconds since the epoch (negative seconds before it).
pub(super) fn time_of(secs: i64, nanos: u32) -> Option<SystemTime> {
    let nanos = std::time::Duration::from_nanos(u64::from(nanos));
    if secs >= 0 {
        SystemTime::UNIX_EPOCH.checked_add(std::time::Duration::from_secs(secs as u64) + nanos)
    } else {
        SystemTime::UNIX_EPOCH
            .checked_sub(std::time::Duration::from_secs(secs.unsigned_abs()))?
            .checked_add(nanos)
    }
}
