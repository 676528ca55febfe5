//! macOS twin of `scan_fs_linux.rs`: `getattrlistbulk` (one call lists a run of entries with
//! their attributes, parsed by `attrlist.rs`), with `fdopendir`/`readdir` (rustix `Dir`) and
//! `fstatat(AT_SYMLINK_NOFOLLOW)` as the fallback on volumes that refuse it.
//!
//! The scanner asks for each entry's `lstat` with [`stat_at`] from inside the listing's callback
//! (its first entries) or later (the batches of a big dir). An entry's attributes from the bulk
//! call are handed over for the call from inside the callback, matched by the listing's fd and
//! the very name pointer the callback got: that pointer lives in the listing's buffer, untouched
//! while the callback runs, so no other entry can match it. Any other call is an `fstatat`.

use std::cell::{Cell, RefCell};
use std::ffi::{c_char, CStr};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};

use rustix::fs::{AtFlags, Dir, FileType};
use rustix::io::Errno;

use super::attrlist::{self, AttrSet, REQUEST};
use super::fd::time_of;
use super::scan_fs::{is_dot, ScanKind, ScanStat};

/// Entries read per [`Listing::read_some`] with `readdir`.
const RUN: usize = 128;

/// Bytes of one `getattrlistbulk` buffer: about 200 entries of 24-byte names per call.
const BUF_BYTES: usize = 32 << 10;

/// Free bulk buffers kept per thread (more are freed).
const POOLED_BUFS: usize = 4;

thread_local! {
    static BUFS: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
    /// The entry whose callback runs on this thread, with its attributes from the bulk call.
    static LISTED: Cell<Option<Listed>> = const { Cell::new(None) };
}

/// An entry being handed to the listing's callback: its dir's fd, its name's address (in the
/// listing's buffer) and its `lstat` from the bulk call.
#[derive(Clone, Copy)]
struct Listed {
    fd: RawFd,
    name: *const c_char,
    stat: ScanStat,
}

/// Restores the entry listed before (a callback may list another dir: listings nest).
struct Restore(Option<Listed>);

impl Drop for Restore {
    fn drop(&mut self) {
        LISTED.with(|l| l.set(self.0));
    }
}

/// The bulk call's `lstat` of the entry whose callback runs on this thread, if it is `name` of
/// `dir` (the same fd and the same name in the listing's buffer).
pub(super) fn listed_stat(dir: BorrowedFd<'_>, name: &CStr) -> Option<ScanStat> {
    LISTED
        .with(Cell::get)
        .filter(|l| l.fd == dir.as_raw_fd() && std::ptr::eq(l.name, name.as_ptr()))
        .map(|l| l.stat)
}

#[allow(
    clippy::cast_sign_loss,
    clippy::cast_possible_truncation,
    clippy::unnecessary_cast
)]
pub(super) fn stat_at(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<ScanStat> {
    if let Some(stat) = listed_stat(dir, name) {
        return Ok(stat);
    }
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
        private_bytes: None,
    })
}

/// A dir being listed: with `getattrlistbulk` until the volume refuses it, then with `readdir`.
pub(super) struct Listing {
    fd: RawFd,
    how: How,
    ended: bool,
}

enum How {
    /// `getattrlistbulk` into a pooled buffer, asking for `attrs`; `first` until a call succeeded.
    Bulk {
        fd: OwnedFd,
        buf: Vec<u8>,
        attrs: AttrSet,
        first: bool,
    },
    Readdir(Dir),
    /// Only while switching from one to the other.
    Switching,
}

impl Listing {
    pub(super) fn new(fd: OwnedFd) -> io::Result<Listing> {
        let buf = BUFS
            .with(|b| b.borrow_mut().pop())
            .unwrap_or_else(|| vec![0; BUF_BYTES]);
        Ok(Listing {
            fd: fd.as_raw_fd(),
            how: How::Bulk {
                fd,
                buf,
                attrs: REQUEST,
                first: true,
            },
            ended: false,
        })
    }

    pub(super) fn fd(&self) -> BorrowedFd<'_> {
        // SAFETY: `fd` is the descriptor the listing owns (its `OwnedFd`, then its `Dir`'s
        // `dirfd`), open until the listing is dropped, which the borrow of `self` outlives.
        unsafe { BorrowedFd::borrow_raw(self.fd) }
    }

    pub(super) fn read_some(
        &mut self,
        mut f: impl FnMut(BorrowedFd<'_>, &CStr),
    ) -> io::Result<bool> {
        if self.ended {
            return Ok(false);
        }
        // `None`: the volume refused the bulk call; list on with `readdir`.
        let read = match &mut self.how {
            How::Bulk {
                fd,
                buf,
                attrs,
                first,
            } => match bulk(fd, buf, attrs, first) {
                Ok(Some(n)) => Some(hand_out(self.fd, buf, n, &mut f).map(|()| n > 0)),
                Ok(None) => None,
                Err(e) => Some(Err(e)),
            },
            How::Readdir(dir) => Some(read_dir(self.fd, dir, &mut f)),
            How::Switching => Some(Ok(false)),
        };
        let read = match read {
            Some(read) => read,
            None => match self.switch_to_readdir() {
                Ok(()) => return self.read_some(f),
                Err(e) => Err(e),
            },
        };
        if !matches!(read, Ok(true)) {
            self.ended = true;
        }
        read
    }

    /// Lists on with `readdir` (the bulk call was refused before it returned any entry).
    fn switch_to_readdir(&mut self) -> io::Result<()> {
        match std::mem::replace(&mut self.how, How::Switching) {
            How::Bulk { fd, buf, .. } => {
                give_back(buf);
                self.how = How::Readdir(Dir::new(fd)?);
                Ok(())
            }
            other => {
                self.how = other;
                Ok(())
            }
        }
    }
}

impl Drop for Listing {
    fn drop(&mut self) {
        if let How::Bulk { buf, .. } = &mut self.how {
            give_back(std::mem::take(buf));
        }
    }
}

fn give_back(buf: Vec<u8>) {
    // `try_with`: a listing dropped while its thread exits just frees its buffer.
    let _ = BUFS.try_with(|b| {
        let mut b = b.borrow_mut();
        if b.len() < POOLED_BUFS && buf.len() == BUF_BYTES {
            b.push(buf);
        }
    });
}

/// One `getattrlistbulk` call: `Some(entries)` (0 at the end of the dir), or `None` when the
/// volume refuses it before any entry came (`ENOTSUP`, or `EINVAL` for the attributes asked:
/// first without the extended ones, then for good).
///
/// # Errors
/// The call's error.
fn bulk(
    fd: &OwnedFd,
    buf: &mut [u8],
    attrs: &mut AttrSet,
    first: &mut bool,
) -> io::Result<Option<usize>> {
    loop {
        // SAFETY: all-zero bytes are a valid attrlist (integers only).
        let mut al: libc::attrlist = unsafe { std::mem::zeroed() };
        al.bitmapcount = libc::ATTR_BIT_MAP_COUNT;
        al.commonattr = attrs.common;
        al.dirattr = attrs.dir;
        al.fileattr = attrs.file;
        al.forkattr = attrs.fork;
        // SAFETY: `al` and `buf` are valid for the sizes given; the kernel writes only into `buf`.
        let n = unsafe {
            libc::getattrlistbulk(
                fd.as_raw_fd(),
                (&mut al as *mut libc::attrlist).cast(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                0,
            )
        };
        if let Ok(n) = usize::try_from(n) {
            *first = false;
            return Ok(Some(n));
        }
        let e = io::Error::last_os_error();
        match Errno::from_io_error(&e) {
            Some(Errno::INTR) => continue,
            Some(Errno::INVAL) if *first && attrs.fork != 0 => attrs.fork = 0,
            Some(Errno::INVAL | Errno::NOTSUP) if *first => return Ok(None),
            _ => return Err(e),
        }
    }
}

/// Hands the `n` entries of `buf` to `f`, each with its attributes offered to [`stat_at`].
///
/// # Errors
/// `InvalidData` for a buffer the parser cannot read.
fn hand_out(
    fd: RawFd,
    buf: &[u8],
    n: usize,
    f: &mut impl FnMut(BorrowedFd<'_>, &CStr),
) -> io::Result<()> {
    // SAFETY: as in `Listing::fd`.
    let dir = unsafe { BorrowedFd::borrow_raw(fd) };
    for entry in attrlist::entries(buf, n) {
        let e = entry.map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        if is_dot(e.name) {
            continue;
        }
        let listed = e.scan_stat().map(|stat| Listed {
            fd,
            name: e.name.as_ptr(),
            stat,
        });
        let _restore = Restore(LISTED.with(|l| l.replace(listed)));
        f(dir, e.name);
    }
    Ok(())
}

/// Up to [`RUN`] entries with `readdir`: `Ok(false)` at the end.
fn read_dir(
    fd: RawFd,
    dir: &mut Dir,
    f: &mut impl FnMut(BorrowedFd<'_>, &CStr),
) -> io::Result<bool> {
    // SAFETY: as in `Listing::fd`.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    for _ in 0..RUN {
        match dir.read() {
            None => return Ok(false),
            Some(Err(e)) => return Err(e.into()),
            Some(Ok(entry)) => {
                if !is_dot(entry.file_name()) {
                    f(fd, entry.file_name());
                }
            }
        }
    }
    Ok(true)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::os::fd::AsFd;

    /// Every entry with its `lstat` as the scanner gets it inside the callback (from the bulk
    /// call), and as `fstatat` gives it.
    fn listed(dir: &std::path::Path) -> BTreeMap<Vec<u8>, (ScanStat, ScanStat)> {
        let fd = super::super::scan_fs::open_dir_path(dir).unwrap();
        let mut l = Listing::new(fd).unwrap();
        assert!(
            matches!(l.how, How::Bulk { .. }),
            "starts with getattrlistbulk"
        );
        let mut out = BTreeMap::new();
        while l
            .read_some(|fd, name| {
                let handed = stat_at(fd, name).unwrap();
                // Another pointer to the same name is not the handed-over entry: `fstatat`.
                let owned = name.to_owned();
                let fresh = stat_at(fd.as_fd(), &owned).unwrap();
                out.insert(name.to_bytes().to_vec(), (handed, fresh));
            })
            .unwrap()
        {}
        assert!(
            matches!(l.how, How::Bulk { .. }),
            "APFS lists with getattrlistbulk to the end"
        );
        out
    }

    #[test]
    fn the_bulk_listing_hands_over_fstatat_s_stat_of_every_entry() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        for i in 0..1000 {
            std::fs::write(p.join(format!("f{i}")), vec![1u8; i * 37]).unwrap();
        }
        std::fs::create_dir(p.join("sub")).unwrap();
        std::os::unix::fs::symlink("f1", p.join("link")).unwrap();
        std::fs::hard_link(p.join("f999"), p.join("f999-again")).unwrap();
        let got = listed(p);
        assert_eq!(got.len(), 1003);
        for (name, (handed, fresh)) in &got {
            let mut fresh = *fresh;
            if fresh.is_dir() {
                // The scan reads link counts of non-dirs only; a dir's ATTR_DIR_LINKCOUNT may
                // differ from its st_nlink.
                fresh.nlink = handed.nlink;
            }
            assert_eq!(*handed, fresh, "{}", String::from_utf8_lossy(name));
        }
        // Outside the callback nothing is handed over.
        assert!(LISTED.with(Cell::get).is_none());
    }
}
