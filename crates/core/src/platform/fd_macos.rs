//! macOS twins of `fd_linux.rs`: one `openat(O_NOFOLLOW | O_NOFOLLOW_ANY | O_DIRECTORY)` per
//! component with a mount check per step (`fstatfs`: `f_fsid` and `f_mntonname`), and
//! `fstatat(AT_SYMLINK_NOFOLLOW)` for entries.

use std::ffi::OsStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::fd::{time_of, EntryStat, FileKind, MountId};

pub(super) const FD_WALK: &str =
    "openat(O_NOFOLLOW | O_NOFOLLOW_ANY) per component with an fstatfs mount check";

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::NOFOLLOW_ANY)
    .union(OFlags::CLOEXEC);

pub(super) fn open_dir_beneath(dir: BorrowedFd<'_>, rel: &Path) -> std::io::Result<OwnedFd> {
    let mut mount = mount_id(dir)?;
    let mut cur: Option<OwnedFd> = None;
    for comp in rel.components() {
        let parent = cur.as_ref().map_or(dir, AsFd::as_fd);
        let next = rustix::fs::openat(parent, comp.as_os_str(), DIR_FLAGS, Mode::empty())?;
        let next_mount = mount_id(next.as_fd())?;
        if next_mount != mount {
            return Err(Errno::XDEV.into());
        }
        mount = next_mount;
        cur = Some(next);
    }
    cur.ok_or_else(|| std::io::Error::from(std::io::ErrorKind::InvalidInput))
}

fn entry(s: &rustix::fs::Stat) -> EntryStat {
    let kind = match FileType::from_raw_mode(s.st_mode) {
        FileType::Directory => FileKind::Dir,
        FileType::Symlink => FileKind::Symlink,
        _ => FileKind::Other,
    };
    EntryStat {
        dev: s.st_dev as u64,
        ino: s.st_ino,
        kind,
        nlink: u64::from(s.st_nlink),
        allocated_bytes: (s.st_blocks as u64) * 512,
        mtime: time_of(s.st_mtime, s.st_mtime_nsec as u32),
        atime: time_of(s.st_atime, s.st_atime_nsec as u32),
        born: time_of(s.st_birthtime, s.st_birthtime_nsec as u32),
        mount: None,
    }
}

pub(super) fn stat_at(dir: BorrowedFd<'_>, name: &OsStr) -> std::io::Result<EntryStat> {
    Ok(entry(&rustix::fs::statat(
        dir,
        name,
        AtFlags::SYMLINK_NOFOLLOW,
    )?))
}

pub(super) fn stat_fd(fd: BorrowedFd<'_>) -> std::io::Result<EntryStat> {
    Ok(entry(&rustix::fs::fstat(fd)?))
}

pub(super) fn mount_id(fd: BorrowedFd<'_>) -> std::io::Result<MountId> {
    let s = rustix::fs::fstatfs(fd)?;
    let mut b: Vec<u8> = Vec::with_capacity(8 + s.f_mntonname.len());
    // SAFETY: fsid_t is two i32s with no padding; reading it as bytes is sound.
    let fsid: [i32; 2] = unsafe { std::mem::transmute(s.f_fsid) };
    b.extend_from_slice(&fsid[0].to_le_bytes());
    b.extend_from_slice(&fsid[1].to_le_bytes());
    b.extend(
        s.f_mntonname
            .iter()
            .take_while(|c| **c != 0)
            .map(|c| *c as u8),
    );
    Ok(MountId(b.into()))
}
