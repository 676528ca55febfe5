//! Linux and other Unix twins of `macos.rs`.

use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use super::DefaultDirs;

pub(super) fn default_dirs() -> DefaultDirs {
    let temp = std::env::var_os("TMPDIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    DefaultDirs {
        temp,
        // `cache_dir()` is `$XDG_CACHE_HOME` or `~/.cache`.
        cache: directories::BaseDirs::new().map(|dirs| dirs.cache_dir().to_path_buf()),
        ..DefaultDirs::default()
    }
}

/// The bundle identifier of the app whose executable is `exe`: none outside macOS (the Linux twin
/// of an app owner is its executable's name).
pub(super) fn bundle_id_of_exe(_exe: &std::path::Path) -> Option<String> {
    None
}

/// Open and mapped files of every process we may read, from `/proc`: each `/proc/<pid>/fd/*` link
/// but those of directories, the `cwd` link, and the file mappings of `/proc/<pid>/maps`. Processes
/// whose entries cannot be read (other users', or gone meanwhile) are skipped and counted.
///
/// A directory held open is being listed (`du`, `find`, an indexer, a watcher adding its watches,
/// another scan), not used: counting it would let any process walking a root keep whatever dir it
/// happened to be in. Whether an fd is a directory is asked of the open file itself (`stat` through
/// the `/proc/<pid>/fd/N` link); an fd that closed meanwhile is kept, as it was read.
pub(super) fn open_files() -> super::OpenFiles {
    let mut out = super::OpenFiles::default();
    let Ok(proc_dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in proc_dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let base = entry.path();
        let mut readable = false;
        if let Ok(fds) = std::fs::read_dir(base.join("fd")) {
            readable = true;
            for fd in fds.flatten() {
                let link = fd.path();
                let Ok(target) = std::fs::read_link(&link) else {
                    continue;
                };
                if target.is_absolute() && std::fs::metadata(&link).is_ok_and(|m| m.is_dir()) {
                    continue;
                }
                push_path(&mut out.files, pid, target);
            }
        }
        if let Ok(cwd) = std::fs::read_link(base.join("cwd")) {
            push_path(&mut out.files, pid, cwd);
        }
        if let Ok(maps) = std::fs::read(base.join("maps")) {
            readable = true;
            let mut seen: Option<Vec<u8>> = None;
            for line in maps.split(|b| *b == b'\n') {
                // address perms offset dev inode pathname; the path starts at the first '/'
                // after the five fixed fields (paths may contain spaces).
                let Some(slash) = line.iter().position(|b| *b == b'/') else {
                    continue;
                };
                let path = &line[slash..];
                if seen.as_deref() == Some(path) {
                    continue;
                }
                seen = Some(path.to_vec());
                push_path(
                    &mut out.files,
                    pid,
                    PathBuf::from(std::ffi::OsStr::from_bytes(path)),
                );
            }
        }
        if !readable {
            out.skipped_pids += 1;
        }
    }
    out
}

/// Keeps absolute paths only (not `socket:[…]`, `pipe:[…]`, `anon_inode:…`), without the kernel's
/// ` (deleted)` suffix.
fn push_path(files: &mut Vec<(u32, PathBuf)>, pid: u32, path: PathBuf) {
    if !path.is_absolute() {
        return;
    }
    let bytes = path.as_os_str().as_bytes();
    let path = match bytes.strip_suffix(b" (deleted)") {
        Some(stem) => PathBuf::from(std::ffi::OsStr::from_bytes(stem)),
        None => path,
    };
    files.push((pid, path));
}

/// The `Threads:` line of `/proc/<pid>/status`.
pub(super) fn thread_count(pid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|v| v.trim().parse().ok())
}

/// glibc: `malloc_trim(0)` hands the free heap pages of every arena back to the OS. Elsewhere
/// (musl, the BSDs) there is no such call and the allocator keeps what it keeps.
pub(super) fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free pages to the OS; it touches no live allocation.
    unsafe {
        libc::malloc_trim(0);
    }
}

pub(super) fn mount_points() -> Vec<PathBuf> {
    let Ok(text) = std::fs::read("/proc/self/mountinfo") else {
        return Vec::new();
    };
    text.split(|b| *b == b'\n')
        .filter_map(|line| line.split(|b| *b == b' ').nth(4))
        .map(|field| PathBuf::from(std::ffi::OsStr::from_bytes(&unescape_octal(field))))
        .collect()
}

/// `/proc` writes a space, tab, newline and backslash in a path as `\040`, `\011`, `\012`, `\134`.
fn unescape_octal(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        let digits = field.get(i + 1..i + 4);
        let octal = digits.filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (field[i], octal) {
            (b'\\', Some(d)) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// `statvfs(path)`: (size of the volume, bytes available to this user now).
#[allow(clippy::unnecessary_cast)] // the field types differ between Unix systems
pub(super) fn statfs_space(path: &std::path::Path) -> std::io::Result<(u64, u64)> {
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `c` is a NUL-terminated path; `st` is writable for one `statvfs`.
    if unsafe { libc::statvfs(c.as_ptr(), st.as_mut_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: statvfs returned 0, so it filled `st`.
    let st = unsafe { st.assume_init() };
    let frsize = st.f_frsize as u64;
    Ok((
        (st.f_blocks as u64).saturating_mul(frsize),
        (st.f_bavail as u64).saturating_mul(frsize),
    ))
}

/// The important-usage capacity is a macOS notion (purgeable space): none here.
pub(super) fn important_usage_capacity(_path: &std::path::Path) -> Option<u64> {
    None
}
