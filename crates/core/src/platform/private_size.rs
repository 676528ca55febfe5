//! macOS: a file's private (unshared) size on APFS, from `getattrlist` with
//! `ATTR_CMNEXT_PRIVATESIZE` (macOS 10.15+), and which volumes can clone files.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// The attribute buffer `getattrlist` fills: its length, which attributes it returned, then the
/// private size (`off_t`), packed on 4-byte boundaries as `<sys/attr.h>` lays attributes out.
#[repr(C, packed(4))]
struct PrivateSizeBuf {
    length: u32,
    returned: libc::attribute_set_t,
    private_size: libc::off_t,
}

/// Bytes of the file at `path` (not followed if a symlink) that no clone shares: what deleting it
/// frees.
///
/// # Errors
/// `getattrlist`'s error (`ENOENT`, `EACCES`, ...); `Unsupported` when the volume does not report
/// the attribute (not APFS, or macOS before 10.15).
pub(super) fn private_bytes(path: &Path) -> io::Result<u64> {
    let c_path = CString::new(path.as_os_str().as_bytes())?;
    // SAFETY: all-zero bytes are a valid attrlist and buffer (integers only).
    let mut attrs: libc::attrlist = unsafe { std::mem::zeroed() };
    attrs.bitmapcount = libc::ATTR_BIT_MAP_COUNT;
    attrs.commonattr = libc::ATTR_CMN_RETURNED_ATTRS;
    attrs.forkattr = libc::ATTR_CMNEXT_PRIVATESIZE;
    // SAFETY: as above.
    let mut buf: PrivateSizeBuf = unsafe { std::mem::zeroed() };
    // SAFETY: the path is NUL-terminated; `attrs` and `buf` are valid for the sizes given.
    let rc = unsafe {
        libc::getattrlist(
            c_path.as_ptr(),
            (&mut attrs as *mut libc::attrlist).cast(),
            (&mut buf as *mut PrivateSizeBuf).cast(),
            std::mem::size_of::<PrivateSizeBuf>(),
            libc::FSOPT_NOFOLLOW | libc::FSOPT_ATTR_CMN_EXTENDED,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let returned = buf.returned;
    if returned.forkattr & libc::ATTR_CMNEXT_PRIVATESIZE == 0 {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "the volume does not report ATTR_CMNEXT_PRIVATESIZE",
        ));
    }
    let size = buf.private_size;
    Ok(u64::try_from(size).unwrap_or(0))
}

/// True when the volume holding `path` is APFS (`statfs` `f_fstypename`), the file system whose
/// files can be clones.
pub(super) fn can_clone(path: &Path) -> bool {
    let Ok(c_path) = CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: all-zero bytes are a valid statfs (integers and char arrays).
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: the path is NUL-terminated and `st` is writable.
    if unsafe { libc::statfs(c_path.as_ptr(), &mut st) } != 0 {
        return false;
    }
    let name: Vec<u8> = st
        .f_fstypename
        .iter()
        .take_while(|c| **c != 0)
        .map(|c| *c as u8)
        .collect();
    name == b"apfs"
}
