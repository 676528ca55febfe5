//! macOS twin of `scan_fs_linux.rs`: `fdopendir`/`readdir` (rustix `Dir`) and
//! `fstatat(AT_SYMLINK_NOFOLLOW)`, whose `st_birthtime` is the birth time.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};

use rustix::fs::{AtFlags, Dir, FileType};

use super::fd::time_of;
use super::scan_fs::{is_dot, ScanKind, ScanStat};

/// Entries read per [`Listing::read_some`].
const RUN: usize = 128;

#[allow(
    clippy::cast_sign_loss,
    clippy::cast_possible_truncation,
    clippy::unnecessary_cast
)]
pub(super) fn stat_at(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<ScanStat> {
    let s = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?;
    let kind = match FileType::from_raw_mode(s.st_mode) {
        FileType::Directory => ScanKind::Dir,
        FileType::Symlink => ScanKind::Symlink,
        FileType::RegularFile => ScanKind::File,
        _ => ScanKind::Other,
    };
    Ok(ScanStat {
        // As `MetadataExt::dev` (`st_dev as u64`).
        dev: s.st_dev as u64,
        ino: s.st_ino,
        nlink: u64::from(s.st_nlink),
        blocks: s.st_blocks as u64,
        size: s.st_size as u64,
        kind,
        mtime: time_of(s.st_mtime, s.st_mtime_nsec as u32),
        born: time_of(s.st_birthtime, s.st_birthtime_nsec as u32),
    })
}

/// A dir listed with `readdir`.
pub(super) struct Listing {
    dir: Dir,
    fd: RawFd,
    ended: bool,
}

impl Listing {
    pub(super) fn new(fd: OwnedFd) -> io::Result<Listing> {
        let raw = fd.as_raw_fd();
        Ok(Listing {
            dir: Dir::new(fd)?,
            fd: raw,
            ended: false,
        })
    }

    pub(super) fn fd(&self) -> BorrowedFd<'_> {
        // SAFETY: `fd` is the descriptor `dir` owns (`dirfd`), open until `dir` is dropped, which
        // the borrow of `self` outlives.
        unsafe { BorrowedFd::borrow_raw(self.fd) }
    }

    pub(super) fn read_some(
        &mut self,
        mut f: impl FnMut(BorrowedFd<'_>, &CStr),
    ) -> io::Result<bool> {
        if self.ended {
            return Ok(false);
        }
        // SAFETY: as in `fd`.
        let fd = unsafe { BorrowedFd::borrow_raw(self.fd) };
        for _ in 0..RUN {
            match self.dir.read() {
                None => {
                    self.ended = true;
                    return Ok(false);
                }
                Some(Err(e)) => {
                    self.ended = true;
                    return Err(e.into());
                }
                Some(Ok(entry)) => {
                    if !is_dot(entry.file_name()) {
                        f(fd, entry.file_name());
                    }
                }
            }
        }
        Ok(true)
    }
}
