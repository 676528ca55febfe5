//! Linux twins of `fd_macos.rs`: `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//! RESOLVE_NO_XDEV` (Linux 5.6), falling back to one `openat(O_NOFOLLOW)` per component with a
//! mount check per step; `statx` with `STATX_MNT_ID` (Linux 5.8) for mount ids.

use std::ffi::OsStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags, StatxFlags};
use rustix::io::Errno;

use super::fd::{time_of, EntryStat, FileKind, MountId};

pub(super) const FD_WALK: &str =
    "openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV), \
     else openat(O_NOFOLLOW) per component with a statx mount-id check";

/// Set once `openat2` answered `ENOSYS` (kernel before 5.6, or a seccomp filter).
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// How often `openat2` is retried when it reports a concurrent rename (`EAGAIN`).
const OPENAT2_RETRIES: usize = 16;

pub(super) fn open_dir_beneath(dir: BorrowedFd<'_>, rel: &Path) -> std::io::Result<OwnedFd> {
    if !NO_OPENAT2.load(Ordering::Relaxed) {
        let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_XDEV;
        for _ in 0..OPENAT2_RETRIES {
            match rustix::fs::openat2(dir, rel, DIR_FLAGS, Mode::empty(), resolve) {
                Err(Errno::AGAIN) => continue,
                Err(Errno::NOSYS) => {
                    NO_OPENAT2.store(true, Ordering::Relaxed);
                    break;
                }
                r => return r.map_err(Into::into),
            }
        }
        if !NO_OPENAT2.load(Ordering::Relaxed) {
            return Err(Errno::AGAIN.into());
        }
    }
    open_by_components(dir, rel)
}

/// One `openat(O_NOFOLLOW | O_DIRECTORY)` per component; a component on another mount than its
/// parent fails with `EXDEV`.
fn open_by_components(dir: BorrowedFd<'_>, rel: &Path) -> std::io::Result<OwnedFd> {
    let mut mount = mount_id(dir)?;
    let mut cur: Option<OwnedFd> = None;
    for comp in rel.components() {
        let parent = cur.as_ref().map_or(dir, AsFd::as_fd);
        let next = rustix::fs::openat(parent, comp.as_os_str(), DIR_FLAGS, Mode::empty())?;
        let next_mount = mount_id(next.as_fd())?;
        if next_mount != mount {
            return Err(Errno::XDEV.into());
        }
        mount = next_mount;
        cur = Some(next);
    }
    cur.ok_or_else(|| std::io::Error::from(std::io::ErrorKind::InvalidInput))
}

fn stat_flags() -> StatxFlags {
    StatxFlags::BASIC_STATS | StatxFlags::BTIME | StatxFlags::MNT_ID
}

fn entry(s: &rustix::fs::Statx) -> EntryStat {
    let kind = match FileType::from_raw_mode(u32::from(s.stx_mode)) {
        FileType::Directory => FileKind::Dir,
        FileType::Symlink => FileKind::Symlink,
        _ => FileKind::Other,
    };
    let has = |f: StatxFlags| s.stx_mask & f.bits() == f.bits();
    EntryStat {
        dev: rustix::fs::makedev(s.stx_dev_major, s.stx_dev_minor),
        ino: s.stx_ino,
        kind,
        nlink: u64::from(s.stx_nlink),
        allocated_bytes: s.stx_blocks * 512,
        mtime: has(StatxFlags::MTIME)
            .then(|| time_of(s.stx_mtime.tv_sec, s.stx_mtime.tv_nsec))
            .flatten(),
        atime: has(StatxFlags::ATIME)
            .then(|| time_of(s.stx_atime.tv_sec, s.stx_atime.tv_nsec))
            .flatten(),
        born: has(StatxFlags::BTIME)
            .then(|| time_of(s.stx_btime.tv_sec, s.stx_btime.tv_nsec))
            .flatten(),
        mount: has(StatxFlags::MNT_ID).then(|| MountId(s.stx_mnt_id.to_le_bytes().into())),
    }
}

pub(super) fn stat_at(dir: BorrowedFd<'_>, name: &OsStr) -> std::io::Result<EntryStat> {
    let s = rustix::fs::statx(dir, name, AtFlags::SYMLINK_NOFOLLOW, stat_flags())?;
    Ok(entry(&s))
}

pub(super) fn stat_fd(fd: BorrowedFd<'_>) -> std::io::Result<EntryStat> {
    let s = rustix::fs::statx(fd, "", AtFlags::EMPTY_PATH, stat_flags())?;
    Ok(entry(&s))
}

pub(super) fn mount_id(fd: BorrowedFd<'_>) -> std::io::Result<MountId> {
    let s = rustix::fs::statx(fd, "", AtFlags::EMPTY_PATH, StatxFlags::MNT_ID)?;
    if s.stx_mask & StatxFlags::MNT_ID.bits() != 0 {
        Ok(MountId(s.stx_mnt_id.to_le_bytes().into()))
    } else {
        // Before Linux 5.8: the device is all we can compare (a bind mount of the same
        // filesystem is then not seen; openat2's RESOLVE_NO_XDEV still refuses to cross it).
        let dev = rustix::fs::makedev(s.stx_dev_major, s.stx_dev_minor);
        let mut b = vec![0xff];
        b.extend_from_slice(&dev.to_le_bytes());
        Ok(MountId(b.into()))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    //! The per-component fallback (kernels without `openat2`), tested directly.
    use super::*;

    fn root_fd(p: &Path) -> OwnedFd {
        rustix::fs::open(p, DIR_FLAGS, Mode::empty()).unwrap()
    }

    #[test]
    fn fallback_walk_refuses_a_symlinked_component_and_opens_plain_dirs() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("a/b")).unwrap();
        std::os::unix::fs::symlink(d.path().join("a"), d.path().join("link")).unwrap();
        let fd = root_fd(d.path());
        let b = open_by_components(fd.as_fd(), Path::new("a/b")).unwrap();
        let want = std::fs::metadata(d.path().join("a/b")).unwrap();
        assert_eq!(
            stat_fd(b.as_fd()).unwrap().ino,
            std::os::unix::fs::MetadataExt::ino(&want)
        );
        let e = open_by_components(fd.as_fd(), Path::new("link/b")).unwrap_err();
        assert!(
            matches!(Errno::from_io_error(&e), Some(Errno::LOOP | Errno::NOTDIR)),
            "{e}"
        );
    }

    #[test]
    fn fallback_walk_refuses_to_cross_a_bind_mount() {
        let d = tempfile::tempdir().unwrap();
        let (src, mnt) = (d.path().join("src"), d.path().join("mnt"));
        std::fs::create_dir_all(src.join("inner")).unwrap();
        std::fs::create_dir(&mnt).unwrap();
        let ok = std::process::Command::new("mount")
            .arg("--bind")
            .arg(&src)
            .arg(&mnt)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            println!("SKIPPED: `mount --bind` is not permitted here");
            return;
        }
        let fd = root_fd(d.path());
        let r = open_by_components(fd.as_fd(), Path::new("mnt/inner"));
        let r2 = open_dir_beneath(fd.as_fd(), Path::new("mnt"));
        std::process::Command::new("umount")
            .arg("-l")
            .arg(&mnt)
            .status()
            .ok();
        let e = r.unwrap_err();
        assert_eq!(Errno::from_io_error(&e), Some(Errno::XDEV), "{e}");
        let e2 = r2.unwrap_err();
        assert_eq!(Errno::from_io_error(&e2), Some(Errno::XDEV), "{e2}");
    }
}
