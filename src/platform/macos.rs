//! macOS implementations. Checked with `cargo check --target aarch64-apple-darwin`; not run here.

use std::ffi::{CStr, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use crate::roots::RootKind;

/// Reads a `confstr` path value such as `_CS_DARWIN_USER_TEMP_DIR` (ends with `/`).
fn confstr_path(name: libc::c_int) -> Option<PathBuf> {
    let mut buf = vec![0u8; libc::PATH_MAX as usize];
    // SAFETY: buf is writable for buf.len() bytes; confstr writes at most that many, NUL included.
    let n = unsafe { libc::confstr(name, buf.as_mut_ptr().cast(), buf.len()) };
    if n == 0 || n > buf.len() {
        return None;
    }
    let s = CStr::from_bytes_until_nul(&buf).ok()?;
    Some(PathBuf::from(OsStr::from_bytes(s.to_bytes())))
}

pub(super) fn default_root_paths() -> Vec<(RootKind, PathBuf)> {
    let mut out = Vec::new();
    let temp = confstr_path(libc::_CS_DARWIN_USER_TEMP_DIR)
        .or_else(|| std::env::var_os("TMPDIR").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    out.push((RootKind::Temp, temp));
    if let Some(cache) = confstr_path(libc::_CS_DARWIN_USER_CACHE_DIR) {
        out.push((RootKind::Cache, cache));
    }
    if let Some(dirs) = directories::BaseDirs::new() {
        let home = dirs.home_dir();
        out.push((RootKind::LibraryCaches, home.join("Library/Caches")));
        out.push((
            RootKind::DiagnosticReports,
            home.join("Library/Logs/DiagnosticReports"),
        ));
    }
    out
}
