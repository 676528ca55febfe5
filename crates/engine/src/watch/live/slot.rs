//! One item as the state keeps it: a fixed-size [`Slot`] of integers; the rare values that do not
//! fit (freeable bytes below allocated, allocated bytes not a multiple of 512 or past 2 TiB,
//! apparent bytes past 4 GiB, an inode number past 2^32, more than 4095 files or 15 dirs, another
//! device than the root's, a `ts` capture, times before 1970, a root with more than 15 bundle
//! names, a producer table past 254 ids) move the whole measure into a side [`Extra`], so nothing
//! is rounded. Items with that many files or dirs are big ones, and few.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::inventory::{Captures, Measure};

/// `producer` of an unattributed entry.
pub(super) const NO_PRODUCER: u8 = u8::MAX;
/// `flags`: the item itself is a symlink.
pub(super) const SYMLINK: u8 = 1;
/// `flags`: the name captured a pid (in the root's pid table).
pub(super) const HAS_PID: u8 = 2;
/// `flags`: measure, device, inode and captures are in the side table.
pub(super) const EXTRA: u8 = 4;
/// `flags`: a free slot (its item was removed).
pub(super) const FREE: u8 = 8;
/// Bundle indices (+ 1) a slot holds, in the high 4 bits of `flags`.
pub(super) const BUNDLES_INLINE: u16 = 15;
/// Most files (`measure.files`) a slot holds: 12 bits of `counts`.
const MAX_FILES: u64 = 0xfff;
/// Most dirs (`measure.dirs`) a slot holds: 4 bits of `counts`.
const MAX_DIRS: u64 = 0xf;

/// An item: 36 bytes (4-byte aligned: the 64-bit times are kept as two halves).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Slot {
    /// `measure.newest_mtime` as nanoseconds since the epoch + 1 (0 for none), low and high half.
    mtime: [u32; 2],
    /// `measure.birth_time`, the same way.
    birth: [u32; 2],
    /// Offset in the arena of the item's record: its parent dir id and its name
    /// ([`super::arena::Arena::push_item`]).
    pub(super) rec: u32,
    /// Inode number.
    pub(super) ino: u32,
    /// `measure.allocated_bytes / 512`.
    blocks: u32,
    /// `measure.apparent_bytes`.
    apparent: u32,
    /// `measure.files` (low 12 bits) and `measure.dirs` (high 4 bits).
    counts: u16,
    /// Index into the root's producer ids; [`NO_PRODUCER`] for none.
    pub(super) producer: u8,
    /// [`SYMLINK`], [`HAS_PID`], [`EXTRA`], [`FREE`] in the low 4 bits; `captures.bundle` as an
    /// index into the root's bundle names + 1 in the high 4 bits (0 for none).
    pub(super) flags: u8,
}

/// What did not fit in a slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Extra {
    pub(super) measure: Measure,
    pub(super) dev: u64,
    pub(super) ino: u64,
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

fn split(n: u64) -> [u32; 2] {
    [n as u32, (n >> 32) as u32]
}

fn join(h: [u32; 2]) -> u64 {
    h[0] as u64 | (h[1] as u64) << 32
}

impl Slot {
    /// Fills the measure fields from `m`; false when `m` needs the side table.
    pub(super) fn set_measure(&mut self, m: &Measure) -> bool {
        let blocks = (m.allocated_bytes % 512 == 0)
            .then(|| u32::try_from(m.allocated_bytes / 512).ok())
            .flatten();
        let (Ok(mtime), Ok(birth), Some(blocks), Ok(apparent)) = (
            encode_time(m.newest_mtime),
            encode_time(m.birth_time),
            blocks,
            u32::try_from(m.apparent_bytes),
        ) else {
            return false;
        };
        if m.freeable_bytes != m.allocated_bytes || m.files > MAX_FILES || m.dirs > MAX_DIRS {
            return false;
        }
        self.blocks = blocks;
        self.apparent = apparent;
        self.mtime = split(mtime);
        self.birth = split(birth);
        self.counts = (m.files | m.dirs << 12) as u16;
        true
    }

    /// The measure held inline (the caller checks [`EXTRA`] first).
    pub(super) fn inline_measure(&self) -> Measure {
        let allocated_bytes = self.blocks as u64 * 512;
        Measure {
            allocated_bytes,
            apparent_bytes: self.apparent as u64,
            freeable_bytes: allocated_bytes,
            files: (self.counts & 0xfff) as u64,
            dirs: (self.counts >> 12) as u64,
            newest_mtime: decode_time(join(self.mtime)),
            birth_time: decode_time(join(self.birth)),
        }
    }

    /// The allocated bytes held inline (the caller checks [`EXTRA`] first).
    pub(super) fn inline_allocated(&self) -> u64 {
        self.blocks as u64 * 512
    }

    pub(super) fn is_free(&self) -> bool {
        self.flags & FREE != 0
    }

    /// The bundle index + 1 (0: none).
    pub(super) fn bundle(&self) -> u16 {
        (self.flags >> 4) as u16
    }

    /// Sets the bundle index + 1, at most [`BUNDLES_INLINE`].
    pub(super) fn set_bundle(&mut self, i: u16) {
        debug_assert!(i <= BUNDLES_INLINE);
        self.flags = (self.flags & 0x0f) | ((i.min(BUNDLES_INLINE) as u8) << 4);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_stays_36_bytes() {
        assert_eq!(std::mem::size_of::<Slot>(), 36);
    }

    #[test]
    fn bundle_and_flags_share_a_byte() {
        let mut s = Slot {
            flags: SYMLINK | HAS_PID,
            ..Slot::default()
        };
        s.set_bundle(BUNDLES_INLINE);
        assert_eq!(
            (s.bundle(), s.flags & 0x0f),
            (BUNDLES_INLINE, SYMLINK | HAS_PID)
        );
        s.flags |= EXTRA;
        s.set_bundle(1);
        assert_eq!((s.bundle(), s.flags & 0x0f), (1, SYMLINK | HAS_PID | EXTRA));
        assert!(!s.is_free());
    }

    #[test]
    fn times_round_trip_to_the_nanosecond() {
        let t = UNIX_EPOCH + Duration::new(1_800_000_000, 123_456_789);
        assert_eq!(decode_time(encode_time(Some(t)).unwrap_or(0)), Some(t));
        assert_eq!(decode_time(encode_time(None).unwrap_or(1)), None);
        assert!(encode_time(Some(UNIX_EPOCH - Duration::from_secs(1))).is_err());
        let far = UNIX_EPOCH + Duration::new(u64::MAX / 1_000_000_000 - 1, 999_999_999);
        let mut s = Slot::default();
        let m = Measure {
            newest_mtime: Some(far),
            birth_time: Some(t),
            ..Measure::default()
        };
        assert!(s.set_measure(&m));
        assert_eq!(s.inline_measure(), m);
    }

    #[test]
    fn what_does_not_fit_is_refused() {
        let fits = Measure {
            allocated_bytes: 512 * u32::MAX as u64,
            apparent_bytes: u32::MAX as u64,
            freeable_bytes: 512 * u32::MAX as u64,
            files: MAX_FILES,
            dirs: MAX_DIRS,
            ..Measure::default()
        };
        let mut s = Slot::default();
        assert!(s.set_measure(&fits));
        assert_eq!(s.inline_measure(), fits);
        let wider = |f: fn(&mut Measure)| {
            let mut m = fits;
            f(&mut m);
            !Slot::default().set_measure(&m)
        };
        assert!(wider(|m| {
            m.allocated_bytes += 512;
            m.freeable_bytes = m.allocated_bytes
        }));
        assert!(wider(|m| {
            m.allocated_bytes = 1000;
            m.freeable_bytes = 1000
        }));
        assert!(wider(|m| m.apparent_bytes += 1));
        assert!(wider(|m| m.files += 1));
        assert!(wider(|m| m.dirs += 1));
        assert!(wider(|m| m.freeable_bytes -= 512));
    }
}
