//! [`Spool`]: a list that stays in memory while short and moves to an unlinked temp file once
//! long, so a plan of 700k items costs a file, not hundreds of MiB. Records are length-prefixed;
//! planned items are encoded exactly (times to the nanosecond: the re-check compares them), kept
//! items as JSON.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{DeletedItem, KeptItem, PlannedItem};

/// Records held in memory before a spool moves to its file.
pub const MEMORY_RECORDS: usize = 16_384;

/// How a record is written to and read from a spool.
pub trait Record: Sized {
    /// Appends the record's bytes to `out`.
    fn encode(&self, out: &mut Vec<u8>);
    /// The record encoded in `bytes`; `None` when they are not one.
    fn decode(bytes: &[u8]) -> Option<Self>;
}

/// A list of records: a `Vec` up to [`MEMORY_RECORDS`], then an unlinked temp file (mode 0600,
/// gone when dropped, invisible to any scan).
pub struct Spool<T> {
    memory: Vec<T>,
    file: Option<BufWriter<File>>,
    len: u64,
}

impl<T: Record + Clone> Default for Spool<T> {
    fn default() -> Spool<T> {
        Spool::new()
    }
}

impl<T: Record + Clone> Spool<T> {
    /// An empty spool (in memory).
    pub fn new() -> Spool<T> {
        Spool {
            memory: Vec::new(),
            file: None,
            len: 0,
        }
    }

    /// Number of records.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True when no record was pushed.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// True while every record is in memory.
    pub fn in_memory(&self) -> bool {
        self.file.is_none()
    }

    /// Appends a record.
    ///
    /// # Errors
    /// Creating or writing the temp file.
    pub fn push(&mut self, record: T) -> io::Result<()> {
        self.len += 1;
        if self.file.is_none() && self.memory.len() < MEMORY_RECORDS {
            self.memory.push(record);
            return Ok(());
        }
        let mut buf = Vec::new();
        if self.file.is_none() {
            let mut file = BufWriter::with_capacity(1 << 16, temp_file()?);
            for r in self.memory.drain(..) {
                write_record(&mut file, &r, &mut buf)?;
            }
            self.memory = Vec::new();
            self.file = Some(file);
        }
        match self.file.as_mut() {
            Some(file) => write_record(file, &record, &mut buf),
            None => Ok(()),
        }
    }

    /// Sorts the records when they are all in memory (a spilled spool keeps its order).
    pub fn sort_in_memory_by(&mut self, f: impl FnMut(&T, &T) -> std::cmp::Ordering) {
        self.memory.sort_by(f);
    }

    /// Writes out what is buffered; call once every record is pushed.
    ///
    /// # Errors
    /// Writing the temp file.
    pub fn flush(&mut self) -> io::Result<()> {
        self.file.as_mut().map_or(Ok(()), Write::flush)
    }

    /// Every record, in order, read afresh each time (in memory: cloned).
    pub fn iter(&self) -> Box<dyn Iterator<Item = io::Result<T>> + '_> {
        match &self.file {
            None => Box::new(self.memory.iter().cloned().map(Ok)),
            Some(file) => {
                let at = FileAt {
                    file: file.get_ref(),
                    pos: 0,
                };
                let mut reader = BufReader::with_capacity(1 << 16, at);
                let mut left = self.len;
                Box::new(std::iter::from_fn(move || {
                    if left == 0 {
                        return None;
                    }
                    left -= 1;
                    Some(read_record(&mut reader))
                }))
            }
        }
    }
}

fn write_record<T: Record>(w: &mut impl Write, r: &T, buf: &mut Vec<u8>) -> io::Result<()> {
    buf.clear();
    r.encode(buf);
    let len = u32::try_from(buf.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "spool record too long"))?;
    w.write_all(&len.to_le_bytes())?;
    w.write_all(buf)
}

fn read_record<T: Record>(r: &mut impl Read) -> io::Result<T> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    let mut bytes = vec![0u8; u32::from_le_bytes(len) as usize];
    r.read_exact(&mut bytes)?;
    T::decode(&bytes).ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "bad spool record"))
}

/// Reads a file from a position of its own (`pread`), so readers never move a shared offset.
struct FileAt<'a> {
    file: &'a File,
    pos: u64,
}

impl Read for FileAt<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read_at(buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// A new temp file in the temp dir, opened read-write with mode 0600 and unlinked at once.
fn temp_file() -> io::Result<File> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir();
    let name = format!(
        ".cachewatch-plan-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let mut path: PathBuf = dir.join(name);
    // The name is guessable in a shared temp dir: one taken (planted by another user) is left
    // alone and the next counter tried.
    let mut tries = 0;
    let file = loop {
        let opened = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path);
        match opened {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && tries < 100 => {
                tries += 1;
                path = dir.join(format!(
                    ".cachewatch-plan-{}-{}",
                    std::process::id(),
                    NEXT.fetch_add(1, Ordering::Relaxed)
                ));
            }
            other => {
                break other.map_err(|e| {
                    io::Error::new(e.kind(), format!("creating {}: {e}", path.display()))
                })?
            }
        }
    };
    std::fs::remove_file(&path)?;
    Ok(file)
}

impl Record for KeptItem {
    fn encode(&self, out: &mut Vec<u8>) {
        // Serializing a KeptItem to memory cannot fail (no maps with non-string keys).
        if serde_json::to_writer(&mut *out, self).is_err() {
            out.clear();
        }
    }

    fn decode(bytes: &[u8]) -> Option<KeptItem> {
        serde_json::from_slice(bytes).ok()
    }
}

impl Record for DeletedItem {
    fn encode(&self, out: &mut Vec<u8>) {
        if serde_json::to_writer(&mut *out, self).is_err() {
            out.clear();
        }
    }

    fn decode(bytes: &[u8]) -> Option<DeletedItem> {
        serde_json::from_slice(bytes).ok()
    }
}

impl Record for PlannedItem {
    fn encode(&self, out: &mut Vec<u8>) {
        for b in [
            self.path.as_os_str().as_bytes(),
            self.root.as_os_str().as_bytes(),
            self.producer.as_bytes(),
        ] {
            out.extend_from_slice(&(b.len() as u32).to_le_bytes());
            out.extend_from_slice(b);
        }
        for n in [
            self.allocated_bytes,
            self.apparent_bytes,
            self.freeable_bytes,
            self.age_secs,
            self.dev,
            self.ino,
        ] {
            out.extend_from_slice(&n.to_le_bytes());
        }
        out.push(u8::from(self.is_symlink));
        match self.owner_pid {
            Some(pid) => {
                out.push(1);
                out.extend_from_slice(&pid.to_le_bytes());
            }
            None => out.push(0),
        }
        for t in [self.newest_mtime, self.name_ts, self.birth_time, self.born] {
            put_time(out, t);
        }
        match &self.owner_app {
            Some(app) => {
                out.push(1);
                out.extend_from_slice(&(app.len() as u32).to_le_bytes());
                out.extend_from_slice(app.as_bytes());
            }
            None => out.push(0),
        }
    }

    fn decode(bytes: &[u8]) -> Option<PlannedItem> {
        let mut r = Reader(bytes);
        let path = PathBuf::from(std::ffi::OsStr::from_bytes(r.bytes()?));
        let root = PathBuf::from(std::ffi::OsStr::from_bytes(r.bytes()?));
        let producer = String::from_utf8(r.bytes()?.to_vec()).ok()?;
        let mut n = [0u64; 6];
        for v in &mut n {
            *v = r.u64()?;
        }
        let is_symlink = r.take(1)?[0] != 0;
        let owner_pid = match r.take(1)?[0] {
            0 => None,
            _ => Some(u32::from_le_bytes(r.take(4)?.try_into().ok()?)),
        };
        let mut t = [None; 4];
        for v in &mut t {
            *v = r.time()?;
        }
        let owner_app = match r.take(1)?[0] {
            0 => None,
            _ => Some(String::from_utf8(r.bytes()?.to_vec()).ok()?),
        };
        Some(PlannedItem {
            path,
            root,
            producer,
            allocated_bytes: n[0],
            apparent_bytes: n[1],
            freeable_bytes: n[2],
            age_secs: n[3],
            dev: n[4],
            ino: n[5],
            is_symlink,
            newest_mtime: t[0],
            name_ts: t[1],
            owner_pid,
            owner_app,
            birth_time: t[2],
            born: t[3],
        })
    }
}

/// A time as a tag (0: none, 1: after the epoch, 2: before), seconds and nanoseconds.
fn put_time(out: &mut Vec<u8>, t: Option<SystemTime>) {
    let (tag, d) = match t.map(|t| t.duration_since(UNIX_EPOCH)) {
        None => (0u8, Duration::ZERO),
        Some(Ok(d)) => (1, d),
        Some(Err(e)) => (2, e.duration()),
    };
    out.push(tag);
    out.extend_from_slice(&d.as_secs().to_le_bytes());
    out.extend_from_slice(&d.subsec_nanos().to_le_bytes());
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = (self.0.get(..n)?, self.0.get(n..)?);
        self.0 = rest;
        Some(head)
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn bytes(&mut self) -> Option<&'a [u8]> {
        let len = u32::from_le_bytes(self.take(4)?.try_into().ok()?);
        self.take(len as usize)
    }

    /// `Some(None)` for no time, `None` for bad bytes.
    fn time(&mut self) -> Option<Option<SystemTime>> {
        let tag = self.take(1)?[0];
        let secs = self.u64()?;
        let nanos = u32::from_le_bytes(self.take(4)?.try_into().ok()?);
        let d = Duration::new(secs, nanos);
        match tag {
            0 => Some(None),
            1 => Some(Some(UNIX_EPOCH.checked_add(d)?)),
            _ => Some(Some(UNIX_EPOCH.checked_sub(d)?)),
        }
    }
}
