//! [`Acc`]: the sums over a subtree while it is walked (allocated, apparent and freeable bytes,
//! files, dirs, newest and oldest mtime), merged bottom-up and turned into a [`Measure`].

use std::time::SystemTime;

use super::stat::LinkSet;
use crate::inventory::Measure;
use crate::platform::ScanStat;

/// Sums over a subtree while it is walked; becomes a [`Measure`] once the item's birth time is known.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Acc {
    pub(crate) allocated_bytes: u64,
    pub(crate) apparent_bytes: u64,
    pub(crate) freeable_bytes: u64,
    pub(crate) files: u64,
    pub(crate) dirs: u64,
    pub(crate) newest_mtime: Option<SystemTime>,
    pub(crate) oldest_mtime: Option<SystemTime>,
}

impl Acc {
    /// The entry's own sizes; for a further link of an inode already counted, only its mtime (the
    /// item's newest mtime covers every entry in it, whichever item counted the inode's bytes).
    pub(crate) fn of(st: &ScanStat, links: &LinkSet) -> Acc {
        let mtime = st.mtime;
        if !links.first_sight(st) {
            return Acc {
                newest_mtime: mtime,
                oldest_mtime: mtime,
                ..Acc::default()
            };
        }
        let is_dir = st.is_dir();
        Acc {
            allocated_bytes: st.blocks * 512,
            apparent_bytes: st.size,
            freeable_bytes: st.blocks * 512,
            files: u64::from(!is_dir),
            dirs: u64::from(is_dir),
            newest_mtime: mtime,
            oldest_mtime: mtime,
        }
    }

    pub(crate) fn merge(self, o: Acc) -> Acc {
        Acc {
            allocated_bytes: self.allocated_bytes + o.allocated_bytes,
            apparent_bytes: self.apparent_bytes + o.apparent_bytes,
            freeable_bytes: self.freeable_bytes + o.freeable_bytes,
            files: self.files + o.files,
            dirs: self.dirs + o.dirs,
            newest_mtime: pick(self.newest_mtime, o.newest_mtime, SystemTime::max),
            oldest_mtime: pick(self.oldest_mtime, o.oldest_mtime, SystemTime::min),
        }
    }

    /// The measure, with `birth` where the OS gave one, else the oldest mtime seen.
    pub(crate) fn into_measure(self, birth: Option<SystemTime>) -> Measure {
        Measure {
            allocated_bytes: self.allocated_bytes,
            apparent_bytes: self.apparent_bytes,
            freeable_bytes: self.freeable_bytes,
            files: self.files,
            dirs: self.dirs,
            newest_mtime: self.newest_mtime,
            birth_time: birth.or(self.oldest_mtime),
        }
    }
}

fn pick(
    a: Option<SystemTime>,
    b: Option<SystemTime>,
    f: fn(SystemTime, SystemTime) -> SystemTime,
) -> Option<SystemTime> {
    match (a, b) {
        (Some(a), Some(b)) => Some(f(a, b)),
        (a, b) => a.or(b),
    }
}
