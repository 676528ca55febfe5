//! A rule's `contains` / `lacks` signature, checked as the walk classifies an entry: one
//! `fstatat` per component of each entry named, relative to the fd of the dir being listed, only
//! for an entry a rule with a signature already matches by name (no second pass over the tree).

use std::ffi::CStr;
use std::ffi::CString;
use std::os::fd::BorrowedFd;
use std::os::unix::ffi::OsStrExt;

/// True when `<dir>/<entry>/<inside>` exists (`lstat`, nothing followed): `inside` is a relative
/// path of plain names, and every dir on the way to its last component must be a real dir (a
/// symlink there makes the entry absent); `inside` ending in `/` must itself be a real dir.
pub(super) fn has_entry(dir: BorrowedFd<'_>, entry: &CStr, inside: &str) -> bool {
    let mut path = entry.to_bytes().to_vec();
    let (inside, want_dir) = match inside.strip_suffix('/') {
        Some(d) => (d, true),
        None => (inside, false),
    };
    let mut parts = inside.split('/').peekable();
    while let Some(part) = parts.next() {
        path.push(b'/');
        path.extend_from_slice(std::ffi::OsStr::new(part).as_bytes());
        let Ok(p) = CString::new(path.clone()) else {
            return false;
        };
        match crate::platform::scan_stat_at(dir, &p) {
            Ok(st) if (parts.peek().is_none() && !want_dir) || st.is_dir() => {}
            _ => return false,
        }
    }
    true
}
