//! Reading and editing the config file: every read of it goes through [`read_text`] (or its
//! descriptor twin inside [`edit_file`]), every write through [`edit_file`].
//!
//! Reading: the file is opened with `O_NONBLOCK` (a FIFO never blocks the open), checked on the
//! opened descriptor (a FIFO, device or socket swapped in is refused, never read), read up to
//! [`MAX_CONFIG_BYTES`], and decoded as UTF-8 (a bad byte is named by its line and column).
//!
//! Editing is a read-modify-write that loses no other writer's change:
//! - Writers take an advisory lock (`flock`) on `<config>.lock` beside the file (beside the
//!   link's target when the config is a trusted symlink, so every path to one file shares the
//!   lock). The lock file is created with `O_NOFOLLOW` in the directory opened by
//!   [`crate::safe_file`]'s rules, is never removed, and anything there but a regular file (a
//!   planted link, a FIFO) is refused. A lock held for longer than [`LOCK_WAIT`] is an error
//!   naming the lock file, never a hang.
//! - Under the lock the file is read, the edit applied to what was read, and the new text written
//!   to a temporary. Right before the rename the file is read again: when it changed meanwhile
//!   (an editor, or a writer that does not take the lock), the temporary is dropped and the edit
//!   is applied again to the new text, up to [`MAX_TRIES`] times.

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::fs::{AtFlags, FileType, FlockOperation, Mode, OFlags, Stat};
use rustix::io::Errno;

use super::{ConfigError, MAX_CONFIG_BYTES};
use crate::capped_read::{read_capped, read_capped_file, CappedReadError};
use crate::safe_file::{self, Located, WriteError};

/// How long a config edit waits for another writer's lock before giving up.
pub const LOCK_WAIT: Duration = Duration::from_secs(10);

/// How many times an edit is applied again when the file keeps changing under it.
pub const MAX_TRIES: usize = 8;

/// The text of the config file `path`; `None` when there is no file. The one way the config is
/// read: see the module's doc.
///
/// # Errors
/// [`ConfigError::Read`] when it cannot be opened or read, [`ConfigError::NotAFile`] when it is
/// not a regular file, [`ConfigError::TooLarge`] past the cap, [`ConfigError::NotUtf8`] naming
/// the line and column of the first byte that is not UTF-8.
pub fn read_text(path: &Path) -> Result<Option<String>, ConfigError> {
    match read_capped(path, MAX_CONFIG_BYTES) {
        Ok((bytes, _)) => decode(path, bytes).map(Some),
        Err(CappedReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(read_error(path, e)),
    }
}

fn read_error(path: &Path, e: CappedReadError) -> ConfigError {
    match e {
        CappedReadError::Io(source) => ConfigError::Read {
            path: path.to_owned(),
            source,
        },
        CappedReadError::NotAFile(file_type) => ConfigError::NotAFile {
            path: path.to_owned(),
            file_type,
        },
        CappedReadError::TooLarge(_) => ConfigError::TooLarge {
            path: path.to_owned(),
            max_bytes: MAX_CONFIG_BYTES,
        },
    }
}

/// `bytes` as text, or [`ConfigError::NotUtf8`] with the 1-based line and column (in characters)
/// of the first byte that is not UTF-8.
fn decode(path: &Path, bytes: Vec<u8>) -> Result<String, ConfigError> {
    String::from_utf8(bytes).map_err(|e| {
        let bytes = e.as_bytes();
        let at = e.utf8_error().valid_up_to();
        let before = String::from_utf8_lossy(&bytes[..at]);
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = before[line_start..].chars().count() + 1;
        ConfigError::NotUtf8 {
            path: path.to_owned(),
            line,
            column,
            byte: bytes.get(at).copied().unwrap_or(0),
        }
    })
}

/// Why [`edit_file`] did not write: the file could not be read or locked ([`ConfigError`]), the
/// new text could not be written ([`WriteError`]), or the edit itself refused (`E`).
#[derive(Debug)]
pub enum EditError<E> {
    /// Reading or locking the config failed.
    Config(ConfigError),
    /// Writing the new text failed or was refused (see [`crate::safe_file`]).
    Write(WriteError),
    /// The edit refused the text it was given.
    Edit(E),
}

impl<E: std::fmt::Display> std::fmt::Display for EditError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EditError::Config(e) => e.fmt(f),
            EditError::Write(e) => write!(f, "cannot save the config file: {e}"),
            EditError::Edit(e) => e.fmt(f),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for EditError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            EditError::Config(e) => Some(e),
            EditError::Write(e) => Some(e),
            EditError::Edit(e) => Some(e),
        }
    }
}

/// Replaces the config file `path` (created with its dir when missing) with `apply(text)`, where
/// `text` is the file as it is under the lock (empty when there is none); see the module's doc.
/// `apply` may run more than once (each time on the newest text) and should only compute. Returns
/// the text written.
///
/// # Errors
/// [`EditError::Config`]: the file cannot be read (as [`read_text`]), its lock file is not a
/// regular file ([`ConfigError::LockFile`]) or stays locked ([`ConfigError::Locked`]), or the file
/// kept changing ([`ConfigError::KeptChanging`]); [`EditError::Write`]: the refusals and failures
/// of [`crate::safe_file`]; [`EditError::Edit`]: what `apply` returned. The file is left as it
/// was in every case.
pub fn edit_file<E>(
    path: &Path,
    mut apply: impl FnMut(&str) -> Result<String, E>,
) -> Result<String, EditError<E>> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| {
            EditError::Config(ConfigError::Read {
                path: path.to_owned(),
                source,
            })
        })?;
    }
    let at = safe_file::locate(path, true).map_err(EditError::Write)?;
    let _lock = lock(path, &at).map_err(EditError::Config)?;
    for _ in 0..MAX_TRIES {
        let seen = read_at(path, &at).map_err(EditError::Config)?;
        let new_text = apply(seen.text.as_deref().unwrap_or("")).map_err(EditError::Edit)?;
        let written = safe_file::write_located(path, &at, seen.stat.as_ref(), &new_text, || {
            let now = read_at(path, &at).map_err(|e| WriteError::Io {
                path: path.to_owned(),
                op: "read the file again before replacing it",
                source: std::io::Error::other(e.to_string()),
            })?;
            Ok(now.same_as(&seen))
        })
        .map_err(EditError::Write)?;
        if written {
            return Ok(new_text);
        }
        tracing::info!(config = %path.display(), "the config changed while it was edited; editing the new text");
    }
    Err(EditError::Config(ConfigError::KeptChanging {
        path: path.to_owned(),
        tries: MAX_TRIES,
    }))
}

/// The config as read in the directory of an edit.
struct Seen {
    /// Its status (`None`: no file).
    stat: Option<Stat>,
    /// Its text (`None`: no file).
    text: Option<String>,
}

impl Seen {
    /// The same file (device and inode) with the same text.
    fn same_as(&self, other: &Seen) -> bool {
        let id = |s: &Option<Stat>| s.as_ref().map(|s| (s.st_dev, s.st_ino));
        id(&self.stat) == id(&other.stat) && self.text == other.text
    }
}

/// Reads `at.name` in `at.dir` as [`read_text`] does, never through a link (the name is the
/// file itself: [`safe_file::locate`] followed a trusted link to it).
fn read_at(path: &Path, at: &Located) -> Result<Seen, ConfigError> {
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = match rustix::fs::openat(&at.dir, &at.name, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(e) if e == Errno::NOENT => {
            return Ok(Seen {
                stat: None,
                text: None,
            })
        }
        Err(e) if e == Errno::LOOP => {
            return Err(ConfigError::NotAFile {
                path: path.to_owned(),
                file_type: "symlink",
            })
        }
        Err(e) => {
            return Err(ConfigError::Read {
                path: path.to_owned(),
                source: e.into(),
            })
        }
    };
    let stat = rustix::fs::fstat(&fd).map_err(|e| ConfigError::Read {
        path: path.to_owned(),
        source: e.into(),
    })?;
    let (bytes, _) = read_capped_file(std::fs::File::from(fd), MAX_CONFIG_BYTES)
        .map_err(|e| read_error(path, e))?;
    Ok(Seen {
        stat: Some(stat),
        text: Some(decode(path, bytes)?),
    })
}

/// The lock file's name for the config named `name`: `<name>.lock`.
fn lock_name(name: &std::ffi::OsStr) -> OsString {
    let mut n = name.to_os_string();
    n.push(".lock");
    n
}

/// Takes the exclusive lock on `<config>.lock` in `at.dir`, waiting up to [`LOCK_WAIT`]; the
/// lock is held until the returned descriptor is dropped.
fn lock(path: &Path, at: &Located) -> Result<OwnedFd, ConfigError> {
    let name = lock_name(&at.name);
    let lock_path = at.dir_path.join(&name);
    let io = |e: Errno| ConfigError::Lock {
        path: path.to_owned(),
        lock: lock_path.clone(),
        source: e.into(),
    };
    let refuse = |kind| ConfigError::LockFile {
        path: path.to_owned(),
        lock: lock_path.clone(),
        kind,
    };
    // Look before opening: a device planted at the name is never opened.
    match rustix::fs::statat(&at.dir, &name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) if safe_file::file_type(&st) != FileType::RegularFile => {
            return Err(refuse(safe_file::kind_name(safe_file::file_type(&st))))
        }
        Ok(_) => {}
        Err(e) if e == Errno::NOENT => {}
        Err(e) => return Err(io(e)),
    }
    // Read-only is enough for `flock`, and lets a lock file another user made be shared.
    let flags =
        OFlags::RDONLY | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = match rustix::fs::openat(&at.dir, &name, flags, Mode::from_raw_mode(0o644)) {
        Ok(fd) => fd,
        Err(e) if e == Errno::LOOP => return Err(refuse("symlink")),
        Err(e) => return Err(io(e)),
    };
    let st = rustix::fs::fstat(&fd).map_err(io)?;
    if safe_file::file_type(&st) != FileType::RegularFile {
        return Err(refuse(safe_file::kind_name(safe_file::file_type(&st))));
    }
    let started = Instant::now();
    loop {
        match rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(fd),
            Err(e) if e == Errno::WOULDBLOCK || e == Errno::INTR => {
                if started.elapsed() >= LOCK_WAIT {
                    return Err(ConfigError::Locked {
                        path: path.to_owned(),
                        lock: lock_path,
                        waited_secs: LOCK_WAIT.as_secs(),
                    });
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(io(e)),
        }
    }
}

/// The lock file of the config `path` as [`edit_file`] names it (`<path>.lock`), for messages and
/// tests.
pub fn lock_path(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_os_string();
    p.push(".lock");
    PathBuf::from(p)
}
