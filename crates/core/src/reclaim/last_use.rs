//! A cache's last use: the newest access time of a file inside an item, read by a walk that never
//! follows a symlink and never leaves the item's device.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The newest access time (`st_atime`, as the volume records it) of a regular file at or under
/// `path`. Directories do not count: listing one, as every scan and `du` does, marks it read.
/// Symlinks are not followed, and nothing on another device is read. `None` when no file could
/// be stat'ed (an empty dir, or an item that is gone).
pub fn newest_access(path: &Path) -> Option<SystemTime> {
    let top = std::fs::symlink_metadata(path).ok()?;
    let dev = top.dev();
    let mut newest = None;
    let mut note = |md: &std::fs::Metadata| {
        if md.file_type().is_file() {
            let t = atime_of(md);
            newest = Some(newest.map_or(t, |n: SystemTime| n.max(t)));
        }
    };
    note(&top);
    if !top.file_type().is_dir() {
        return newest;
    }
    let mut dirs = vec![path.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let child = e.path();
            let Ok(md) = std::fs::symlink_metadata(&child) else {
                continue;
            };
            if md.dev() != dev {
                continue;
            }
            if md.file_type().is_dir() {
                dirs.push(child);
            } else {
                note(&md);
            }
        }
    }
    newest
}

fn atime_of(md: &std::fs::Metadata) -> SystemTime {
    let secs = md.atime();
    let nanos = u32::try_from(md.atime_nsec()).unwrap_or(0);
    match u64::try_from(secs) {
        Ok(s) => UNIX_EPOCH + Duration::new(s, nanos),
        Err(_) => UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs()),
    }
}
