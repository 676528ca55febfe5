//! Free space of the volume under each root: `sysinfo::Disks`, the longest mount-point prefix of
//! the root's canonical path; `statvfs` of the root when no listed disk matches (e.g. in a container).

use std::path::Path;

/// Space on the volume holding a root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeSpace {
    /// The volume's mount point (the root itself when found by `statvfs` only).
    pub mount: String,
    /// Bytes available to this user.
    pub free_bytes: u64,
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
                        total_bytes: disk.total_space(),
                    })
                    .collect()
            }
            Err(e) => {
                tracing::debug!(error = %e, "cannot list disks; using statvfs");
                Vec::new()
            }
        };
        Volumes { disks }
    }

    /// The volume holding `canonical` (a root's canonical path): the listed disk with the longest
    /// mount point that is a prefix of it, else `statvfs(canonical)`; `None` when neither works.
    pub fn space_of(&self, canonical: &Path) -> Option<VolumeSpace> {
        self.disks
            .iter()
            .filter(|d| canonical.starts_with(&d.mount))
            .max_by_key(|d| d.mount.len())
            .cloned()
            .or_else(|| statvfs_space(canonical))
    }
}

#[allow(clippy::unnecessary_cast)]
fn statvfs_space(path: &Path) -> Option<VolumeSpace> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `c` is a NUL-terminated path; `st` is writable for one `statvfs`.
    let rc = unsafe { libc::statvfs(c.as_ptr(), st.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: statvfs returned 0, so it filled `st`.
    // The field types differ between platforms (u64 on Linux, u32/c_ulong on macOS).
    let st = unsafe { st.assume_init() };
    let frsize = st.f_frsize as u64;
    Some(VolumeSpace {
        mount: path.to_string_lossy().into_owned(),
        free_bytes: (st.f_bavail as u64).saturating_mul(frsize),
        total_bytes: (st.f_blocks as u64).saturating_mul(frsize),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_volume_of_a_temp_dir_has_the_space_statvfs_reports() {
        let dir = tempfile::tempdir().unwrap();
        let canonical = std::fs::canonicalize(dir.path()).unwrap();
        let v = Volumes::read().space_of(&canonical).unwrap();
        let s = statvfs_space(&canonical).unwrap();
        assert!(canonical.starts_with(&v.mount));
        assert_eq!(v.total_bytes, s.total_bytes);
        // Free space moves with other writers; the two reads are close, not equal.
        let diff = v.free_bytes.abs_diff(s.free_bytes);
        assert!(
            diff < 1 << 30,
            "free {} vs statvfs {}",
            v.free_bytes,
            s.free_bytes
        );
    }
}
