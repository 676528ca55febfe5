//! Linux and other Unix twins of `macos.rs`.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::open_set::Collector;
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

/// `/etc/os-release` (`NAME`, `VERSION_ID`) and `/proc/sys/kernel/osrelease`.
pub(super) fn os_release() -> super::OsRelease {
    let text = std::fs::read_to_string("/etc/os-release")
        .or_else(|_| std::fs::read_to_string("/usr/lib/os-release"))
        .unwrap_or_default();
    let field = |key: &str| {
        text.lines().find_map(|l| {
            let v = l.strip_prefix(key)?.strip_prefix('=')?.trim();
            let v = v
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .unwrap_or(v);
            (!v.is_empty()).then(|| v.to_owned())
        })
    };
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .ok()
        .map(|k| k.trim().to_owned())
        .filter(|k| !k.is_empty());
    super::OsRelease {
        name: field("NAME").unwrap_or_else(|| "Linux".to_owned()),
        version: field("VERSION_ID"),
        kernel,
    }
}

/// No app bundles outside macOS: no version to read.
pub(super) fn app_version_of_exe(_exe: &std::path::Path) -> Option<String> {
    None
}

/// No application dirs outside macOS.
pub(super) fn application_dirs() -> Vec<PathBuf> {
    Vec::new()
}

/// Open and mapped files of every process we may read, from `/proc`: each `/proc/<pid>/fd/*` link
/// but those of directories, the `cwd` link, and the file mappings of `/proc/<pid>/maps`, kept
/// only at or under `scope` (every path when `None`) and within the bounds of [`Collector`].
/// Processes whose entries cannot be read (other users', or gone meanwhile) are skipped and
/// counted.
///
/// A directory held open is being listed (`du`, `find`, an indexer, a watcher adding its watches,
/// another scan), not used: counting it would let any process walking a root keep whatever dir it
/// happened to be in. Whether an fd is a directory, and whether its file was deleted, is asked of
/// the open file itself (`stat` through the `/proc/<pid>/fd/N` link), never of its name; an fd
/// that closed meanwhile is kept, as it was read.
pub(super) fn open_files(scope: Option<&[PathBuf]>) -> super::OpenFiles {
    let mut out = super::OpenFiles::default();
    let mut c = Collector::new(scope);
    let proc_dir = match std::fs::read_dir("/proc") {
        Ok(d) => d,
        // Out of fds, say: any process may hold anything in the scope.
        Err(e) if blinds(&e) => {
            c.begin(0);
            c.add_unknown(None);
            return c.finish();
        }
        Err(_) => return out,
    };
    for entry in proc_dir {
        let entry = match entry {
            Ok(entry) => entry,
            Err(_) => {
                c.begin(0);
                c.add_unknown(None);
                continue;
            }
        };
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        c.begin(pid);
        let base = entry.path();
        let mut readable = false;
        match std::fs::read_dir(base.join("fd")) {
            Ok(fds) => {
                readable = true;
                for fd in fds {
                    match fd {
                        Ok(fd) => add_link(&mut c, &fd.path(), false),
                        Err(_) => c.add_unknown(None),
                    }
                }
            }
            // Not another user's, not gone: the list was there but not read (no fd to spare).
            // What the process holds is unknown, so it may hold anything in the scope.
            Err(e) if blinds(&e) => {
                readable = true;
                c.add_unknown(None);
            }
            Err(_) => {}
        }
        add_link(&mut c, &base.join("cwd"), true);
        match std::fs::File::open(base.join("maps")) {
            Ok(maps) => {
                readable |= add_maps(
                    &mut c,
                    pid,
                    std::io::BufReader::with_capacity(1 << 16, maps),
                );
            }
            Err(e) if blinds(&e) => {
                readable = true;
                c.add_unknown(None);
            }
            Err(_) => {}
        }
        if !readable {
            out.skipped_pids += 1;
        }
    }
    super::OpenFiles {
        skipped_pids: out.skipped_pids,
        ..c.finish()
    }
}

/// What the kernel appends to the name of an unlinked file or dir in `/proc` (fd and cwd links,
/// `maps`).
const DELETED: &[u8] = b" (deleted)";

/// The file an fd (or the `cwd`) link names. Its text is the raw path (no escaping), with
/// [`DELETED`] appended when the file was unlinked; a live file may have a name ending so too,
/// so the suffix is dropped only when the open file itself has no link left (`st_nlink` 0, from a
/// `stat` that follows the link to the open file). A directory counts only as a working dir.
/// True when reading a process's open files failed for a reason that says nothing of them: not
/// another user's process (`EACCES`, `EPERM`), not one that exited (`ENOENT`, `ESRCH`), but this
/// process out of fds or memory, say. The guard then takes the process to hold anything.
fn blinds(e: &std::io::Error) -> bool {
    !matches!(
        e.raw_os_error(),
        Some(libc::EACCES | libc::EPERM | libc::ENOENT | libc::ESRCH)
    )
}

fn add_link(c: &mut Collector, link: &Path, dir_ok: bool) {
    let target = match std::fs::read_link(link) {
        Ok(t) => t,
        // The kernel names no path longer than a page: the file may lie anywhere on its device.
        Err(e) if e.raw_os_error() == Some(libc::ENAMETOOLONG) => {
            match std::fs::metadata(link) {
                Ok(m) if m.is_dir() && !dir_ok => {}
                Ok(m) => c.add_unknown(Some(m.dev())),
                Err(_) => c.add_unknown(None),
            }
            return;
        }
        Err(_) => return,
    };
    let text = target.as_os_str().as_bytes();
    let stem = text.strip_suffix(DELETED);
    if !c.wants(text) && !stem.is_some_and(|s| c.wants(s)) {
        return;
    }
    let deleted = match std::fs::metadata(link) {
        Ok(m) if m.is_dir() && !dir_ok => return,
        Ok(m) => Some(m.nlink() == 0),
        Err(_) => None,
    };
    add_named(c, text, deleted);
}

/// Adds a path the kernel wrote with [`DELETED`] perhaps appended: `deleted` says whether the
/// file is unlinked (`None`: unknown, both readings kept).
fn add_named(c: &mut Collector, text: &[u8], deleted: Option<bool>) {
    match (text.strip_suffix(DELETED), deleted) {
        (Some(stem), Some(true)) => c.add(stem),
        (Some(stem), None) => {
            c.add(text);
            c.add(stem);
        }
        _ => c.add(text),
    }
}

/// The longest `maps` line read whole; a longer one (a path of more than 256 KiB) is kept as the
/// deepest dir its first bytes name.
const MAPS_LINE_MAX: usize = 256 << 10;

/// Readings of one escaped path kept exactly; a path with more ambiguous escapes is kept as the
/// dir above the first.
const MAPS_READINGS_MAX: usize = 8;

/// The file mappings of one process's `maps`, read line by line (a run of lines naming the same
/// file is read once). False when nothing could be read (the process is not ours, or gone).
fn add_maps(c: &mut Collector, pid: u32, maps: impl std::io::BufRead) -> bool {
    let mut last: Vec<u8> = Vec::new();
    let mut any = false;
    let done = for_each_line(maps, MAPS_LINE_MAX, |line, whole| {
        any = true;
        let Some((range, name)) = maps_fields(line) else {
            return;
        };
        if name.first() != Some(&b'/') || (whole && name == last.as_slice()) {
            return;
        }
        if !whole {
            // Cut: keep the deepest dir named whole (a `/` is never escaped).
            if let Some(i) = name.iter().rposition(|b| *b == b'/') {
                c.add_dir(if i == 0 { b"/" } else { &name[..i] });
            }
            last.clear();
            return;
        }
        last.clear();
        last.extend_from_slice(name);
        add_mapped(c, pid, range, name);
    });
    done.is_ok() && any
}

/// The address range and the name of a `maps` line: `start-end perms offset dev inode`, spaces,
/// then the name (a path, `[heap]`, `[anon:…]`, or nothing).
fn maps_fields(line: &[u8]) -> Option<(&[u8], &[u8])> {
    let mut rest = line;
    let mut range: &[u8] = &[];
    for field in 0..5 {
        let end = rest.iter().position(|b| *b == b' ')?;
        if field == 0 {
            range = &rest[..end];
        }
        rest = &rest[end + 1..];
    }
    let start = rest.iter().position(|b| *b != b' ')?;
    Some((range, &rest[start..]))
}

/// One mapped path as `maps` writes it: the kernel escapes a newline as `\012` and nothing else
/// (not even a backslash), so each `\012` is a newline or those four bytes. Up to
/// [`MAPS_READINGS_MAX`] readings are kept exactly; past that, the dir above the first `\012`
/// coarsely. A trailing [`DELETED`] is dropped when the mapped file has no link left, as the
/// `/proc/<pid>/map_files` entry of the range tells (only root may ask: otherwise both readings).
fn add_mapped(c: &mut Collector, pid: u32, range: &[u8], name: &[u8]) {
    let Some(first) = find(name, NEWLINE_ESCAPE) else {
        if c.wants(name) || name.strip_suffix(DELETED).is_some_and(|s| c.wants(s)) {
            let deleted = name
                .ends_with(DELETED)
                .then(|| mapped_nlink(pid, range).map(|n| n == 0))
                .flatten();
            add_named(c, name, deleted);
        }
        return;
    };
    let readings = maps_readings(name);
    if readings.len() > MAPS_READINGS_MAX {
        let dir = parent_of(&name[..first]);
        c.add_dir(dir);
        return;
    }
    let deleted = name
        .ends_with(DELETED)
        .then(|| mapped_nlink(pid, range).map(|n| n == 0))
        .flatten();
    for r in readings {
        add_named(c, &r, deleted);
    }
}

const NEWLINE_ESCAPE: &[u8] = b"\\012";

/// Where `needle` (starting with a backslash) first occurs in `hay`: a scan for backslashes, so a
/// path without one costs one pass.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = hay[from..].iter().position(|b| *b == b'\\') {
        let at = from + i;
        if hay[at..].starts_with(needle) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// The dir a path prefix ends in: up to its last `/` (`/` itself for the first).
fn parent_of(prefix: &[u8]) -> &[u8] {
    match prefix.iter().rposition(|b| *b == b'/') {
        Some(0) | None => b"/",
        Some(i) => &prefix[..i],
    }
}

/// Every reading of a `maps` path, each `\012` a newline or kept as written; more than
/// [`MAPS_READINGS_MAX`] means too many to list (then the list stops there).
fn maps_readings(name: &[u8]) -> Vec<Vec<u8>> {
    let mut readings: Vec<Vec<u8>> = vec![Vec::new()];
    let mut i = 0;
    while i < name.len() {
        if name[i..].starts_with(NEWLINE_ESCAPE) {
            if readings.len() * 2 > MAPS_READINGS_MAX {
                readings.push(Vec::new());
                readings.truncate(MAPS_READINGS_MAX + 1);
                return readings;
            }
            let mut literal = readings.clone();
            for r in &mut readings {
                r.push(b'\n');
            }
            for r in &mut literal {
                r.extend_from_slice(NEWLINE_ESCAPE);
            }
            readings.extend(literal);
            i += NEWLINE_ESCAPE.len();
        } else {
            for r in &mut readings {
                r.push(name[i]);
            }
            i += 1;
        }
    }
    readings
}

/// Reads `reader` line by line (`\n`-terminated, the last line possibly not), handing each to
/// `f` with `true` when whole; a line longer than `max` is handed once, cut to its first `max`
/// bytes, with `false`, and the rest of it skipped. One buffer of at most `max` bytes is held.
fn for_each_line(
    mut reader: impl std::io::BufRead,
    max: usize,
    mut f: impl FnMut(&[u8], bool),
) -> std::io::Result<()> {
    let mut line: Vec<u8> = Vec::new();
    let mut skipping = false;
    loop {
        let buf = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            if !line.is_empty() && !skipping {
                f(&line, true);
            }
            return Ok(());
        }
        let (chunk, ended) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        if let (Some(used), true, false) = (ended, line.is_empty(), skipping) {
            // A whole line in the buffer: handed from there, not copied.
            if chunk.len() <= max {
                f(chunk, true);
                reader.consume(used);
                continue;
            }
        }
        if !skipping {
            let room = max - line.len();
            if chunk.len() > room {
                line.extend_from_slice(&chunk[..room]);
                f(&line, false);
                line.clear();
                skipping = true;
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let used = ended.unwrap_or(buf.len());
        reader.consume(used);
        if ended.is_some() {
            if !skipping {
                f(&line, true);
            }
            line.clear();
            skipping = false;
        }
    }
}

/// `st_nlink` of the file mapped at `range` (`start-end` as `maps` writes it) in process `pid`,
/// through `/proc/<pid>/map_files/<start>-<end>` (named without leading zeros).
fn mapped_nlink(pid: u32, range: &[u8]) -> Option<u64> {
    let (start, end) = std::str::from_utf8(range).ok()?.split_once('-')?;
    let (start, end) = (
        u64::from_str_radix(start, 16).ok()?,
        u64::from_str_radix(end, 16).ok()?,
    );
    let m = std::fs::metadata(format!("/proc/{pid}/map_files/{start:x}-{end:x}")).ok()?;
    Some(m.nlink())
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
        .map(|field| {
            PathBuf::from(std::ffi::OsStr::from_bytes(&unescape_octal(
                field,
                MOUNTINFO_ESCAPED,
            )))
        })
        .collect()
}

/// What `/proc/<pid>/mountinfo` escapes in a mount point (`seq_path_root(…, " \t\n\\")`):
/// each as `\ooo`, so the text is never ambiguous.
const MOUNTINFO_ESCAPED: &[u8] = b" \t\n\\";

/// Undoes the kernel's `\ooo` escapes of the bytes in `escaped` (its `mangle_path` writes each
/// byte of that set as a backslash and three octal digits, and every other byte as it is); a
/// `\ooo` of a byte outside the set was written literally and is kept.
fn unescape_octal(field: &[u8], escaped: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        let digits = field.get(i + 1..i + 4);
        let octal = digits
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)))
            .map(|d| {
                u32::from(d[0] - b'0') * 64 + u32::from(d[1] - b'0') * 8 + u32::from(d[2] - b'0')
            })
            .and_then(|v| u8::try_from(v).ok())
            .filter(|v| escaped.contains(v));
        match (field[i], octal) {
            (b'\\', Some(v)) => {
                out.push(v);
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

#[cfg(test)]
mod tests;
