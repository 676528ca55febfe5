//! Free space of a volume as the system's own UI shows it.
//!
//! `statfs`/`statvfs` count only blocks that are free now. On APFS, Finder and System Settings
//! show the "available for important usage" capacity instead, which adds purgeable space (caches,
//! local snapshots, iCloud copies the system deletes on demand). [`combine`] joins the two reads;
//! it is pure so that its arithmetic is tested with recorded figures on every OS.

use std::io;
use std::path::Path;

/// Space on the volume holding a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VolumeFree {
    /// Size of the volume, bytes.
    pub total_bytes: u64,
    /// Bytes available to this user as the system shows them (Finder on macOS: blocks free now
    /// plus purgeable space; `statvfs`'s `f_bavail` elsewhere). What the system can free for a
    /// write, so what a disk-full estimate should count.
    pub free_bytes: u64,
    /// Part of `free_bytes` that is not free now but purgeable (the system deletes it when space
    /// is needed); 0 where the OS reports none.
    pub purgeable_bytes: u64,
}

/// Joins the block counts of `statfs` (`total_bytes`, `free_now`: blocks available to this user
/// now) with the important-usage capacity (`important`, macOS only; `None` when it could not be
/// read). The important-usage figure wins when it is known and not 0 (APFS returns 0 on volumes
/// where it does not apply); it is never taken below `free_now` (the two are read at different
/// instants, and purgeable space is never negative) nor above the volume's size.
pub fn combine(total_bytes: u64, free_now: u64, important: Option<u64>) -> VolumeFree {
    let free_now = free_now.min(total_bytes);
    let free = match important {
        Some(n) if n > 0 => n.clamp(free_now, total_bytes),
        _ => free_now,
    };
    VolumeFree {
        total_bytes,
        free_bytes: free,
        purgeable_bytes: free - free_now,
    }
}

/// The space of the volume holding `path` (see [`VolumeFree`]).
///
/// macOS: `statfs` (`f_bavail * f_bsize`, `f_blocks * f_bsize`) and the URL resource
/// `NSURLVolumeAvailableCapacityForImportantUsageKey` (CoreFoundation's
/// `CFURLCopyResourcePropertyForKey`), joined by [`combine`]. Elsewhere: `statvfs`
/// (`f_bavail * f_frsize`, `f_blocks * f_frsize`); nothing is purgeable.
///
/// # Errors
/// The OS error of `statfs`/`statvfs` (`NotFound`, `PermissionDenied`, ...). A failed
/// important-usage read is not an error: the figure is then `statfs`'s.
pub fn volume_free(path: &Path) -> io::Result<VolumeFree> {
    let (total, free_now) = super::imp::statfs_space(path)?;
    Ok(combine(
        total,
        free_now,
        super::imp::important_usage_capacity(path),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    // Figures of the shape an APFS Data volume with local snapshots reports (not read from a Mac
    // by this test): `statfs` sees 41.2 GiB free of 460.4 GiB, the important-usage capacity
    // (Finder's "available") 118.6 GiB.
    #[test]
    fn the_important_usage_capacity_is_the_free_space_and_the_difference_is_purgeable() {
        let total = 494_384_795_648;
        let statfs_free = 44_257_353_728; // f_bavail * f_bsize
        let important = 127_345_975_296; // NSURLVolumeAvailableCapacityForImportantUsageKey
        let v = combine(total, statfs_free, Some(important));
        assert_eq!(v.free_bytes, important);
        assert_eq!(v.purgeable_bytes, 83_088_621_568);
        assert_eq!(v.free_bytes - v.purgeable_bytes, statfs_free);
        assert_eq!(v.total_bytes, total);
    }

    #[test]
    fn without_the_important_usage_figure_the_free_space_is_statfs_s() {
        // Linux, a non-APFS volume, or a failed CoreFoundation read.
        let v = combine(100 * GIB, 30 * GIB, None);
        assert_eq!((v.free_bytes, v.purgeable_bytes), (30 * GIB, 0));
        // APFS answers 0 where the key does not apply (e.g. a read-only system snapshot).
        let v = combine(100 * GIB, 30 * GIB, Some(0));
        assert_eq!((v.free_bytes, v.purgeable_bytes), (30 * GIB, 0));
    }

    #[test]
    fn reads_at_different_instants_never_make_purgeable_space_negative_or_free_exceed_the_volume() {
        // Another writer freed 2 GiB between the statfs and the CoreFoundation read.
        let v = combine(100 * GIB, 32 * GIB, Some(30 * GIB));
        assert_eq!((v.free_bytes, v.purgeable_bytes), (32 * GIB, 0));
        let v = combine(100 * GIB, 30 * GIB, Some(130 * GIB));
        assert_eq!((v.free_bytes, v.purgeable_bytes), (100 * GIB, 70 * GIB));
    }

    #[test]
    fn the_free_space_of_a_temp_dir_s_volume_is_what_statvfs_says() {
        let dir = std::env::temp_dir();
        let v = volume_free(&dir).expect("statvfs of the temp dir");
        let out = std::process::Command::new("df")
            .args(["-B1", "--output=size,avail"])
            .arg(&dir)
            .output()
            .expect("df");
        let text = String::from_utf8_lossy(&out.stdout);
        let nums: Vec<u64> = text
            .lines()
            .nth(1)
            .expect("a df line")
            .split_whitespace()
            .map(|n| n.parse().expect("a number"))
            .collect();
        assert_eq!(v.total_bytes, nums[0]);
        // df shows the blocks free now (statfs); free space moves with other writers between
        // the two reads.
        let free_now = v.free_bytes - v.purgeable_bytes;
        assert!(free_now.abs_diff(nums[1]) < GIB, "{v:?} vs df {nums:?}");
        if cfg!(not(target_os = "macos")) {
            assert_eq!(v.purgeable_bytes, 0);
        }
    }
}
