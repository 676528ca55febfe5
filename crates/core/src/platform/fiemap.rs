//! Linux: the bytes of a file's extents that it shares with other files (reflink copies), from the
//! `FS_IOC_FIEMAP` ioctl's `FIEMAP_EXTENT_SHARED` flag, and which file systems can share extents.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// `_IOWR('f', 11, struct fiemap)` of `<linux/fs.h>` (`struct fiemap` is 32 bytes).
const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
/// The last extent of the file (`<linux/fiemap.h>`).
const FIEMAP_EXTENT_LAST: u32 = 0x0001;
/// The extent's blocks are shared with another file (a reflink or a snapshot).
const FIEMAP_EXTENT_SHARED: u32 = 0x2000;
/// Extents asked for per ioctl; files with more take several calls.
const EXTENTS_PER_CALL: usize = 64;

/// `struct fiemap_extent` of `<linux/fiemap.h>` (56 bytes).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct FiemapExtent {
    fe_logical: u64,
    fe_physical: u64,
    fe_length: u64,
    fe_reserved64: [u64; 2],
    fe_flags: u32,
    fe_reserved: [u32; 3],
}

/// `struct fiemap` with room for [`EXTENTS_PER_CALL`] extents.
#[repr(C)]
struct Fiemap {
    fm_start: u64,
    fm_length: u64,
    fm_flags: u32,
    fm_mapped_extents: u32,
    fm_extent_count: u32,
    fm_reserved: u32,
    fm_extents: [FiemapExtent; EXTENTS_PER_CALL],
}

/// Bytes of `file`'s extents flagged `FIEMAP_EXTENT_SHARED`, summed over the whole file.
///
/// # Errors
/// The ioctl's error: `EOPNOTSUPP`/`ENOTTY` where the file system has no FIEMAP (tmpfs), `EBADF`.
pub(super) fn shared_extent_bytes(file: &File) -> io::Result<u64> {
    let mut shared = 0u64;
    let mut start = 0u64;
    // A file has a bounded number of extents; the cap guards against a kernel that never advances.
    for _ in 0..1_000_000 {
        let mut map = Fiemap {
            fm_start: start,
            fm_length: u64::MAX - start,
            fm_flags: 0,
            fm_mapped_extents: 0,
            fm_extent_count: EXTENTS_PER_CALL as u32,
            fm_reserved: 0,
            fm_extents: [FiemapExtent::default(); EXTENTS_PER_CALL],
        };
        // SAFETY: `map` is a `struct fiemap` followed by room for `fm_extent_count` extents, as the
        // ioctl expects; the kernel writes at most that many.
        let rc = unsafe { libc::ioctl(file.as_raw_fd(), FS_IOC_FIEMAP, &mut map as *mut Fiemap) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        let n = (map.fm_mapped_extents as usize).min(EXTENTS_PER_CALL);
        let extents = &map.fm_extents[..n];
        for e in extents {
            if e.fe_flags & FIEMAP_EXTENT_SHARED != 0 {
                shared = shared.saturating_add(e.fe_length);
            }
        }
        match extents.last() {
            None => break,
            Some(last) if last.fe_flags & FIEMAP_EXTENT_LAST != 0 => break,
            Some(last) => {
                let next = last.fe_logical.saturating_add(last.fe_length);
                if next <= start {
                    break;
                }
                start = next;
            }
        }
    }
    Ok(shared)
}

/// `statfs(2)` magic numbers of the Linux file systems that share extents between files
/// (`cp --reflink`, `FICLONE`): XFS (with `reflink=1`), Btrfs, OCFS2 and bcachefs.
const SHARING_FS_MAGIC: [u64; 4] = [0x5846_5342, 0x9123_683E, 0x7461_636F, 0xCA45_1A4E];

/// True when the file system of `file` is one that can share extents ([`SHARING_FS_MAGIC`]).
pub(super) fn can_share_extents(file: &File) -> bool {
    // SAFETY: all-zero bytes are a valid `statfs` (integers only).
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is a writable `statfs`; the fd is open for the call.
    let rc = unsafe { libc::fstatfs(file.as_raw_fd(), &mut st) };
    // f_type is signed on some targets; the magic numbers are compared as their 32-bit patterns.
    rc == 0 && SHARING_FS_MAGIC.contains(&(st.f_type as u64 & 0xFFFF_FFFF))
}
