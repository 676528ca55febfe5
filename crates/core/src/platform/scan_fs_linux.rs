//! Linux twin of `scan_fs_macos.rs`: `getdents64` into a per-thread pool of buffers (no
//! allocation per dir or entry) and `statx`, with `fstatat` where the kernel has no `statx`.

use std::cell::RefCell;
use std::ffi::CStr;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::{AtFlags, FileType, RawDir, StatxFlags};
use rustix::io::Errno;

use super::fd::time_of;
use super::scan_fs::{is_dot, ScanKind, ScanStat};

/// Bytes of one listing buffer: about 680 entries of 24-byte names per `getdents64`.
const BUF_BYTES: usize = 32 << 10;

/// Free listing buffers kept per thread (more are freed).
const POOLED_BUFS: usize = 4;

thread_local! {
    static BUFS: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// Set once `statx` answered `ENOSYS` (kernel before 4.11) or `EPERM` (a seccomp filter).
static NO_STATX: AtomicBool = AtomicBool::new(false);

fn kind_of(mode: u32) -> ScanKind {
    match FileType::from_raw_mode(mode) {
        FileType::Directory => ScanKind::Dir,
        FileType::Symlink => ScanKind::Symlink,
        FileType::RegularFile => ScanKind::File,
        _ => ScanKind::Other,
    }
}

/// `getdents64` lists names and types only: no `lstat` comes with an entry.
pub(super) fn listed_stat(_dir: BorrowedFd<'_>, _name: &CStr) -> Option<ScanStat> {
    None
}

pub(super) fn stat_at(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<ScanStat> {
    if !NO_STATX.load(Ordering::Relaxed) {
        let flags = StatxFlags::BASIC_STATS | StatxFlags::BTIME;
        match rustix::fs::statx(dir, name, AtFlags::SYMLINK_NOFOLLOW, flags) {
            Ok(s) => {
                let has_btime = s.stx_mask & StatxFlags::BTIME.bits() != 0;
                return Ok(ScanStat {
                    dev: rustix::fs::makedev(s.stx_dev_major, s.stx_dev_minor),
                    ino: s.stx_ino,
                    nlink: u64::from(s.stx_nlink),
                    blocks: s.stx_blocks,
                    size: s.stx_size,
                    kind: kind_of(u32::from(s.stx_mode)),
                    mtime: time_of(s.stx_mtime.tv_sec, s.stx_mtime.tv_nsec),
                    born: has_btime
                        .then(|| time_of(s.stx_btime.tv_sec, s.stx_btime.tv_nsec))
                        .flatten(),
                    private_bytes: None,
                });
            }
            Err(Errno::NOSYS | Errno::PERM) => {
                // Only trust the answer when `fstatat` works where `statx` did not.
                let s = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?;
                NO_STATX.store(true, Ordering::Relaxed);
                return Ok(of_stat(&s));
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(of_stat(&rustix::fs::statat(
        dir,
        name,
        AtFlags::SYMLINK_NOFOLLOW,
    )?))
}

#[allow(
    clippy::cast_sign_loss,
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::unnecessary_cast
)]
fn of_stat(s: &rustix::fs::Stat) -> ScanStat {
    ScanStat {
        dev: s.st_dev as u64,
        ino: s.st_ino as u64,
        nlink: s.st_nlink as u64,
        blocks: s.st_blocks as u64,
        size: s.st_size as u64,
        kind: kind_of(s.st_mode as u32),
        mtime: time_of(s.st_mtime as i64, s.st_mtime_nsec as u32),
        // `fstatat` has no birth time (std's `created()` fails the same way without `statx`).
        born: None,
        private_bytes: None,
    }
}

/// A dir listed with `getdents64` into a pooled buffer.
pub(super) struct Listing {
    fd: OwnedFd,
    buf: Vec<u8>,
    ended: bool,
}

impl Listing {
    pub(super) fn new(fd: OwnedFd) -> io::Result<Listing> {
        let buf = BUFS
            .with(|b| b.borrow_mut().pop())
            .unwrap_or_else(|| Vec::with_capacity(BUF_BYTES));
        Ok(Listing {
            fd,
            buf,
            ended: false,
        })
    }

    pub(super) fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// One `getdents64`: every entry it returned goes to `f`, so the next call continues after
    /// them (a [`RawDir`] is dropped only with its buffer drained).
    pub(super) fn read_some(
        &mut self,
        mut f: impl FnMut(BorrowedFd<'_>, &CStr),
    ) -> io::Result<bool> {
        if self.ended {
            return Ok(false);
        }
        let fd = self.fd.as_fd();
        let mut raw = RawDir::new(fd, self.buf.spare_capacity_mut());
        loop {
            match raw.next() {
                None => {
                    self.ended = true;
                    return Ok(false);
                }
                Some(Err(e)) => {
                    self.ended = true;
                    return Err(e.into());
                }
                Some(Ok(entry)) => {
                    let name = entry.file_name();
                    if !is_dot(name) {
                        f(fd, name);
                    }
                }
            }
            if raw.is_buffer_empty() {
                return Ok(true);
            }
        }
    }
}

impl Drop for Listing {
    fn drop(&mut self) {
        let buf = std::mem::take(&mut self.buf);
        // `try_with`: a listing dropped while its thread exits just frees its buffer.
        let _ = BUFS.try_with(|b| {
            let mut b = b.borrow_mut();
            if b.len() < POOLED_BUFS {
                b.push(buf);
            }
        });
    }
}
