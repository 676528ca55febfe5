//! One item as the state keeps it: a fixed-size [`Slot`] of integers; the rare values that do not
//! fit (freeable bytes below allocated, another device than the root's, a `ts` capture, times
//! before 1970, a bundle table past 65535 names, a producer table past 254 ids) move the whole
//! measure into a side [`Extra`], so nothing is rounded.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::inventory::{Captures, Measure};

use super::store::Keyed;

/// `producer` of an unattributed entry.
pub(super) const NO_PRODUCER: u8 = u8::MAX;
/// `flags`: the item itself is a symlink.
pub(super) const SYMLINK: u8 = 1;
/// `flags`: the name captured a pid (in `pid`).
pub(super) const HAS_PID: u8 = 2;
/// `flags`: measure, device and captures are in the side table.
pub(super) const EXTRA: u8 = 4;
/// `flags`: a free slot (its item was removed).
pub(super) const FREE: u8 = 8;

/// An item: 64 bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Slot {
    /// `measure.allocated_bytes`.
    pub(super) allocated_bytes: u64,
    /// `measure.apparent_bytes`.
    pub(super) apparent_bytes: u64,
    /// Inode number.
    pub(super) ino: u64,
    /// `measure.newest_mtime` as nanoseconds since the epoch + 1; 0 for none.
    pub(super) mtime: u64,
    /// `measure.birth_time`, the same way.
    pub(super) birth: u64,
    /// Parent dir id.
    pub(super) dir: u32,
    /// Name offset in the arena.
    pub(super) name: u32,
    /// `captures.pid` when [`HAS_PID`].
    pub(super) pid: u32,
    /// `measure.files`.
    pub(super) files: u32,
    /// `measure.dirs`.
    pub(super) dirs: u32,
    /// `captures.bundle` as an index into the root's bundle names + 1; 0 for none.
    pub(super) bundle: u16,
    /// Index into the root's producer ids; [`NO_PRODUCER`] for none.
    pub(super) producer: u8,
    /// [`SYMLINK`], [`HAS_PID`], [`EXTRA`], [`FREE`].
    pub(super) flags: u8,
}

impl Keyed for Slot {
    fn key(&self) -> (u32, u32) {
        (self.dir, self.name)
    }
}

/// What did not fit in a slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Extra {
    pub(super) measure: Measure,
    pub(super) dev: u64,
    pub(super) captures: Captures,
    /// The producer id when the root's id table is full.
    pub(super) producer: Option<std::sync::Arc<str>>,
}

/// `t` as nanoseconds since the epoch + 1 (0 for none); `Err` when it does not fit.
pub(super) fn encode_time(t: Option<SystemTime>) -> Result<u64, ()> {
    match t {
        None => Ok(0),
        Some(t) => {
            let d = t.duration_since(UNIX_EPOCH).map_err(|_| ())?;
            u64::try_from(d.as_nanos())
                .ok()
                .and_then(|n| n.checked_add(1))
                .ok_or(())
        }
    }
}

/// The time [`encode_time`] encoded.
pub(super) fn decode_time(n: u64) -> Option<SystemTime> {
    (n != 0).then(|| UNIX_EPOCH + Duration::from_nanos(n - 1))
}

impl Slot {
    /// Fills the measure fields from `m`; false when `m` needs the side table.
    pub(super) fn set_measure(&mut self, m: &Measure) -> bool {
        let (Ok(mtime), Ok(birth), Ok(files), Ok(dirs)) = (
            encode_time(m.newest_mtime),
            encode_time(m.birth_time),
            u32::try_from(m.files),
            u32::try_from(m.dirs),
        ) else {
            return false;
        };
        if m.freeable_bytes != m.allocated_bytes {
            return false;
        }
        self.allocated_bytes = m.allocated_bytes;
        self.apparent_bytes = m.apparent_bytes;
        self.mtime = mtime;
        self.birth = birth;
        self.files = files;
        self.dirs = dirs;
        true
    }

    /// The measure held inline (the caller checks [`EXTRA`] first).
    pub(super) fn inline_measure(&self) -> Measure {
        Measure {
            allocated_bytes: self.allocated_bytes,
            apparent_bytes: self.apparent_bytes,
            freeable_bytes: self.allocated_bytes,
            files: self.files as u64,
            dirs: self.dirs as u64,
            newest_mtime: decode_time(self.mtime),
            birth_time: decode_time(self.birth),
        }
    }

    pub(super) fn is_free(&self) -> bool {
        self.flags & FREE != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_stays_64_bytes() {
        assert_eq!(std::mem::size_of::<Slot>(), 64);
    }

    #[test]
    fn times_round_trip_to_the_nanosecond() {
        let t = UNIX_EPOCH + Duration::new(1_800_000_000, 123_456_789);
        assert_eq!(decode_time(encode_time(Some(t)).unwrap_or(0)), Some(t));
        assert_eq!(decode_time(encode_time(None).unwrap_or(1)), None);
        assert!(encode_time(Some(UNIX_EPOCH - Duration::from_secs(1))).is_err());
    }
}
