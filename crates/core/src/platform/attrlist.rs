//! The buffer `getattrlistbulk(2)` fills, parsed: a pure function over bytes, compiled on every OS
//! so that it is tested byte for byte on Linux (the syscall itself is in `scan_fs_macos.rs`).
//!
//! The layout, as `<sys/attr.h>` and the kernel's packer (`vfs_attrlist.c`: common attributes,
//! then directory *or* file attributes, then the extended common ones) lay it out, per entry:
//!
//! ```text
//! u32              length of the entry, this field included (the next entry starts there)
//! attribute_set_t  ATTR_CMN_RETURNED_ATTRS, always first: 5 x u32 (common, vol, dir, file, fork),
//!                  the attributes that follow; an attribute the volume cannot give is left out
//! u32              ATTR_CMN_ERROR (only when returned): the errno of an entry whose attributes
//!                  could not be read; packed first, out of bit order
//! attrreference_t  ATTR_CMN_NAME: i32 offset of the name *from this field*, u32 length with NUL
//! then, in bit order, each returned attribute at a 4-byte boundary (no 8-byte alignment):
//!   ATTR_CMN_DEVID u32 (dev_t) · ATTR_CMN_OBJTYPE u32 (fsobj_type_t) · ATTR_CMN_CRTIME and
//!   ATTR_CMN_MODTIME struct timespec (16 bytes in a 64-bit process) · ATTR_CMN_FILEID u64
//!   dir:  ATTR_DIR_LINKCOUNT u32 · ATTR_DIR_MOUNTSTATUS u32 · ATTR_DIR_ALLOCSIZE off_t ·
//!         ATTR_DIR_DATALENGTH off_t
//!   file (every non-dir: files, symlinks, fifos...): ATTR_FILE_LINKCOUNT u32 ·
//!         ATTR_FILE_ALLOCSIZE off_t (every fork, as `st_blocks`) · ATTR_FILE_DATALENGTH off_t
//!   fork field, read as extended common attributes: ATTR_CMNEXT_PRIVATESIZE off_t ·
//!         ATTR_CMNEXT_CLONEID u64
//! variable part: the name's bytes, NUL-terminated, padded to 4 bytes
//! ```
//!
//! Values are in the host's byte order (little-endian on both Mac architectures).

use std::ffi::CStr;

use super::fd::time_of;
use super::scan_fs::{ScanKind, ScanStat};

// The attribute bits, with their values from `<sys/attr.h>` (libc has them on Apple targets only).
pub(crate) const ATTR_CMN_NAME: u32 = 0x0000_0001;
pub(crate) const ATTR_CMN_DEVID: u32 = 0x0000_0002;
pub(crate) const ATTR_CMN_OBJTYPE: u32 = 0x0000_0008;
pub(crate) const ATTR_CMN_CRTIME: u32 = 0x0000_0200;
pub(crate) const ATTR_CMN_MODTIME: u32 = 0x0000_0400;
pub(crate) const ATTR_CMN_FILEID: u32 = 0x0200_0000;
pub(crate) const ATTR_CMN_ERROR: u32 = 0x2000_0000;
pub(crate) const ATTR_CMN_RETURNED_ATTRS: u32 = 0x8000_0000;
pub(crate) const ATTR_DIR_LINKCOUNT: u32 = 0x0000_0001;
pub(crate) const ATTR_DIR_MOUNTSTATUS: u32 = 0x0000_0004;
pub(crate) const ATTR_DIR_ALLOCSIZE: u32 = 0x0000_0008;
pub(crate) const ATTR_DIR_DATALENGTH: u32 = 0x0000_0020;
pub(crate) const ATTR_FILE_LINKCOUNT: u32 = 0x0000_0001;
pub(crate) const ATTR_FILE_ALLOCSIZE: u32 = 0x0000_0004;
pub(crate) const ATTR_FILE_DATALENGTH: u32 = 0x0000_0200;
pub(crate) const ATTR_CMNEXT_PRIVATESIZE: u32 = 0x0000_0008;
pub(crate) const ATTR_CMNEXT_CLONEID: u32 = 0x0000_0100;
/// `ATTR_DIR_MOUNTSTATUS`: a file system is mounted on this dir.
pub(crate) const DIR_MNTSTATUS_MNTPOINT: u32 = 0x0000_0001;

// `fsobj_type_t` values (`enum vtype`, `<sys/vnode.h>`).
pub(crate) const VREG: u32 = 1;
pub(crate) const VDIR: u32 = 2;
pub(crate) const VLNK: u32 = 5;

/// Bytes of a `struct timespec` in a 64-bit process (two `long`s).
const TIMESPEC_BYTES: usize = 16;

/// An `attribute_set_t` (or the bitmaps of an `attrlist`): one bitmap per group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct AttrSet {
    pub(crate) common: u32,
    pub(crate) vol: u32,
    pub(crate) dir: u32,
    pub(crate) file: u32,
    /// The fork group, which `getattrlistbulk` reads as the extended common attributes
    /// (`ATTR_CMNEXT_*`).
    pub(crate) fork: u32,
}

/// What the scan asks for: everything its `lstat` gives ([`ScanStat`]), the mount status (an entry
/// that is a mount point is `lstat`ed instead, so the scan stays on one device) and, in the same
/// call, the private size and clone id (APFS, macOS 10.15+; a volume without them leaves them
/// out).
pub(crate) const REQUEST: AttrSet = AttrSet {
    common: ATTR_CMN_RETURNED_ATTRS
        | ATTR_CMN_ERROR
        | ATTR_CMN_NAME
        | ATTR_CMN_DEVID
        | ATTR_CMN_OBJTYPE
        | ATTR_CMN_CRTIME
        | ATTR_CMN_MODTIME
        | ATTR_CMN_FILEID,
    vol: 0,
    dir: ATTR_DIR_LINKCOUNT | ATTR_DIR_MOUNTSTATUS | ATTR_DIR_ALLOCSIZE | ATTR_DIR_DATALENGTH,
    file: ATTR_FILE_LINKCOUNT | ATTR_FILE_ALLOCSIZE | ATTR_FILE_DATALENGTH,
    fork: ATTR_CMNEXT_PRIVATESIZE | ATTR_CMNEXT_CLONEID,
};

/// A `struct timespec`: seconds and nanoseconds since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Timespec {
    pub(crate) secs: i64,
    pub(crate) nanos: i64,
}

/// One entry of the buffer: its name and each attribute the kernel returned (`None`: not
/// returned).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BulkEntry<'a> {
    /// The entry's name (one component, any bytes but NUL and `/`).
    pub(crate) name: &'a CStr,
    /// `ATTR_CMN_RETURNED_ATTRS`.
    pub(crate) returned: AttrSet,
    /// `ATTR_CMN_ERROR`: 0, or the errno of reading this entry's attributes.
    pub(crate) error: u32,
    pub(crate) dev: Option<i32>,
    pub(crate) obj_type: Option<u32>,
    pub(crate) created: Option<Timespec>,
    pub(crate) modified: Option<Timespec>,
    pub(crate) file_id: Option<u64>,
    /// `ATTR_DIR_LINKCOUNT` or `ATTR_FILE_LINKCOUNT`.
    pub(crate) link_count: Option<u32>,
    pub(crate) mount_status: Option<u32>,
    /// Allocated bytes: `ATTR_DIR_ALLOCSIZE` or `ATTR_FILE_ALLOCSIZE`.
    pub(crate) alloc_bytes: Option<u64>,
    /// Length in bytes: `ATTR_DIR_DATALENGTH` or `ATTR_FILE_DATALENGTH` (`st_size`).
    pub(crate) data_bytes: Option<u64>,
    /// `ATTR_CMNEXT_PRIVATESIZE`: bytes no clone shares (what deleting the file frees).
    pub(crate) private_bytes: Option<u64>,
    /// `ATTR_CMNEXT_CLONEID`.
    pub(crate) clone_id: Option<u64>,
}

/// A buffer the parser cannot read. The kernel never writes one; a short read or a layout this
/// parser does not know would.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum AttrError {
    /// An entry, or a field of it, runs past the end of the buffer or of the entry.
    #[error("getattrlistbulk entry at byte {at} ends past the data (buffer of {len} bytes)")]
    Truncated { at: usize, len: usize },
    /// An entry without `ATTR_CMN_NAME` (which `getattrlistbulk` requires), or whose name has no
    /// NUL within its length.
    #[error("getattrlistbulk entry at byte {at} has no readable name")]
    BadName { at: usize },
    /// An entry returned an attribute this parser does not know the size of.
    #[error(
        "getattrlistbulk entry at byte {at} returned attributes {returned:?} beyond {REQUEST:?}"
    )]
    Unknown { at: usize, returned: AttrSet },
}

/// The first `count` entries of `buf` (what one `getattrlistbulk` call returned), in order. The
/// iterator ends after the first error.
pub(crate) fn entries(buf: &[u8], count: usize) -> Entries<'_> {
    Entries {
        buf,
        pos: 0,
        left: count,
    }
}

/// Iterator of [`entries`].
pub(crate) struct Entries<'a> {
    buf: &'a [u8],
    pos: usize,
    left: usize,
}

impl<'a> Iterator for Entries<'a> {
    type Item = Result<BulkEntry<'a>, AttrError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let at = self.pos;
        let truncated = AttrError::Truncated {
            at,
            len: self.buf.len(),
        };
        let parsed = read_u32(self.buf, at)
            .map(|len| len as usize)
            .filter(|&len| len >= 4)
            .and_then(|len| Some((len, self.buf.get(at..at.checked_add(len)?)?)))
            .ok_or(truncated)
            .and_then(|(len, entry)| parse_entry(entry, at, self.buf.len()).map(|e| (len, e)));
        match parsed {
            Ok((len, e)) => {
                self.pos = at + len;
                Some(Ok(e))
            }
            Err(e) => {
                self.left = 0;
                Some(Err(e))
            }
        }
    }
}

/// A reader of one entry's fixed part, each field bounds-checked against the entry.
struct Fields<'a> {
    entry: &'a [u8],
    pos: usize,
}

impl Fields<'_> {
    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let bytes = self.entry.get(self.pos..self.pos.checked_add(N)?)?;
        self.pos += N;
        bytes.try_into().ok()
    }

    fn u32(&mut self) -> Option<u32> {
        self.take::<4>().map(u32::from_ne_bytes)
    }

    fn i32(&mut self) -> Option<i32> {
        self.take::<4>().map(i32::from_ne_bytes)
    }

    fn u64(&mut self) -> Option<u64> {
        self.take::<8>().map(u64::from_ne_bytes)
    }

    /// An `off_t` size; a negative one (never written by a sane volume) reads as 0.
    fn size(&mut self) -> Option<u64> {
        self.take::<8>()
            .map(|b| u64::try_from(i64::from_ne_bytes(b)).unwrap_or(0))
    }

    fn timespec(&mut self) -> Option<Timespec> {
        let b = self.take::<TIMESPEC_BYTES>()?;
        let (secs, nanos) = b.split_at(8);
        Some(Timespec {
            secs: i64::from_ne_bytes(secs.try_into().ok()?),
            nanos: i64::from_ne_bytes(nanos.try_into().ok()?),
        })
    }

    /// `if returned & bit`, the field read by `read`.
    fn opt<T>(
        &mut self,
        returned: u32,
        bit: u32,
        read: fn(&mut Self) -> Option<T>,
    ) -> Result<Option<T>, ()> {
        if returned & bit == 0 {
            return Ok(None);
        }
        read(self).map(Some).ok_or(())
    }
}

fn read_u32(buf: &[u8], at: usize) -> Option<u32> {
    let b = buf.get(at..at.checked_add(4)?)?;
    Some(u32::from_ne_bytes(b.try_into().ok()?))
}

/// One entry (`entry` is exactly its `length` bytes; `at` its offset in a buffer of `buf_len`).
fn parse_entry(entry: &[u8], at: usize, buf_len: usize) -> Result<BulkEntry<'_>, AttrError> {
    let truncated = AttrError::Truncated { at, len: buf_len };
    let mut f = Fields { entry, pos: 4 };
    let returned = AttrSet {
        common: f.u32().ok_or(truncated.clone())?,
        vol: f.u32().ok_or(truncated.clone())?,
        dir: f.u32().ok_or(truncated.clone())?,
        file: f.u32().ok_or(truncated.clone())?,
        fork: f.u32().ok_or(truncated.clone())?,
    };
    let known = AttrSet {
        common: REQUEST.common,
        vol: 0,
        dir: REQUEST.dir,
        file: REQUEST.file,
        fork: REQUEST.fork,
    };
    if returned.common & !known.common != 0
        || returned.vol != 0
        || returned.dir & !known.dir != 0
        || returned.file & !known.file != 0
        || returned.fork & !known.fork != 0
    {
        return Err(AttrError::Unknown { at, returned });
    }
    let t = |_| truncated.clone();
    let error = f
        .opt(returned.common, ATTR_CMN_ERROR, Fields::u32)
        .map_err(t)?;
    if returned.common & ATTR_CMN_NAME == 0 {
        return Err(AttrError::BadName { at });
    }
    let name = name_at(&mut f).ok_or(AttrError::BadName { at })?;
    let c = returned.common;
    let dev = f.opt(c, ATTR_CMN_DEVID, Fields::i32).map_err(t)?;
    let obj_type = f.opt(c, ATTR_CMN_OBJTYPE, Fields::u32).map_err(t)?;
    let created = f.opt(c, ATTR_CMN_CRTIME, Fields::timespec).map_err(t)?;
    let modified = f.opt(c, ATTR_CMN_MODTIME, Fields::timespec).map_err(t)?;
    let file_id = f.opt(c, ATTR_CMN_FILEID, Fields::u64).map_err(t)?;
    let d = returned.dir;
    let dir_links = f.opt(d, ATTR_DIR_LINKCOUNT, Fields::u32).map_err(t)?;
    let mount_status = f.opt(d, ATTR_DIR_MOUNTSTATUS, Fields::u32).map_err(t)?;
    let dir_alloc = f.opt(d, ATTR_DIR_ALLOCSIZE, Fields::size).map_err(t)?;
    let dir_len = f.opt(d, ATTR_DIR_DATALENGTH, Fields::size).map_err(t)?;
    let fl = returned.file;
    let file_links = f.opt(fl, ATTR_FILE_LINKCOUNT, Fields::u32).map_err(t)?;
    let file_alloc = f.opt(fl, ATTR_FILE_ALLOCSIZE, Fields::size).map_err(t)?;
    let file_len = f.opt(fl, ATTR_FILE_DATALENGTH, Fields::size).map_err(t)?;
    let x = returned.fork;
    let private_bytes = f.opt(x, ATTR_CMNEXT_PRIVATESIZE, Fields::size).map_err(t)?;
    let clone_id = f.opt(x, ATTR_CMNEXT_CLONEID, Fields::u64).map_err(t)?;
    Ok(BulkEntry {
        name,
        returned,
        error: error.unwrap_or(0),
        dev,
        obj_type,
        created,
        modified,
        file_id,
        link_count: dir_links.or(file_links),
        mount_status,
        alloc_bytes: dir_alloc.or(file_alloc),
        data_bytes: dir_len.or(file_len),
        private_bytes,
        clone_id,
    })
}

/// The name an `attrreference_t` at the reader's position points to: `attr_dataoffset` counts from
/// the reference itself, `attr_length` includes the NUL; both must stay inside the entry.
fn name_at<'a>(f: &mut Fields<'a>) -> Option<&'a CStr> {
    let field = f.pos;
    let offset = f.i32()?;
    let len = f.u32()? as usize;
    let start = field.checked_add_signed(isize::try_from(offset).ok()?)?;
    let bytes = f.entry.get(start..start.checked_add(len)?)?;
    CStr::from_bytes_until_nul(bytes).ok()
}

impl BulkEntry<'_> {
    /// The entry's `lstat` as the scanner reads it, when every field it needs was returned and the
    /// entry is not a mount point; `None` (the caller then `lstat`s it) otherwise: an entry with an
    /// error, a volume that leaves an attribute out, a dir a file system is mounted on (whose
    /// `lstat` reports the mounted root, on another device).
    ///
    /// The fields map as `stat(2)` fills them from the same vnode attributes: `st_dev` from
    /// `ATTR_CMN_DEVID`, `st_ino` from `ATTR_CMN_FILEID`, `st_blocks` from the allocated size
    /// (rounded up to 512-byte blocks), `st_size` from the data length, `st_birthtime` from
    /// `ATTR_CMN_CRTIME`. A dir's link count is `ATTR_DIR_LINKCOUNT`, which may differ from its
    /// `st_nlink`; the scan reads link counts of non-dirs only.
    #[allow(clippy::cast_sign_loss, clippy::cast_possible_truncation)]
    pub(crate) fn scan_stat(&self) -> Option<ScanStat> {
        if self.error != 0 {
            return None;
        }
        let kind = match self.obj_type? {
            VDIR => ScanKind::Dir,
            VLNK => ScanKind::Symlink,
            VREG => ScanKind::File,
            _ => ScanKind::Other,
        };
        if kind == ScanKind::Dir && self.mount_status? & DIR_MNTSTATUS_MNTPOINT != 0 {
            return None;
        }
        let time = |t: Timespec| time_of(t.secs, t.nanos as u32);
        Some(ScanStat {
            // As `MetadataExt::dev` reads `st_dev` (an `i32`): sign-extended.
            dev: i64::from(self.dev?) as u64,
            ino: self.file_id?,
            nlink: u64::from(self.link_count?),
            blocks: self.alloc_bytes?.div_ceil(512),
            size: self.data_bytes?,
            kind,
            mtime: time(self.modified?),
            born: self.created.and_then(time),
            private_bytes: self.private_bytes.filter(|_| kind == ScanKind::File),
        })
    }
}

#[cfg(test)]
#[path = "attrlist_tests.rs"]
mod tests;
