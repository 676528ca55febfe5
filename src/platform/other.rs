//! Linux and other Unix twins of `macos.rs`.

use std::path::PathBuf;

use crate::roots::RootKind;

pub(super) fn default_root_paths() -> Vec<(RootKind, PathBuf)> {
    let temp = std::env::var_os("TMPDIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    let mut out = vec![(RootKind::Temp, temp)];
    if let Some(dirs) = directories::BaseDirs::new() {
        // `cache_dir()` is `$XDG_CACHE_HOME` or `~/.cache`.
        out.push((RootKind::Cache, dirs.cache_dir().to_path_buf()));
    }
    out
}
