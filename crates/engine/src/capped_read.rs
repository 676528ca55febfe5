//! Reading a small file the user or another program put somewhere (the config, a crash report)
//! without hanging or eating memory: opened with `O_NONBLOCK` (a FIFO never blocks the open),
//! checked on the opened descriptor (a path swapped for a FIFO, a socket or a device between a
//! check and the open is refused), and read up to a stated size.

use std::fs::Metadata;
use std::io::Read as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;

/// Why [`read_capped`] refused or failed; the caller names the path in its own error.
#[derive(Debug)]
pub(crate) enum CappedReadError {
    /// Opening, `fstat` or reading failed.
    Io(std::io::Error),
    /// Not a regular file: what it is instead (`FIFO`, `directory`, ...).
    NotAFile(&'static str),
    /// Larger than the cap: the size seen (the file's length, or what was read past the cap).
    TooLarge(u64),
}

/// The bytes of the regular file `path` (at most `max_bytes`) and its metadata, read through one
/// descriptor opened with `O_NONBLOCK`.
///
/// # Errors
/// See [`CappedReadError`].
pub(crate) fn read_capped(
    path: &Path,
    max_bytes: u64,
) -> Result<(Vec<u8>, Metadata), CappedReadError> {
    read_capped_file(open_nonblocking(path)?, max_bytes)
}

/// The bytes of the opened `file` (at most `max_bytes`) and its metadata: refused unless the
/// descriptor is a regular file. The caller opens it with `O_NONBLOCK`, so that a FIFO never
/// blocks the open.
///
/// # Errors
/// See [`CappedReadError`].
pub(crate) fn read_capped_file(
    file: std::fs::File,
    max_bytes: u64,
) -> Result<(Vec<u8>, Metadata), CappedReadError> {
    let meta = regular_metadata(&file)?;
    if meta.len() > max_bytes {
        return Err(CappedReadError::TooLarge(meta.len()));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    // The file may grow between the fstat and the read: read one byte more than the cap to notice.
    file.take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(CappedReadError::Io)?;
    if bytes.len() as u64 > max_bytes {
        return Err(CappedReadError::TooLarge(bytes.len() as u64));
    }
    Ok((bytes, meta))
}

/// The first `max_bytes` of the regular file `path` (all of it when smaller) and its metadata,
/// read as [`read_capped`] reads: for a file of which only the head is wanted.
///
/// # Errors
/// [`CappedReadError::Io`] or [`CappedReadError::NotAFile`]; never `TooLarge`.
pub(crate) fn read_head(
    path: &Path,
    max_bytes: u64,
) -> Result<(Vec<u8>, Metadata), CappedReadError> {
    let (file, meta) = open_regular(path)?;
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len().min(max_bytes)).unwrap_or(0));
    file.take(max_bytes)
        .read_to_end(&mut bytes)
        .map_err(CappedReadError::Io)?;
    Ok((bytes, meta))
}

/// `path` opened for reading with `O_NONBLOCK`, so that a FIFO never blocks the open.
fn open_nonblocking(path: &Path) -> Result<std::fs::File, CappedReadError> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(CappedReadError::Io)
}

/// The metadata of the opened `file`, refused unless it is a regular file.
fn regular_metadata(file: &std::fs::File) -> Result<Metadata, CappedReadError> {
    let meta = file.metadata().map_err(CappedReadError::Io)?;
    if !meta.is_file() {
        return Err(CappedReadError::NotAFile(file_type_name(&meta.file_type())));
    }
    Ok(meta)
}

/// `path` opened with `O_NONBLOCK` and its metadata, refused unless it is a regular file.
fn open_regular(path: &Path) -> Result<(std::fs::File, Metadata), CappedReadError> {
    let file = open_nonblocking(path)?;
    let meta = regular_metadata(&file)?;
    Ok((file, meta))
}

/// What kind of file `t` is, for messages (`FIFO`, `socket`, `directory`, ...).
pub(crate) fn file_type_name(t: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    if t.is_dir() {
        "directory"
    } else if t.is_fifo() {
        "FIFO"
    } else if t.is_socket() {
        "socket"
    } else if t.is_char_device() {
        "character device"
    } else if t.is_block_device() {
        "block device"
    } else if t.is_symlink() {
        "symlink"
    } else {
        "special file"
    }
}
