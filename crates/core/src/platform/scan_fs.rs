//! The scanner's file-descriptor primitives: list a dir through its fd, `lstat` an entry relative
//! to its dir's fd, open a subdir relative to its parent's fd without following a symlink. No
//! path is built per entry. Linux: `getdents64` into a reused buffer and `statx`
//! (`scan_fs_linux.rs`); macOS: `fdopendir`/`readdir` and `fstatat` (`scan_fs_macos.rs`).

use std::ffi::CStr;
use std::fs::Metadata;
use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::SystemTime;

#[cfg(not(target_os = "macos"))]
use super::scan_fs_linux as imp;
#[cfg(target_os = "macos")]
use super::scan_fs_macos as imp;

/// The kind of an entry, as `lstat` sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScanKind {
    /// A directory.
    Dir,
    /// A symbolic link (never followed).
    Symlink,
    /// A regular file.
    File,
    /// A socket, fifo or device.
    Other,
}

/// What the scanner needs of one entry's `lstat`: the fields of [`Metadata`] it reads, in the same
/// encodings (`dev` as `MetadataExt::dev`, times as `modified()` and `created()`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ScanStat {
    /// Device id (`st_dev`).
    pub(crate) dev: u64,
    /// Inode number.
    pub(crate) ino: u64,
    /// Number of hard links.
    pub(crate) nlink: u64,
    /// 512-byte blocks allocated (`st_blocks`).
    pub(crate) blocks: u64,
    /// Apparent size (`st_size`).
    pub(crate) size: u64,
    /// Dir, symlink, regular file or other.
    pub(crate) kind: ScanKind,
    /// Last modification.
    pub(crate) mtime: Option<SystemTime>,
    /// Birth time (`statx` `btime`, `st_birthtime`), when the filesystem records one.
    pub(crate) born: Option<SystemTime>,
    /// Bytes of a regular file no clone shares, when the listing returned them with the rest
    /// (macOS `getattrlistbulk`, `ATTR_CMNEXT_PRIVATESIZE`): what deleting it frees, known
    /// without asking per file. `None` when not listed with them (then asked for by path).
    pub(crate) private_bytes: Option<u64>,
}

impl ScanStat {
    /// The same fields from `std`'s metadata (of the root, or of an item re-measured by path).
    pub(crate) fn of(md: &Metadata) -> ScanStat {
        let ft = md.file_type();
        let kind = if ft.is_dir() {
            ScanKind::Dir
        } else if ft.is_symlink() {
            ScanKind::Symlink
        } else if ft.is_file() {
            ScanKind::File
        } else {
            ScanKind::Other
        };
        ScanStat {
            dev: md.dev(),
            ino: md.ino(),
            nlink: md.nlink(),
            blocks: md.blocks(),
            size: md.size(),
            kind,
            mtime: md.modified().ok(),
            born: md.created().ok(),
            private_bytes: None,
        }
    }

    /// True for a directory.
    pub(crate) fn is_dir(&self) -> bool {
        self.kind == ScanKind::Dir
    }
}

/// `lstat` of the entry `name` (one component) in the dir `dir`: `statx` on Linux (`fstatat`
/// where the kernel has no `statx`), `fstatat` on macOS; symlinks never followed.
///
/// # Errors
/// The OS error (`NotFound` when the entry is gone).
pub(crate) fn scan_stat_at(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<ScanStat> {
    imp::stat_at(dir, name)
}

/// The `lstat` of the entry `name` of `dir` that the listing handed over with it, when the
/// listing's own call returned one (macOS `getattrlistbulk`, asked inside the listing's callback
/// only); `None` elsewhere (Linux `getdents64` gives no sizes): then [`scan_stat_at`] asks.
pub(crate) fn listed_stat(dir: BorrowedFd<'_>, name: &CStr) -> Option<ScanStat> {
    imp::listed_stat(dir, name)
}

/// Opens the dir `name` (one component) of the dir `dir` for listing: `openat(O_RDONLY |
/// O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)`, so an entry replaced by a symlink since it was
/// `lstat`ed is not followed (`ELOOP` or `ENOTDIR`, see [`is_replaced`]).
///
/// # Errors
/// The OS error.
pub(crate) fn open_dir_at(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<OwnedFd> {
    rustix::fs::openat(dir, name, DIR_FLAGS, rustix::fs::Mode::empty()).map_err(Into::into)
}

/// Opens the dir at `path` for listing, with the flags of [`open_dir_at`] (`O_NOFOLLOW` applies
/// to the last component only).
///
/// # Errors
/// The OS error.
pub(crate) fn open_dir_path(path: &Path) -> io::Result<OwnedFd> {
    rustix::fs::open(path, DIR_FLAGS, rustix::fs::Mode::empty()).map_err(Into::into)
}

/// True when opening a dir failed because the entry is no longer a dir (a symlink or a file took
/// its place: `ELOOP`, `ENOTDIR`).
pub(crate) fn is_replaced(e: &io::Error) -> bool {
    matches!(
        rustix::io::Errno::from_io_error(e),
        Some(rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR)
    )
}

const DIR_FLAGS: rustix::fs::OFlags = rustix::fs::OFlags::RDONLY
    .union(rustix::fs::OFlags::DIRECTORY)
    .union(rustix::fs::OFlags::NOFOLLOW)
    .union(rustix::fs::OFlags::CLOEXEC);

/// A dir being listed through its fd, which stays open (for [`scan_stat_at`] and [`open_dir_at`]
/// of its entries) until the listing is dropped.
pub(crate) struct Listing(imp::Listing);

impl Listing {
    /// Lists the open dir `fd`.
    ///
    /// # Errors
    /// The OS error (macOS `fdopendir`).
    pub(crate) fn new(fd: OwnedFd) -> io::Result<Listing> {
        imp::Listing::new(fd).map(Listing)
    }

    /// The dir's fd.
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.0.fd()
    }

    /// Reads the next run of entries (one `getdents64` on Linux, up to 128 `readdir` on macOS),
    /// calling `f` with the dir's fd and each name (`.` and `..` left out). `Ok(false)` once the
    /// listing has ended (no more entries will come); an error also ends it.
    ///
    /// # Errors
    /// The OS error of the read.
    pub(crate) fn read_some(&mut self, f: impl FnMut(BorrowedFd<'_>, &CStr)) -> io::Result<bool> {
        self.0.read_some(f)
    }
}

/// The soft limit on open files (`RLIMIT_NOFILE`); `None` when it cannot be read.
pub(crate) fn open_files_limit() -> Option<u64> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `getrlimit` only writes the struct it is given.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } == 0;
    #[allow(clippy::unnecessary_cast)]
    ok.then_some(r.rlim_cur as u64)
}

/// `.` or `..`.
pub(super) fn is_dot(name: &CStr) -> bool {
    matches!(name.to_bytes(), b"." | b"..")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;
    use std::ffi::CString;
    use std::os::fd::AsFd;
    use std::os::unix::ffi::OsStrExt;

    fn names(l: &mut Listing) -> BTreeSet<Vec<u8>> {
        let mut out = BTreeSet::new();
        while l
            .read_some(|_, n| {
                out.insert(n.to_bytes().to_vec());
            })
            .unwrap()
        {}
        out
    }

    #[test]
    fn lists_every_entry_but_dots_of_a_big_dir() {
        let d = tempfile::tempdir().unwrap();
        let want: BTreeSet<Vec<u8>> = (0..3000)
            .map(|i| format!("entry-with-a-longish-name-{i}").into_bytes())
            .collect();
        for n in &want {
            std::fs::write(d.path().join(std::ffi::OsStr::from_bytes(n)), b"").unwrap();
        }
        let mut l = Listing::new(open_dir_path(d.path()).unwrap()).unwrap();
        assert_eq!(names(&mut l), want);
        // Ended: stays ended.
        assert!(!l.read_some(|_, _| panic!("no more entries")).unwrap());
        std::fs::create_dir(d.path().join("empty")).unwrap();
        let mut empty = Listing::new(open_dir_path(&d.path().join("empty")).unwrap()).unwrap();
        assert!(names(&mut empty).is_empty());
    }

    #[test]
    fn stat_at_equals_std_lstat() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("f"), vec![7u8; 10_000]).unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        std::os::unix::fs::symlink("f", d.path().join("link")).unwrap();
        std::fs::hard_link(d.path().join("f"), d.path().join("f2")).unwrap();
        let fd = open_dir_path(d.path()).unwrap();
        for (name, kind) in [
            ("f", ScanKind::File),
            ("sub", ScanKind::Dir),
            ("link", ScanKind::Symlink),
        ] {
            let got = scan_stat_at(fd.as_fd(), &CString::new(name).unwrap()).unwrap();
            let want = ScanStat::of(&std::fs::symlink_metadata(d.path().join(name)).unwrap());
            assert_eq!(got, want, "{name}");
            assert_eq!(got.kind, kind, "{name}");
        }
        let f = scan_stat_at(fd.as_fd(), c"f").unwrap();
        assert_eq!((f.size, f.nlink), (10_000, 2));
        let gone = scan_stat_at(fd.as_fd(), c"gone").unwrap_err();
        assert_eq!(gone.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn a_symlink_or_file_in_place_of_a_dir_is_not_opened() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("target")).unwrap();
        std::fs::write(d.path().join("target/inside"), b"x").unwrap();
        std::os::unix::fs::symlink("target", d.path().join("was-a-dir")).unwrap();
        std::fs::write(d.path().join("file"), b"x").unwrap();
        let fd = open_dir_path(d.path()).unwrap();
        let e = open_dir_at(fd.as_fd(), c"was-a-dir").unwrap_err();
        assert!(is_replaced(&e), "{e}");
        let e = open_dir_at(fd.as_fd(), c"file").unwrap_err();
        assert!(is_replaced(&e), "{e}");
        let e = open_dir_at(fd.as_fd(), c"gone").unwrap_err();
        assert!(
            !is_replaced(&e) && e.kind() == io::ErrorKind::NotFound,
            "{e}"
        );
        let sub = open_dir_at(fd.as_fd(), c"target").unwrap();
        let mut l = Listing::new(sub).unwrap();
        assert_eq!(names(&mut l), BTreeSet::from([b"inside".to_vec()]));
        let e = open_dir_path(&d.path().join("was-a-dir")).unwrap_err();
        assert!(is_replaced(&e), "{e}");
    }
}
