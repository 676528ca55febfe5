//! A rule's `contains` signature, checked as the walk classifies an entry: one `fstatat` per
//! required name, relative to the fd of the dir being listed, only for an entry a rule with a
//! signature already matches by name (no second pass over the tree).

use std::ffi::{CStr, CString};
use std::os::fd::BorrowedFd;
use std::os::unix::ffi::OsStrExt;

/// True when `<dir>/<entry>/<inside>` exists (`lstat`, the last component not followed).
pub(super) fn has_entry(dir: BorrowedFd<'_>, entry: &CStr, inside: &str) -> bool {
    let mut path = entry.to_bytes().to_vec();
    path.push(b'/');
    path.extend_from_slice(std::ffi::OsStr::new(inside).as_bytes());
    CString::new(path).is_ok_and(|p| crate::platform::scan_stat_at(dir, &p).is_ok())
}
