//! Writing a file the way a careful daemon does, so that no link or special file another user
//! planted can redirect the write: the metrics textfile (`scan --openmetrics --output`), the
//! config file (the app's settings, `launchd-plist --auto-reclaim`), and the check the history
//! database gets before SQLite opens it.
//!
//! The rules, each with its own [`WriteError`] variant:
//! - The path is resolved one component at a time from a directory fd (`openat` with
//!   `O_DIRECTORY | O_NOFOLLOW`), never with `canonicalize`. A symlink on the way (a directory or the
//!   file itself) is followed only when it is *trusted*: owned by this process's user or by root,
//!   in a directory owned by this process's user or by root that neither its group nor others can
//!   write. Nobody else could have planted or swapped such a link, so following it cannot be
//!   raced. A link owned by anyone else ([`WriteError::ForeignSymlink`]) or sitting in a directory
//!   others can write ([`WriteError::SymlinkInSharedDir`]), such as a sticky `/tmp` or a shared
//!   textfile-collector dir, is refused: write to its target directly. macOS's own `/tmp`,
//!   `/var` and `/etc` links (root's, in `/`) are trusted.
//! - A trusted link to a file that does not exist is refused ([`WriteError::DanglingSymlink`]):
//!   the link is left, nothing is created at its target.
//! - The file must be a regular file, or not exist ([`WriteError::NotRegular`]): a device, FIFO,
//!   socket or directory is never replaced. Standard output is not a path here: the CLI writes `-`
//!   to fd 1 itself.
//! - An existing file keeps its owner, group and permission bits (setuid, setgid and sticky bits
//!   dropped): the new file is `fchown`ed and `fchmod`ed before it is renamed into place. Root
//!   rewriting another user's file gives it back to that user (chosen over refusing: a textfile
//!   collector dir's files stay its owner's); any other user cannot keep another user's ownership
//!   and is refused ([`WriteError::ForeignFile`]) rather than taking the file over. A group that
//!   cannot be kept (a file of ours whose group we left) is logged, not fatal.
//! - The new text goes into a temporary created with `O_CREAT | O_EXCL | O_NOFOLLOW` in the
//!   directory fd (a fresh name when one is taken; a file planted at a temporary's name is never
//!   opened nor removed), is synced, renamed over the file with `renameat` in that directory, and
//!   the directory is synced. A reader sees the old file or the new one, never a mix; a rename
//!   replaces a directory entry and never writes through whatever the entry is.
//!
//! Known limits: ACLs are not read, so a directory another user can write only through an ACL
//! counts as private; a directory on the way that is not a symlink is used as it is, whoever owns
//! it (the path given is the caller's choice).

use std::ffi::{OsStr, OsString};
use std::io::Write as _;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat, CWD};
use rustix::io::Errno;

/// How many symlinks one path may go through (Linux's own limit).
pub const MAX_SYMLINKS: usize = 40;

/// Why a file was not written (or, for the history database, not opened); each refusal names the
/// rule that refused and what to do.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The path names no file (empty, `/`, or ending in `..`).
    #[error("cannot write {path:?}: the path names no file; give a file name")]
    NoFileName {
        /// The path as given.
        path: PathBuf,
    },
    /// A symlink on the path is owned by another user, who could point it anywhere.
    #[error(
        "refusing to write {path:?}: {} a symlink owned by uid {owner}, neither this user (uid \
         {us}) nor root, so another user could point it at any file; remove the link or write to \
         its target directly",
        which(.path, .link, "on its way")
    )]
    ForeignSymlink {
        /// The path as given.
        path: PathBuf,
        /// The link.
        link: PathBuf,
        /// The link's owner.
        owner: u32,
        /// This process's effective uid.
        us: u32,
    },
    /// A symlink on the path sits in a directory others can write, where it could be swapped.
    #[error(
        "refusing to write {path:?}: {} a symlink in a directory others can write (owner uid \
         {dir_owner}, mode {dir_mode:o}), where another user could swap it; write to its target \
         directly",
        which(.path, .link, "on its way")
    )]
    SymlinkInSharedDir {
        /// The path as given.
        path: PathBuf,
        /// The link.
        link: PathBuf,
        /// Owner of the directory holding the link.
        dir_owner: u32,
        /// Permission bits of that directory.
        dir_mode: u32,
    },
    /// The file is a (trusted) symlink to a file that does not exist.
    #[error(
        "refusing to write {path:?}: it is a symlink to {target:?}, which does not exist; create \
         the target or replace the link with a file"
    )]
    DanglingSymlink {
        /// The path as given.
        path: PathBuf,
        /// Where the link points (as written in the link).
        target: PathBuf,
    },
    /// The file is a symlink where none is followed (the history database).
    #[error(
        "refusing to open {path:?}: it is a symlink, and cachewatch opens this file only as \
         itself, never through a link another user could point anywhere; replace the link with \
         the file it points to"
    )]
    Symlink {
        /// The path as given.
        path: PathBuf,
    },
    /// More than [`MAX_SYMLINKS`] symlinks on the way.
    #[error(
        "refusing to write {path:?}: more than {MAX_SYMLINKS} symlinks to follow (a loop?); \
         give the file's real path"
    )]
    SymlinkLoop {
        /// The path as given.
        path: PathBuf,
    },
    /// The file is not a regular file.
    #[error(
        "refusing to write {path:?}: {} a {kind}, not a regular file, and only a regular file is \
         replaced; give the path of a regular file (for standard output, `-`)",
        which(.path, .file, "where it leads")
    )]
    NotRegular {
        /// The path as given.
        path: PathBuf,
        /// The file found (the path's target when it went through a link).
        file: PathBuf,
        /// `directory`, `character device`, `block device`, `FIFO`, `socket` or `symlink`.
        kind: &'static str,
    },
    /// The file is owned by another user and this process is not root, so it cannot keep its
    /// owner.
    #[error(
        "refusing to write {path:?}: {} owned by uid {owner}, and this user (uid {us}) cannot \
         give the new file that owner; remove the file, or run as its owner",
        which(.path, .file, "where it leads")
    )]
    ForeignFile {
        /// The path as given.
        path: PathBuf,
        /// The file found.
        file: PathBuf,
        /// Its owner.
        owner: u32,
        /// This process's effective uid.
        us: u32,
    },
    /// A system call failed (missing directory, no permission, disk full...).
    #[error("cannot write {path:?}: cannot {op}: {source}; check that its directory exists and is writable")]
    Io {
        /// The path as given.
        path: PathBuf,
        /// What was being done: `open the directory`, `create a temporary file`, ...
        op: &'static str,
        /// The error.
        source: std::io::Error,
    },
}

/// "it is" when `found` is the path given, else "`found` (`role`) is".
fn which(path: &Path, found: &Path, role: &str) -> String {
    if path == found {
        "it is".to_owned()
    } else {
        format!("{found:?} ({role}) is")
    }
}

/// A directory opened without going through an untrusted link, with the name of the file in it.
pub(crate) struct Located {
    /// The directory.
    pub dir: OwnedFd,
    /// The directory's path with every symlink resolved (for SQLite, which wants a path).
    pub dir_path: PathBuf,
    /// The file's name in `dir`.
    pub name: OsString,
    /// What is at `name` now (`None`: nothing).
    pub existing: Option<Stat>,
}

/// Writes `text` to `path` atomically, under the rules of this module.
///
/// # Errors
/// The refusals of [`WriteError`] (the file is left as it was), and [`WriteError::Io`] when the
/// directory is missing or not writable or the disk is full (the temporary is removed).
pub fn write_atomically(path: &Path, text: &str) -> Result<(), WriteError> {
    let at = locate(path, true)?;
    write_located(path, &at, at.existing.as_ref(), text, || Ok(true)).map(|_| ())
}

/// Writes `text` as the file `at.name` in `at.dir` (`path` as given, for errors; `existing`: what
/// is there now, whose owner and mode the new file keeps). Right before the rename, `unchanged`
/// is asked whether the file is still the one the text was made from: `false` removes the
/// temporary and returns `Ok(false)`, the file left as it is.
///
/// # Errors
/// As [`write_atomically`], and whatever `unchanged` returns.
pub(crate) fn write_located(
    path: &Path,
    at: &Located,
    existing: Option<&Stat>,
    text: &str,
    unchanged: impl FnOnce() -> Result<bool, WriteError>,
) -> Result<bool, WriteError> {
    let io = |op: &'static str| {
        move |e: Errno| WriteError::Io {
            path: path.to_path_buf(),
            op,
            source: e.into(),
        }
    };
    let us = rustix::process::geteuid().as_raw();
    // Keep an existing file's owner (only root can give a file away) and mode.
    let keep = match existing {
        Some(st) if st.st_uid != us && us != 0 => {
            return Err(WriteError::ForeignFile {
                path: path.to_path_buf(),
                file: at.dir_path.join(&at.name),
                owner: st.st_uid,
                us,
            })
        }
        Some(st) => Some((st.st_uid, st.st_gid, mode_bits(st) & 0o777)),
        None => None,
    };
    let (tmp_name, tmp) =
        create_temporary(at, keep.is_some()).map_err(io("create a temporary file"))?;
    let written = (|| -> Result<bool, WriteError> {
        if let Some((uid, gid, mode)) = keep {
            let made = rustix::fs::fstat(&tmp).map_err(io("look at the temporary file"))?;
            if (made.st_uid, made.st_gid) != (uid, gid) {
                let given = rustix::fs::fchown(
                    &tmp,
                    Some(rustix::fs::Uid::from_raw(uid)),
                    Some(rustix::fs::Gid::from_raw(gid)),
                );
                match given {
                    Ok(()) => {}
                    // Root giving the file back to its owner must not fail silently.
                    Err(e) if uid != us => {
                        return Err(io("give the new file the old one's owner")(e))
                    }
                    // Our own file whose group we are no longer in: the group cannot be kept.
                    Err(e) => tracing::warn!(
                        path = %path.display(), gid, error = %e,
                        "cannot keep the file's group; it gets this user's group"
                    ),
                }
            }
            rustix::fs::fchmod(&tmp, Mode::from_raw_mode(raw_mode(mode)))
                .map_err(io("give the new file the old one's mode"))?;
        }
        let mut file = std::fs::File::from(tmp);
        file.write_all(text.as_bytes())
            .map_err(|source| WriteError::Io {
                path: path.to_path_buf(),
                op: "write",
                source,
            })?;
        file.sync_all().map_err(|source| WriteError::Io {
            path: path.to_path_buf(),
            op: "sync",
            source,
        })?;
        if !unchanged()? {
            return Ok(false);
        }
        rustix::fs::renameat(&at.dir, &tmp_name, &at.dir, &at.name)
            .map_err(io("rename the temporary over the file"))?;
        Ok(true)
    })();
    if !matches!(written, Ok(true)) {
        if let Err(rm) = rustix::fs::unlinkat(&at.dir, &tmp_name, AtFlags::empty()) {
            tracing::warn!(dir = %at.dir_path.display(), name = ?tmp_name, error = %rm, "cannot remove a temporary file");
        }
        return written;
    }
    // The rename is durable once the directory is synced; a filesystem that cannot sync a
    // directory still has the new file.
    if let Err(e) = rustix::fs::fsync(&at.dir) {
        tracing::debug!(dir = %at.dir_path.display(), error = %e, "cannot sync the directory");
    }
    Ok(true)
}

/// Creates a fresh temporary beside the file: `.NAME.PID.N.tmp` (hidden, and not ending in the
/// file's extension, so a textfile collector never reads it half written), the first `N` free.
fn create_temporary(at: &Located, private: bool) -> Result<(OsString, OwnedFd), Errno> {
    let mode = if private { 0o600 } else { 0o666 };
    let mut last = Errno::EXIST;
    for n in 0..100 {
        let mut name = OsString::from(".");
        name.push(&at.name);
        name.push(format!(".{}.{n}.tmp", std::process::id()));
        match rustix::fs::openat(
            &at.dir,
            &name,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode),
        ) {
            Ok(fd) => return Ok((name, fd)),
            Err(e) if e == Errno::EXIST => last = e,
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// Opens the directory of `path` under the rules of this module and looks at the file in it:
/// a trusted symlink as the file is followed when `follow_file` (a refusal otherwise), and what
/// is there must be a regular file or nothing.
///
/// # Errors
/// The refusals of [`WriteError`]; [`WriteError::Io`] when a directory cannot be opened.
pub(crate) fn locate(path: &Path, follow_file: bool) -> Result<Located, WriteError> {
    let us = rustix::process::geteuid().as_raw();
    let mut hops = 0;
    let mut current = path.to_path_buf();
    let mut via_link: Option<PathBuf> = None;
    loop {
        let name = match current.components().next_back() {
            Some(Component::Normal(n)) => n.to_os_string(),
            _ => {
                return Err(WriteError::NoFileName {
                    path: path.to_path_buf(),
                })
            }
        };
        let parent = current.parent().unwrap_or(Path::new(""));
        let (dir, dir_path) = match (open_dir(path, parent, us, &mut hops), via_link) {
            (Err(WriteError::Io { source, .. }), Some(target))
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                return Err(WriteError::DanglingSymlink {
                    path: path.to_path_buf(),
                    target,
                })
            }
            (r, v) => {
                via_link = v;
                r?
            }
        };
        let existing = match rustix::fs::statat(&dir, &name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Some(st),
            Err(e) if e == Errno::NOENT => None,
            Err(e) => {
                return Err(WriteError::Io {
                    path: path.to_path_buf(),
                    op: "look at the file",
                    source: e.into(),
                })
            }
        };
        let file = dir_path.join(&name);
        match existing.as_ref().map(file_type) {
            None => {
                if let Some(target) = via_link {
                    return Err(WriteError::DanglingSymlink {
                        path: path.to_path_buf(),
                        target,
                    });
                }
            }
            Some(FileType::RegularFile) => {}
            Some(FileType::Symlink) if follow_file => {
                let target = follow(path, &dir, &dir_path, &name, us, &mut hops)?;
                current = dir_path.join(&target);
                via_link = Some(target);
                continue;
            }
            Some(FileType::Symlink) => {
                return Err(WriteError::Symlink {
                    path: path.to_path_buf(),
                })
            }
            Some(kind) => {
                return Err(WriteError::NotRegular {
                    path: path.to_path_buf(),
                    file,
                    kind: kind_name(kind),
                })
            }
        }
        return Ok(Located {
            dir,
            dir_path,
            name,
            existing,
        });
    }
}

/// Opens the directory `dir` (of `path`, for errors), one component at a time, following only
/// trusted links. Returns it with its path, every link on the way resolved.
fn open_dir(
    path: &Path,
    dir: &Path,
    us: u32,
    hops: &mut usize,
) -> Result<(OwnedFd, PathBuf), WriteError> {
    let io = |op: &'static str| {
        move |e: Errno| WriteError::Io {
            path: path.to_path_buf(),
            op,
            source: e.into(),
        }
    };
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let open_root = || rustix::fs::open("/", flags, Mode::empty()).map_err(io("open /"));
    let (mut fd, mut at) = if dir.is_absolute() {
        (open_root()?, PathBuf::from("/"))
    } else {
        let cwd = std::env::current_dir().map_err(|source| WriteError::Io {
            path: path.to_path_buf(),
            op: "find the current directory",
            source,
        })?;
        (
            rustix::fs::openat(CWD, ".", flags, Mode::empty())
                .map_err(io("open the current directory"))?,
            cwd,
        )
    };
    // Components still to walk, first at the end.
    let mut todo: Vec<OsString> = components(dir);
    todo.reverse();
    while let Some(c) = todo.pop() {
        if c == "/" {
            fd = open_root()?;
            at = PathBuf::from("/");
            continue;
        }
        if c == "." {
            continue;
        }
        if c == ".." {
            fd = rustix::fs::openat(&fd, "..", flags, Mode::empty())
                .map_err(io("open a parent directory"))?;
            at.pop();
            continue;
        }
        match rustix::fs::openat(&fd, &c, flags | OFlags::NOFOLLOW, Mode::empty()) {
            Ok(next) => {
                fd = next;
                at.push(&c);
            }
            Err(e) => {
                let is_link = rustix::fs::statat(&fd, &c, AtFlags::SYMLINK_NOFOLLOW)
                    .is_ok_and(|st| file_type(&st) == FileType::Symlink);
                if !is_link {
                    return Err(io("open the directory")(e));
                }
                let target = follow(path, &fd, &at, &c, us, hops)?;
                let mut more = components(&target);
                more.reverse();
                todo.extend(more);
            }
        }
    }
    Ok((fd, at))
}

/// The target of the symlink `name` in `dir` (whose path is `dir_path`) when the link is trusted.
fn follow(
    path: &Path,
    dir: &OwnedFd,
    dir_path: &Path,
    name: &OsStr,
    us: u32,
    hops: &mut usize,
) -> Result<PathBuf, WriteError> {
    *hops += 1;
    if *hops > MAX_SYMLINKS {
        return Err(WriteError::SymlinkLoop {
            path: path.to_path_buf(),
        });
    }
    let io = |op: &'static str| {
        move |e: Errno| WriteError::Io {
            path: path.to_path_buf(),
            op,
            source: e.into(),
        }
    };
    let link = dir_path.join(name);
    let st =
        rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).map_err(io("look at a link"))?;
    if st.st_uid != us && st.st_uid != 0 {
        return Err(WriteError::ForeignSymlink {
            path: path.to_path_buf(),
            link,
            owner: st.st_uid,
            us,
        });
    }
    let d = rustix::fs::fstat(dir).map_err(io("look at a directory"))?;
    if (d.st_uid != us && d.st_uid != 0) || mode_bits(&d) & 0o022 != 0 {
        return Err(WriteError::SymlinkInSharedDir {
            path: path.to_path_buf(),
            link,
            dir_owner: d.st_uid,
            dir_mode: mode_bits(&d) & 0o7777,
        });
    }
    let target = rustix::fs::readlinkat(dir, name, Vec::new()).map_err(io("read a link"))?;
    Ok(PathBuf::from(OsStr::from_bytes(target.as_bytes())))
}

/// The components of `p` as names, `/` for the root (so an absolute link target restarts there).
fn components(p: &Path) -> Vec<OsString> {
    p.components()
        .filter_map(|c| match c {
            Component::RootDir => Some(OsString::from("/")),
            Component::CurDir => None,
            Component::ParentDir => Some(OsString::from("..")),
            Component::Normal(n) => Some(n.to_os_string()),
            Component::Prefix(_) => None,
        })
        .collect()
}

/// `bits` (at most 0o7777) as the platform's `mode_t`.
#[allow(clippy::unnecessary_cast, clippy::cast_possible_truncation)]
fn raw_mode(bits: u32) -> rustix::fs::RawMode {
    (bits & 0o7777) as rustix::fs::RawMode
}

/// The permission and type bits of `st` (`mode_t` is 16 bits on macOS, 32 on Linux).
#[allow(clippy::useless_conversion)]
fn mode_bits(st: &Stat) -> u32 {
    u32::from(st.st_mode)
}

pub(crate) fn file_type(st: &Stat) -> FileType {
    FileType::from_raw_mode(st.st_mode)
}

pub(crate) fn kind_name(t: FileType) -> &'static str {
    match t {
        FileType::Directory => "directory",
        FileType::CharacterDevice => "character device",
        FileType::BlockDevice => "block device",
        FileType::Fifo => "FIFO",
        FileType::Socket => "socket",
        FileType::Symlink => "symlink",
        _ => "special file",
    }
}

#[cfg(test)]
mod tests;
