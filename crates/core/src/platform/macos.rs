//! macOS implementations. Checked with `cargo check --target aarch64-apple-darwin`; not run here.

use std::ffi::{CStr, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use super::open_set::Collector;
use super::DefaultDirs;

/// Reads a `confstr` path value such as `_CS_DARWIN_USER_TEMP_DIR` (ends with `/`).
fn confstr_path(name: libc::c_int) -> Option<PathBuf> {
    let mut buf = vec![0u8; libc::PATH_MAX as usize];
    // SAFETY: buf is writable for buf.len() bytes; confstr writes at most that many, NUL included.
    let n = unsafe { libc::confstr(name, buf.as_mut_ptr().cast(), buf.len()) };
    if n == 0 || n > buf.len() {
        return None;
    }
    let s = CStr::from_bytes_until_nul(&buf).ok()?;
    Some(PathBuf::from(OsStr::from_bytes(s.to_bytes())))
}

pub(super) fn default_dirs() -> DefaultDirs {
    let darwin_temp = confstr_path(libc::_CS_DARWIN_USER_TEMP_DIR);
    // `X` is the sibling of `T`: /var/folders/<xx>/<hash>/{T,C,X}/.
    let clones = darwin_temp
        .as_deref()
        .and_then(std::path::Path::parent)
        .map(|d| d.join("X"));
    let temp = darwin_temp
        .or_else(|| std::env::var_os("TMPDIR").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    let home = directories::BaseDirs::new().map(|dirs| dirs.home_dir().to_path_buf());
    DefaultDirs {
        temp,
        cache: confstr_path(libc::_CS_DARWIN_USER_CACHE_DIR),
        library_caches: home.as_ref().map(|h| h.join("Library/Caches")),
        diagnostic_reports: home.map(|h| h.join("Library/Logs/DiagnosticReports")),
        code_sign_clones: clones,
    }
}

pub(super) fn application_dirs() -> Vec<PathBuf> {
    let mut dirs = vec![PathBuf::from("/Applications")];
    if let Some(home) = directories::BaseDirs::new().map(|d| d.home_dir().to_path_buf()) {
        dirs.push(home.join("Applications"));
    }
    dirs
}

/// A string value of `sysctlbyname(name)`.
fn sysctl_string(name: &CStr) -> Option<String> {
    let mut len: libc::size_t = 0;
    // SAFETY: a null buffer asks for the value's length only.
    let rc = unsafe {
        libc::sysctlbyname(
            name.as_ptr(),
            std::ptr::null_mut(),
            &mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    if rc != 0 || len == 0 {
        return None;
    }
    let mut buf = vec![0u8; len];
    // SAFETY: `buf` holds `len` bytes, the length the kernel gave.
    let rc = unsafe {
        libc::sysctlbyname(
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            &mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    if rc != 0 {
        return None;
    }
    buf.truncate(len);
    let text = CStr::from_bytes_until_nul(&buf).ok()?.to_str().ok()?;
    (!text.is_empty()).then(|| text.to_owned())
}

pub(super) fn os_release() -> super::OsRelease {
    super::OsRelease {
        name: "macOS".to_owned(),
        version: sysctl_string(c"kern.osproductversion"),
        kernel: sysctl_string(c"kern.osrelease"),
    }
}

pub(super) fn app_version_of_exe(exe: &std::path::Path) -> Option<String> {
    let contents = exe.parent()?.parent()?;
    if exe.parent()?.file_name()? != "MacOS" || contents.file_name()? != "Contents" {
        return None;
    }
    let info = plist::Value::from_file(contents.join("Info.plist")).ok()?;
    let dict = info.as_dictionary()?;
    let text = |k: &str| {
        dict.get(k)
            .and_then(plist::Value::as_string)
            .map(str::to_owned)
    };
    match (text("CFBundleShortVersionString"), text("CFBundleVersion")) {
        (Some(short), Some(build)) if build != short => Some(format!("{short} ({build})")),
        (Some(short), _) => Some(short),
        (None, build) => build,
    }
}

pub(super) fn bundle_id_of_exe(exe: &std::path::Path) -> Option<String> {
    let macos = exe.parent()?;
    if macos.file_name()? != "MacOS" {
        return None;
    }
    let contents = macos.parent()?;
    if contents.file_name()? != "Contents" {
        return None;
    }
    let info = plist::Value::from_file(contents.join("Info.plist")).ok()?;
    info.as_dictionary()?
        .get("CFBundleIdentifier")?
        .as_string()
        .map(str::to_owned)
}

/// `struct proc_fileinfo` of `<sys/proc_info.h>`.
#[repr(C)]
#[derive(Default)]
#[allow(dead_code)] // filled by the kernel; only some fields are read
struct ProcFileInfo {
    fi_openflags: u32,
    fi_status: u32,
    fi_offset: i64,
    fi_type: i32,
    fi_guardflags: u32,
}

/// `struct vnode_fdinfowithpath` of `<sys/proc_info.h>` (flavor `PROC_PIDFDVNODEPATHINFO`); the
/// `vnode_info` part is kept as bytes, only the path is read.
#[repr(C)]
#[allow(dead_code)] // filled by the kernel; only some fields are read
struct VnodeFdInfoWithPath {
    pfi: ProcFileInfo,
    vip_vi: [u8; std::mem::size_of::<libc::vnode_info>()],
    vip_path: [libc::c_char; libc::MAXPATHLEN as usize],
}

impl Default for VnodeFdInfoWithPath {
    fn default() -> Self {
        VnodeFdInfoWithPath {
            pfi: ProcFileInfo::default(),
            vip_vi: [0; std::mem::size_of::<libc::vnode_info>()],
            vip_path: [0; libc::MAXPATHLEN as usize],
        }
    }
}

impl VnodeFdInfoWithPath {
    /// True when the open vnode is a directory (`vi_stat.vst_mode` of the `vnode_info`).
    fn is_dir(&self) -> bool {
        let at = std::mem::offset_of!(libc::vnode_info, vi_stat)
            + std::mem::offset_of!(libc::vinfo_stat, vst_mode);
        let mode = u16::from_ne_bytes([self.vip_vi[at], self.vip_vi[at + 1]]);
        libc::mode_t::from(mode) & libc::S_IFMT == libc::S_IFDIR
    }
}

impl libproc::libproc::file_info::PIDFDInfo for VnodeFdInfoWithPath {
    fn flavor() -> libproc::libproc::file_info::PIDFDInfoFlavor {
        libproc::libproc::file_info::PIDFDInfoFlavor::VNodePathInfo
    }
}

/// `struct proc_regioninfo` of `<sys/proc_info.h>`.
#[repr(C)]
#[derive(Default)]
#[allow(dead_code)] // filled by the kernel; only some fields are read
struct ProcRegionInfo {
    pri_protection: u32,
    pri_max_protection: u32,
    pri_inheritance: u32,
    pri_flags: u32,
    pri_offset: u64,
    pri_behavior: u32,
    pri_user_wired_count: u32,
    pri_user_tag: u32,
    pri_pages_resident: u32,
    pri_pages_shared_now_private: u32,
    pri_pages_swapped_out: u32,
    pri_pages_dirtied: u32,
    pri_ref_count: u32,
    pri_shadow_depth: u32,
    pri_share_mode: u32,
    pri_private_pages_resident: u32,
    pri_shared_pages_resident: u32,
    pri_obj_id: u32,
    pri_depth: u32,
    pri_address: u64,
    pri_size: u64,
}

/// `struct proc_regionwithpathinfo` (flavor `PROC_PIDREGIONPATHINFO`).
#[repr(C)]
#[allow(dead_code)] // filled by the kernel; only some fields are read
struct ProcRegionWithPathInfo {
    prp_prinfo: ProcRegionInfo,
    prp_vip: libc::vnode_info_path,
}

/// `PROC_PIDREGIONPATHINFO` of `<sys/proc_info.h>` (not in `libc`).
const PROC_PIDREGIONPATHINFO: libc::c_int = 8;

/// The absolute path in a NUL-terminated C buffer, as bytes (`None` for an empty or relative one).
fn c_path(raw: &[libc::c_char]) -> Option<&[u8]> {
    // SAFETY: c_char and u8 have the same size and alignment; the slice stays borrowed.
    let bytes = unsafe { std::slice::from_raw_parts(raw.as_ptr().cast::<u8>(), raw.len()) };
    let s = CStr::from_bytes_until_nul(bytes).ok()?.to_bytes();
    (s.first() == Some(&b'/')).then_some(s)
}

/// Open vnodes (`PROC_PIDLISTFDS` + `PROC_PIDFDVNODEPATHINFO`), the working dir
/// (`PROC_PIDVNODEPATHINFO`) and file-backed regions (`PROC_PIDREGIONPATHINFO`) of every pid that
/// `proc_listallpids` returns, kept at or under `scope` (everything when `None`) within the bounds
/// of [`Collector`]. Pids we may not inspect (other users') are skipped and counted.
pub(super) fn open_files(scope: Option<&[PathBuf]>) -> super::OpenFiles {
    use libproc::libproc::bsd_info::BSDInfo;
    use libproc::libproc::file_info::{pidfdinfo, ListFDs, ProcFDType};
    use libproc::libproc::proc_pid::{listpidinfo, pidinfo};

    let mut out = super::OpenFiles::default();
    let Ok(pids) = libproc::processes::pids_by_type(libproc::processes::ProcFilter::All) else {
        return out;
    };
    let mut c = Collector::new(scope);
    for pid in pids {
        let Ok(ipid) = i32::try_from(pid) else {
            continue;
        };
        if ipid == 0 {
            continue;
        }
        let Ok(info) = pidinfo::<BSDInfo>(ipid, 0) else {
            out.skipped_pids += 1;
            continue;
        };
        c.begin(pid);
        if let Ok(fds) = listpidinfo::<ListFDs>(ipid, info.pbi_nfiles as usize) {
            for fd in fds {
                if !matches!(ProcFDType::from(fd.proc_fdtype), ProcFDType::VNode) {
                    continue;
                }
                if let Ok(v) = pidfdinfo::<VnodeFdInfoWithPath>(ipid, fd.proc_fd) {
                    // A directory held open is being listed, not used (see `other.rs`).
                    if v.is_dir() {
                        continue;
                    }
                    if let Some(p) = c_path(&v.vip_path) {
                        c.add(p);
                    }
                }
            }
        }
        // SAFETY: all-zero bytes are a valid proc_vnodepathinfo (integers and char arrays).
        let mut vpi: libc::proc_vnodepathinfo = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<libc::proc_vnodepathinfo>() as libc::c_int;
        // SAFETY: the buffer is a proc_vnodepathinfo of `size` bytes, as the flavor expects.
        let n = unsafe {
            libc::proc_pidinfo(
                ipid,
                libc::PROC_PIDVNODEPATHINFO,
                0,
                (&mut vpi as *mut libc::proc_vnodepathinfo).cast(),
                size,
            )
        };
        if n == size {
            if let Some(p) = c_path(vpi.pvi_cdir.vip_path.as_flattened()) {
                c.add(p);
            }
        }
        add_regions(&mut c, ipid);
    }
    super::OpenFiles {
        skipped_pids: out.skipped_pids,
        ..c.finish()
    }
}

/// Regions walked per process at most; a process with more (or a kernel that never advances) has
/// the rest of its regions taken as anywhere in the scope.
const REGIONS_MAX: usize = 1_000_000;

/// File-backed memory regions of `ipid` (mapped models, libraries), one entry per distinct path run.
fn add_regions(c: &mut Collector, ipid: i32) {
    let size = std::mem::size_of::<ProcRegionWithPathInfo>() as libc::c_int;
    let mut address: u64 = 0;
    let mut last: Vec<u8> = Vec::new();
    for _ in 0..REGIONS_MAX {
        // SAFETY: all-zero bytes are a valid ProcRegionWithPathInfo (integers and char arrays).
        let mut info: ProcRegionWithPathInfo = unsafe { std::mem::zeroed() };
        // SAFETY: the buffer is a proc_regionwithpathinfo of `size` bytes, as the flavor expects.
        let n = unsafe {
            libc::proc_pidinfo(
                ipid,
                PROC_PIDREGIONPATHINFO,
                address,
                (&mut info as *mut ProcRegionWithPathInfo).cast(),
                size,
            )
        };
        if n != size {
            return;
        }
        if let Some(p) = c_path(info.prp_vip.vip_path.as_flattened()) {
            if last != p {
                c.add(p);
                last.clear();
                last.extend_from_slice(p);
            }
        }
        let next = info
            .prp_prinfo
            .pri_address
            .saturating_add(info.prp_prinfo.pri_size);
        if next <= address {
            c.add_unknown(None);
            return;
        }
        address = next;
    }
    c.add_unknown(None);
}

/// `proc_pidinfo(PROC_PIDTASKINFO).pti_threadnum`.
pub(super) fn thread_count(pid: u32) -> Option<u32> {
    use libproc::libproc::proc_pid::pidinfo;
    use libproc::libproc::task_info::TaskInfo;

    let ipid = i32::try_from(pid).ok()?;
    let info = pidinfo::<TaskInfo>(ipid, 0).ok()?;
    u32::try_from(info.pti_threadnum).ok()
}

extern "C" {
    /// `<malloc/malloc.h>`: asks a zone (NULL: every zone) to return up to `goal` bytes of free
    /// memory (0: as much as it can) to the OS; returns the bytes released.
    fn malloc_zone_pressure_relief(zone: *mut libc::c_void, goal: libc::size_t) -> libc::size_t;
}

/// `malloc_zone_pressure_relief(NULL, 0)`: every malloc zone returns its free pages to the OS.
pub(super) fn release_free_memory() {
    // SAFETY: a NULL zone means all zones; the call only releases free memory.
    let released = unsafe { malloc_zone_pressure_relief(std::ptr::null_mut(), 0) };
    tracing::trace!(
        released_bytes = released,
        "returned free heap memory to the OS"
    );
}

pub(super) fn mount_points() -> Vec<PathBuf> {
    // SAFETY: a null buffer asks for the number of mounted file systems only.
    let n = unsafe { libc::getfsstat(std::ptr::null_mut(), 0, libc::MNT_NOWAIT) };
    let Ok(n) = usize::try_from(n) else {
        return Vec::new();
    };
    // Room for a few mounts made in between.
    let mut buf: Vec<libc::statfs> = Vec::with_capacity(n + 8);
    let bytes = buf.capacity() * std::mem::size_of::<libc::statfs>();
    let Ok(bytes) = libc::c_int::try_from(bytes) else {
        return Vec::new();
    };
    // SAFETY: `buf` has room for `bytes` bytes of `statfs` records.
    let got = unsafe { libc::getfsstat(buf.as_mut_ptr(), bytes, libc::MNT_NOWAIT) };
    let Ok(got) = usize::try_from(got) else {
        return Vec::new();
    };
    // SAFETY: getfsstat filled `got` records (at most the capacity it was given).
    unsafe { buf.set_len(got.min(buf.capacity())) };
    buf.iter()
        .map(|s| {
            // SAFETY: f_mntonname is a NUL-terminated C string inside the record.
            let c = unsafe { CStr::from_ptr(s.f_mntonname.as_ptr()) };
            PathBuf::from(OsStr::from_bytes(c.to_bytes()))
        })
        .collect()
}

/// `statfs(path)`: (size of the volume, bytes available to this user now). `statfs`, not
/// `statvfs`: macOS's `statvfs` counts blocks in 32 bits.
#[allow(clippy::unnecessary_cast)]
pub(super) fn statfs_space(path: &std::path::Path) -> std::io::Result<(u64, u64)> {
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let mut st = std::mem::MaybeUninit::<libc::statfs>::uninit();
    // SAFETY: `c` is a NUL-terminated path; `st` is writable for one `statfs`.
    if unsafe { libc::statfs(c.as_ptr(), st.as_mut_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: statfs returned 0, so it filled `st`.
    let st = unsafe { st.assume_init() };
    let bsize = st.f_bsize as u64;
    Ok((
        (st.f_blocks as u64).saturating_mul(bsize),
        (st.f_bavail as u64).saturating_mul(bsize),
    ))
}

/// The volume's capacity available for important usage (what Finder shows as available: free
/// blocks plus purgeable space), from `CFURLCopyResourcePropertyForKey` with
/// `kCFURLVolumeAvailableCapacityForImportantUsageKey` on a file URL of `path`. `None` when the
/// URL, the key or the number cannot be had (non-APFS volumes may lack it).
pub(super) fn important_usage_capacity(path: &std::path::Path) -> Option<u64> {
    use objc2_core_foundation::{
        kCFURLVolumeAvailableCapacityForImportantUsageKey, CFNumber, CFRetained, CFType, CFURL,
    };
    let bytes = path.as_os_str().as_bytes();
    let len = isize::try_from(bytes.len()).ok()?;
    // SAFETY: `bytes` is readable for `len` bytes; CoreFoundation copies them.
    let url = unsafe { CFURL::from_file_system_representation(None, bytes.as_ptr(), len, true) }?;
    // SAFETY: a constant CoreFoundation exports; read once.
    let key = unsafe { kCFURLVolumeAvailableCapacityForImportantUsageKey }?;
    let mut value: *mut CFType = std::ptr::null_mut();
    // SAFETY: `value` is a valid out pointer for one CFTypeRef; a null error pointer asks for no
    // CFError.
    let ok = unsafe {
        url.resource_property_for_key(
            Some(key),
            (&mut value as *mut *mut CFType).cast(),
            std::ptr::null_mut(),
        )
    };
    let value = std::ptr::NonNull::new(value)?;
    // SAFETY: a Copy function returned a +1 reference, released when `value` drops.
    let value: CFRetained<CFType> = unsafe { CFRetained::from_raw(value) };
    if !ok {
        return None;
    }
    let n = value.downcast_ref::<CFNumber>()?.as_i64()?;
    u64::try_from(n).ok()
}
