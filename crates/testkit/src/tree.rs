//! Building real trees in temp dirs: files of a given length, mtimes, Metal archive dirs.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Writes a file of `len` bytes, creating its parent dirs. The content is a pattern that does not
/// compress or dedupe to nothing, so allocated bytes are real on any file system.
///
/// # Panics
/// The file cannot be written.
pub fn write_file(path: &Path, len: usize) {
    if let Some(p) = path.parent() {
        fs::create_dir_all(p).expect("create parent dirs");
    }
    let content: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
    fs::write(path, content).expect("write file");
}

/// Sets the mtime of `path` (not following a symlink's target), and its access time to the same
/// moment: a tree backdated this way was made then and not read since (caches age by last use).
///
/// # Panics
/// The file cannot be opened or its time set.
pub fn set_mtime(path: &Path, t: SystemTime) {
    let times = std::fs::FileTimes::new().set_modified(t).set_accessed(t);
    File::open(path)
        .expect("open")
        .set_times(times)
        .expect("set mtime");
}

/// Sets the mtime of `path` and of everything under it (symlinks left alone).
///
/// # Panics
/// A dir cannot be read or a time set.
pub fn set_tree_mtime(path: &Path, t: SystemTime) {
    let meta = fs::symlink_metadata(path).expect("stat");
    if meta.is_dir() {
        for e in fs::read_dir(path).expect("read dir") {
            set_tree_mtime(&e.expect("dir entry").path(), t);
        }
    }
    if !meta.file_type().is_symlink() {
        set_mtime(path, t);
    }
}

/// `now - days`.
pub fn days_ago(days: u64) -> SystemTime {
    SystemTime::now() - Duration::from_secs(days * 24 * 3600)
}

/// Creates `n` Metal archive dirs `<cache>/com.apple.gpuarchiver/gpuarchiver-<tag><i>`, each
/// holding `files` files of 1000 bytes; returns them in order.
///
/// # Panics
/// A dir or file cannot be created.
pub fn make_archives(cache_root: &Path, tag: &str, n: usize, files: usize) -> Vec<PathBuf> {
    let parent = cache_root.join("com.apple.gpuarchiver");
    (0..n)
        .map(|i| {
            let d = parent.join(format!("gpuarchiver-{tag}{i:06}"));
            fs::create_dir_all(&d).expect("create archive dir");
            for f in 0..files {
                fs::write(d.join(format!("f{f}")), [b'x'; 1000]).expect("write archive file");
            }
            d
        })
        .collect()
}
