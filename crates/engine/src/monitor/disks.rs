//! Free space of the volume under each root. The figures come from the platform facade
//! (`cachewatch_core::platform::volume_free`: `statvfs` on Linux; on macOS `statfs` and the
//! important-usage capacity, so "free" is what Finder shows and its purgeable part is known);
//! the mount point from `sysinfo::Disks`, the longest mount-point prefix of the root's canonical
//! path (the root itself when no listed disk matches, e.g. in a container).

use std::path::Path;

use cachewatch_core::platform::{volume_free, VolumeFree};

/// Space on the volume holding a root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeSpace {
    /// The volume's mount point (the root itself when no listed disk holds it).
    pub mount: String,
    /// Bytes available to this user as the system shows them (on macOS Finder's figure, which
    /// counts purgeable space: the system frees it for a write, so the disk-full ETA counts it).
    pub free_bytes: u64,
    /// Part of `free_bytes` that is purgeable rather than free now (0 on Linux).
    pub purgeable_bytes: u64,
    /// Size of the volume, bytes.
    pub total_bytes: u64,
}

/// Reads the disk list once; [`Volumes::space_of`] then answers per root.
#[derive(Debug)]
pub struct Volumes {
    disks: Vec<VolumeSpace>,
}

impl Volumes {
    /// Lists the mounted disks now (empty when the OS list cannot be read).
    pub fn read() -> Volumes {
        let disks = match sysinfo::Disks::new() {
            Ok(mut d) => {
                d.refresh(true);
                d.iter()
                    .map(|disk| VolumeSpace {
                        mount: disk.mount_point().to_string_lossy().into_owned(),
                        free_bytes: disk.available_space(),
                        purgeable_bytes: 0,
                        total_bytes: disk.total_space(),
                    })
                    .collect()
            }
            Err(e) => {
                tracing::debug!(error = %e, "cannot list disks; a root's mount is the root itself");
                Vec::new()
            }
        };
        Volumes { disks }
    }

    /// The volume holding `canonical` (a root's canonical path): the figures of
    /// `volume_free(canonical)` under the mount point of the listed disk with the longest mount
    /// point that is a prefix of it (else `canonical` itself). When `volume_free` fails, the
    /// listed disk's own figures; `None` when neither is known.
    pub fn space_of(&self, canonical: &Path) -> Option<VolumeSpace> {
        let listed = self
            .disks
            .iter()
            .filter(|d| canonical.starts_with(&d.mount))
            .max_by_key(|d| d.mount.len());
        match volume_free(canonical) {
            Ok(v) => Some(space(
                listed.map_or_else(
                    || canonical.to_string_lossy().into_owned(),
                    |d| d.mount.clone(),
                ),
                v,
            )),
            Err(e) => {
                tracing::debug!(error = %e, path = ?canonical, "cannot read the volume's free space");
                listed.cloned()
            }
        }
    }
}

fn space(mount: String, v: VolumeFree) -> VolumeSpace {
    VolumeSpace {
        mount,
        free_bytes: v.free_bytes,
        purgeable_bytes: v.purgeable_bytes,
        total_bytes: v.total_bytes,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_volume_of_a_temp_dir_has_the_space_and_mount_df_reports() {
        let dir = tempfile::tempdir().unwrap();
        let canonical = std::fs::canonicalize(dir.path()).unwrap();
        let v = Volumes::read().space_of(&canonical).unwrap();
        let out = std::process::Command::new("df")
            .args(["-B1", "--output=size,avail,target"])
            .arg(&canonical)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let line: Vec<&str> = text.lines().nth(1).unwrap().split_whitespace().collect();
        let (size, avail): (u64, u64) = (line[0].parse().unwrap(), line[1].parse().unwrap());
        assert_eq!(v.total_bytes, size);
        // df counts the blocks free now; free space moves with other writers between the reads.
        let free_now = v.free_bytes - v.purgeable_bytes;
        assert!(free_now.abs_diff(avail) < 1 << 30, "{v:?} vs df {line:?}");
        assert!(canonical.starts_with(&v.mount), "{v:?}");
        // sysinfo lists the mount df names (a container may list none: then the root itself).
        assert!(
            v.mount == line[2] || v.mount == canonical.to_string_lossy(),
            "{v:?} vs df {line:?}"
        );
    }
}
