//! The `getattrlistbulk` parser against buffers laid out byte for byte as `<sys/attr.h>` documents,
//! and against the Linux listing of a real tree laid out as such a buffer: whichever listing runs,
//! the scanner sees the same `lstat` of every entry.

#![allow(
    clippy::unwrap_used,
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap
)]

use super::*;
use std::collections::BTreeMap;
use std::ffi::{CString, OsStr};
use std::fs::Metadata;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::platform::{open_dir_path, scan_stat_at, Listing};

const EACCES: u32 = 13;

fn ne32(v: u32) -> [u8; 4] {
    v.to_ne_bytes()
}

/// One entry laid out as the kernel packs it: its length, `returned`, `ATTR_CMN_ERROR` when
/// `error` is given, the name's `attrreference_t`, the fixed fields `fixed` (already in bit
/// order), then the name, NUL-terminated and padded to 4 bytes; the entry's length padded to 8.
fn lay_out(returned: AttrSet, error: Option<u32>, name: &[u8], fixed: &[u8]) -> Vec<u8> {
    let mut e = vec![0u8; 4];
    for g in [
        returned.common,
        returned.vol,
        returned.dir,
        returned.file,
        returned.fork,
    ] {
        e.extend(ne32(g));
    }
    if let Some(err) = error {
        e.extend(ne32(err));
    }
    let name_ref = e.len();
    e.extend([0u8; 8]);
    e.extend(fixed);
    let name_at = e.len();
    e.extend(name);
    e.push(0);
    while e.len() % 4 != 0 {
        e.push(0);
    }
    while e.len() % 8 != 0 {
        e.push(0);
    }
    let offset = (name_at - name_ref) as i32;
    e[name_ref..name_ref + 4].copy_from_slice(&offset.to_ne_bytes());
    e[name_ref + 4..name_ref + 8].copy_from_slice(&ne32(name.len() as u32 + 1));
    let len = e.len() as u32;
    e[..4].copy_from_slice(&ne32(len));
    e
}

/// A timespec's 16 bytes.
fn ts(secs: i64, nanos: i64) -> Vec<u8> {
    let mut b = secs.to_ne_bytes().to_vec();
    b.extend(nanos.to_ne_bytes());
    b
}

fn ts_of(t: SystemTime) -> Vec<u8> {
    let d = t.duration_since(SystemTime::UNIX_EPOCH).unwrap();
    ts(d.as_secs() as i64, i64::from(d.subsec_nanos()))
}

/// The entry a volume that gives everything returns for the `lstat` `md` (Linux metadata standing
/// in for the vnode's attributes): dir attributes for a dir, file attributes for anything else,
/// the private size and clone id for regular files only.
fn entry_of(name: &[u8], md: &Metadata) -> Vec<u8> {
    assert!(
        md.dev() <= i32::MAX as u64,
        "dev {} does not fit dev_t",
        md.dev()
    );
    let obj = if md.is_dir() {
        VDIR
    } else if md.is_symlink() {
        VLNK
    } else if md.is_file() {
        VREG
    } else {
        7 // VFIFO
    };
    let mut returned = AttrSet {
        common: ATTR_CMN_RETURNED_ATTRS
            | ATTR_CMN_NAME
            | ATTR_CMN_DEVID
            | ATTR_CMN_OBJTYPE
            | ATTR_CMN_MODTIME
            | ATTR_CMN_FILEID,
        ..AttrSet::default()
    };
    let mut fixed = Vec::new();
    fixed.extend((md.dev() as i32).to_ne_bytes());
    fixed.extend(ne32(obj));
    if let Ok(born) = md.created() {
        returned.common |= ATTR_CMN_CRTIME;
        fixed.extend(ts_of(born));
    }
    fixed.extend(ts_of(md.modified().unwrap()));
    fixed.extend(md.ino().to_ne_bytes());
    let alloc = (md.blocks() * 512).to_ne_bytes();
    if md.is_dir() {
        returned.dir =
            ATTR_DIR_LINKCOUNT | ATTR_DIR_MOUNTSTATUS | ATTR_DIR_ALLOCSIZE | ATTR_DIR_DATALENGTH;
        fixed.extend(ne32(md.nlink() as u32));
        fixed.extend(ne32(0));
        fixed.extend(alloc);
        fixed.extend(md.size().to_ne_bytes());
    } else {
        returned.file = ATTR_FILE_LINKCOUNT | ATTR_FILE_ALLOCSIZE | ATTR_FILE_DATALENGTH;
        fixed.extend(ne32(md.nlink() as u32));
        fixed.extend(alloc);
        fixed.extend(md.size().to_ne_bytes());
    }
    if md.is_file() {
        returned.fork = ATTR_CMNEXT_PRIVATESIZE | ATTR_CMNEXT_CLONEID;
        fixed.extend(alloc);
        fixed.extend(md.ino().to_ne_bytes());
    }
    lay_out(returned, None, name, &fixed)
}

/// What the kernel returns for an entry it could not read: the returned set, the error, the name.
fn error_entry(name: &[u8], errno: u32) -> Vec<u8> {
    let returned = AttrSet {
        common: ATTR_CMN_RETURNED_ATTRS | ATTR_CMN_ERROR | ATTR_CMN_NAME,
        ..AttrSet::default()
    };
    lay_out(returned, Some(errno), name, &[])
}

fn all(buf: &[u8], count: usize) -> Vec<Result<BulkEntry<'_>, AttrError>> {
    entries(buf, count).collect()
}

#[test]
fn a_hand_laid_file_entry_reads_field_by_field() {
    // Written out by hand from <sys/attr.h>, offsets from the entry's start.
    let common = ATTR_CMN_RETURNED_ATTRS
        | ATTR_CMN_NAME
        | ATTR_CMN_DEVID
        | ATTR_CMN_OBJTYPE
        | ATTR_CMN_CRTIME
        | ATTR_CMN_MODTIME
        | ATTR_CMN_FILEID;
    let file = ATTR_FILE_LINKCOUNT | ATTR_FILE_ALLOCSIZE | ATTR_FILE_DATALENGTH;
    let fork = ATTR_CMNEXT_PRIVATESIZE | ATTR_CMNEXT_CLONEID;
    let mut b = Vec::new();
    b.extend(ne32(136)); //  0: length
    b.extend(ne32(common)); //  4: returned.commonattr
    b.extend(ne32(0)); //  8: volattr
    b.extend(ne32(0)); // 12: dirattr
    b.extend(ne32(file)); // 16: fileattr
    b.extend(ne32(fork)); // 20: forkattr (extended common)
    b.extend(108i32.to_ne_bytes()); // 24: name: offset from here (24 + 108 = 132)
    b.extend(ne32(2)); // 28: name length with NUL
    b.extend(0x0100_0004i32.to_ne_bytes()); // 32: dev
    b.extend(ne32(VREG)); // 36: obj type
    b.extend(ts(1_700_000_000, 5)); // 40: crtime
    b.extend(ts(1_700_000_100, 999_999_999)); // 56: modtime
    b.extend(4242u64.to_ne_bytes()); // 72: file id
    b.extend(ne32(2)); // 80: link count
    b.extend(8192i64.to_ne_bytes()); // 84: alloc size (4-byte aligned only)
    b.extend(5000i64.to_ne_bytes()); // 92: data length
    b.extend(4096i64.to_ne_bytes()); // 100: private size
    b.extend(77u64.to_ne_bytes()); // 108: clone id
    b.extend([0u8; 16]); // 116: (padding a volume may leave)
    b.extend(b"a\0\0\0"); // 132: name
    assert_eq!(b.len(), 136);
    let got = all(&b, 1);
    let e = got[0].clone().unwrap();
    assert_eq!(e.name.to_bytes(), b"a");
    assert_eq!(e.error, 0);
    assert_eq!(e.dev, Some(0x0100_0004));
    assert_eq!(e.obj_type, Some(VREG));
    assert_eq!(
        e.created,
        Some(Timespec {
            secs: 1_700_000_000,
            nanos: 5
        })
    );
    assert_eq!(e.file_id, Some(4242));
    assert_eq!(e.link_count, Some(2));
    assert_eq!(e.alloc_bytes, Some(8192));
    assert_eq!(e.data_bytes, Some(5000));
    assert_eq!(e.private_bytes, Some(4096));
    assert_eq!(e.clone_id, Some(77));
    assert_eq!(e.mount_status, None);
    let st = e.scan_stat().unwrap();
    let epoch = SystemTime::UNIX_EPOCH;
    assert_eq!(
        st,
        ScanStat {
            dev: 0x0100_0004,
            ino: 4242,
            nlink: 2,
            blocks: 16,
            size: 5000,
            kind: ScanKind::File,
            mtime: Some(epoch + Duration::new(1_700_000_100, 999_999_999)),
            born: Some(epoch + Duration::new(1_700_000_000, 5)),
            private_bytes: Some(4096),
        }
    );
    // The laid-out twin of the same entry reads the same (the builder the other tests use).
    let mut fixed = Vec::new();
    fixed.extend(0x0100_0004i32.to_ne_bytes());
    fixed.extend(ne32(VREG));
    fixed.extend(ts(1_700_000_000, 5));
    fixed.extend(ts(1_700_000_100, 999_999_999));
    fixed.extend(4242u64.to_ne_bytes());
    fixed.extend(ne32(2));
    fixed.extend(8192i64.to_ne_bytes());
    fixed.extend(5000i64.to_ne_bytes());
    fixed.extend(4096i64.to_ne_bytes());
    fixed.extend(77u64.to_ne_bytes());
    let returned = AttrSet {
        common,
        vol: 0,
        dir: 0,
        file,
        fork,
    };
    let twin = lay_out(returned, None, b"a", &fixed);
    assert_eq!(all(&twin, 1)[0].clone().unwrap(), e);
}

#[test]
fn an_entry_with_an_error_keeps_its_name_and_its_neighbours() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("f"), b"x").unwrap();
    let md = std::fs::symlink_metadata(d.path().join("f")).unwrap();
    let mut b = entry_of(b"before", &md);
    b.extend(error_entry(b"unreadable", EACCES));
    b.extend(entry_of(b"after", &md));
    let got: Vec<BulkEntry<'_>> = all(&b, 3).into_iter().map(Result::unwrap).collect();
    let names: Vec<&[u8]> = got.iter().map(|e| e.name.to_bytes()).collect();
    assert_eq!(names, [&b"before"[..], b"unreadable", b"after"]);
    assert_eq!(got[1].error, EACCES);
    assert_eq!((got[1].obj_type, got[1].file_id), (None, None));
    // No stat from an entry in error: the listing's caller `lstat`s it and reports the real error.
    assert_eq!(got[1].scan_stat(), None);
    // The builder lists a file's private size as its allocated bytes.
    let want = ScanStat {
        private_bytes: Some(md.blocks() * 512),
        ..ScanStat::of(&md)
    };
    assert_eq!(got[0].scan_stat(), Some(want));
    assert_eq!(got[2].scan_stat(), Some(want));
}

#[test]
fn names_of_255_bytes_and_non_utf8_names_come_back_byte_for_byte() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("f"), b"x").unwrap();
    let md = std::fs::symlink_metadata(d.path().join("f")).unwrap();
    let long = vec![b'x'; 255];
    let odd: &[u8] = b"caf\xe9-\xff\xfe-\x80";
    let three: &[u8] = b"abc"; // name + NUL fills 4 bytes exactly: no padding
    let mut b = Vec::new();
    for n in [&long[..], odd, three] {
        b.extend(entry_of(n, &md));
    }
    let got: Vec<Vec<u8>> = all(&b, 3)
        .into_iter()
        .map(|e| e.unwrap().name.to_bytes().to_vec())
        .collect();
    assert_eq!(got, [long, odd.to_vec(), three.to_vec()]);
}

#[test]
fn a_buffer_ending_mid_entry_yields_the_whole_entries_then_one_error() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("f"), b"x").unwrap();
    let md = std::fs::symlink_metadata(d.path().join("f")).unwrap();
    let first = entry_of(b"first", &md);
    let second = entry_of(b"second-with-a-longer-name", &md);
    let mut b = first.clone();
    b.extend(&second);
    // Cut at every byte of the second entry: inside its length, its returned set, its fixed
    // fields, its name.
    for cut in first.len()..b.len() {
        let got = all(&b[..cut], 2);
        assert_eq!(got.len(), 2, "cut at {cut}");
        assert_eq!(got[0].clone().unwrap().name.to_bytes(), b"first");
        assert_eq!(
            got[1],
            Err(AttrError::Truncated {
                at: first.len(),
                len: cut
            }),
            "cut at {cut}"
        );
    }
    // More entries promised than the buffer holds: the same error, then nothing.
    let mut it = entries(&first, 5);
    assert!(it.next().unwrap().is_ok());
    assert!(matches!(it.next(), Some(Err(AttrError::Truncated { .. }))));
    assert!(it.next().is_none());
    // A length that would not even hold itself.
    let mut zero = first.clone();
    zero[..4].copy_from_slice(&ne32(0));
    assert!(matches!(
        all(&zero, 1)[0],
        Err(AttrError::Truncated { at: 0, .. })
    ));
}

#[test]
fn a_name_outside_its_entry_or_without_nul_is_refused() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("f"), b"x").unwrap();
    let md = std::fs::symlink_metadata(d.path().join("f")).unwrap();
    let good = entry_of(b"name", &md);
    // The name reference is at byte 24 (length 4, returned set 20).
    let mut past = good.clone();
    past[24..28].copy_from_slice(&4096i32.to_ne_bytes());
    assert_eq!(all(&past, 1)[0], Err(AttrError::BadName { at: 0 }));
    let mut before = good.clone();
    before[24..28].copy_from_slice(&(-100i32).to_ne_bytes());
    assert_eq!(all(&before, 1)[0], Err(AttrError::BadName { at: 0 }));
    let mut no_nul = good.clone();
    let len = u32::from_ne_bytes(no_nul[28..32].try_into().unwrap());
    no_nul[28..32].copy_from_slice(&ne32(len - 1)); // the length now stops before the NUL
    assert_eq!(all(&no_nul, 1)[0], Err(AttrError::BadName { at: 0 }));
    let mut unnamed = good;
    unnamed[4..8].copy_from_slice(&ne32(ATTR_CMN_RETURNED_ATTRS));
    assert_eq!(all(&unnamed, 1)[0], Err(AttrError::BadName { at: 0 }));
}

#[test]
fn an_attribute_of_unknown_size_is_refused_not_misread() {
    let returned = AttrSet {
        common: ATTR_CMN_RETURNED_ATTRS | ATTR_CMN_NAME | 0x0000_0004, // ATTR_CMN_FSID
        ..AttrSet::default()
    };
    let b = lay_out(returned, None, b"x", &[0u8; 8]);
    assert_eq!(all(&b, 1)[0], Err(AttrError::Unknown { at: 0, returned }));
}

#[test]
fn dirs_files_and_symlinks_map_to_their_kinds_and_a_mount_point_is_left_to_lstat() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::create_dir(p.join("dir")).unwrap();
    std::fs::write(p.join("file"), vec![1u8; 10_000]).unwrap();
    std::os::unix::fs::symlink("file", p.join("link")).unwrap();
    let md = |n: &str| std::fs::symlink_metadata(p.join(n)).unwrap();
    let mut b = Vec::new();
    for n in ["dir", "file", "link"] {
        b.extend(entry_of(n.as_bytes(), &md(n)));
    }
    let kinds: Vec<ScanKind> = all(&b, 3)
        .into_iter()
        .map(|e| e.unwrap().scan_stat().unwrap().kind)
        .collect();
    assert_eq!(kinds, [ScanKind::Dir, ScanKind::File, ScanKind::Symlink]);
    // Only regular files carry the extended attributes here; a symlink's are left out.
    let link = all(&b, 3)[2].clone().unwrap();
    assert_eq!((link.private_bytes, link.clone_id), (None, None));
    assert_eq!(link.scan_stat().unwrap().size, md("link").size());

    // The same dir with a file system mounted on it: its `lstat` must come from `fstatat` (the
    // mounted root, another device), so no stat here.
    let mut mounted = entry_of(b"dir", &md("dir"));
    // After the length, the returned set, the name's reference, dev, type, [crtime], mtime, id
    // and the link count.
    let crtime = if md("dir").created().is_ok() { 16 } else { 0 };
    let status_at = 4 + 20 + 8 + 4 + 4 + crtime + 16 + 8 + 4;
    assert_eq!(&mounted[status_at..status_at + 4], &ne32(0));
    mounted[status_at..status_at + 4].copy_from_slice(&ne32(DIR_MNTSTATUS_MNTPOINT));
    let e = all(&mounted, 1)[0].clone().unwrap();
    assert_eq!(e.mount_status, Some(DIR_MNTSTATUS_MNTPOINT));
    assert_eq!(e.scan_stat(), None);
}

#[test]
fn a_volume_that_leaves_a_needed_attribute_out_yields_no_stat() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join("dir")).unwrap();
    let md = std::fs::symlink_metadata(d.path().join("dir")).unwrap();
    // An older volume without ATTR_DIR_ALLOCSIZE / ATTR_DIR_DATALENGTH: dev, type, mtime, id, links.
    let returned = AttrSet {
        common: ATTR_CMN_RETURNED_ATTRS
            | ATTR_CMN_NAME
            | ATTR_CMN_DEVID
            | ATTR_CMN_OBJTYPE
            | ATTR_CMN_MODTIME
            | ATTR_CMN_FILEID,
        dir: ATTR_DIR_LINKCOUNT | ATTR_DIR_MOUNTSTATUS,
        ..AttrSet::default()
    };
    let mut fixed = Vec::new();
    fixed.extend((md.dev() as i32).to_ne_bytes());
    fixed.extend(ne32(VDIR));
    fixed.extend(ts_of(md.modified().unwrap()));
    fixed.extend(md.ino().to_ne_bytes());
    fixed.extend(ne32(2));
    fixed.extend(ne32(0));
    let b = lay_out(returned, None, b"dir", &fixed);
    let e = all(&b, 1)[0].clone().unwrap();
    assert_eq!(
        (e.file_id, e.alloc_bytes, e.created),
        (Some(md.ino()), None, None)
    );
    assert_eq!(e.scan_stat(), None);
}

/// Every entry of `dir` as the Linux listing sees it: names from `getdents64`, `lstat`s from
/// `statx` (the scanner's own path), in listing order.
fn linux_listing(dir: &Path) -> Vec<(Vec<u8>, ScanStat)> {
    let mut l = Listing::new(open_dir_path(dir).unwrap()).unwrap();
    let mut out = Vec::new();
    while l
        .read_some(|fd, name| {
            let st = scan_stat_at(fd.as_fd(), name).unwrap();
            out.push((name.to_bytes().to_vec(), st));
        })
        .unwrap()
    {}
    out
}

#[test]
fn the_bulk_buffer_of_a_real_tree_gives_the_linux_listing_s_stats_and_du_s_totals() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(p.join("empty"), b"").unwrap();
    std::fs::write(p.join("small"), b"hello").unwrap();
    std::fs::write(p.join("big"), vec![7u8; 300_000]).unwrap();
    let sparse = std::fs::File::create(p.join("sparse")).unwrap();
    sparse.set_len(10 << 20).unwrap();
    std::fs::hard_link(p.join("big"), p.join("big-link")).unwrap();
    std::fs::create_dir(p.join("sub")).unwrap();
    std::fs::create_dir(p.join("sub-full")).unwrap();
    std::fs::write(p.join("sub-full/inside"), vec![1u8; 5000]).unwrap();
    std::os::unix::fs::symlink("big", p.join("link")).unwrap();
    std::os::unix::fs::symlink("/nowhere/at/all", p.join("dangling")).unwrap();
    std::fs::write(p.join(OsStr::from_bytes(b"odd-\xff\xfe")), b"x").unwrap();
    std::fs::write(p.join("n".repeat(255)), b"y").unwrap();
    let fifo = CString::new(p.join("fifo").as_os_str().as_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);

    // The readdir path (`getdents64` + `statx`), and the same entries as `getattrlistbulk` would
    // return them, in the same order, split over two calls' buffers.
    let linux = linux_listing(p);
    assert_eq!(linux.len(), 12);
    let bufs: Vec<Vec<u8>> = linux
        .chunks(7)
        .map(|chunk| {
            chunk
                .iter()
                .flat_map(|(n, _)| {
                    entry_of(
                        n,
                        &std::fs::symlink_metadata(p.join(OsStr::from_bytes(n))).unwrap(),
                    )
                })
                .collect()
        })
        .collect();
    let mut bulk = Vec::new();
    for (buf, chunk) in bufs.iter().zip(linux.chunks(7)) {
        for e in entries(buf, chunk.len()) {
            let e = e.unwrap();
            bulk.push((e.name.to_bytes().to_vec(), e.scan_stat().unwrap()));
        }
    }
    // The same stats, and a regular file's private size (the builder's: its allocated bytes),
    // which the Linux listing leaves to a call by path.
    let linux_as_listed: Vec<_> = linux
        .iter()
        .map(|(n, st)| {
            let private = (st.kind == ScanKind::File).then_some(st.blocks * 512);
            (
                n.clone(),
                ScanStat {
                    private_bytes: private,
                    ..*st
                },
            )
        })
        .collect();
    assert_eq!(bulk, linux_as_listed);

    // And the totals a scan sums from them (hard links once, symlinks not followed, the dir's own
    // blocks) are du's.
    let dir = std::fs::symlink_metadata(p).unwrap();
    let mut seen = std::collections::BTreeSet::new();
    let (mut allocated, mut apparent) = (dir.blocks() * 512, dir.size());
    let by_name: BTreeMap<_, _> = bulk.iter().cloned().collect();
    for st in by_name.values() {
        if st.kind != ScanKind::Dir && st.nlink > 1 && !seen.insert(st.ino) {
            continue;
        }
        allocated += st.blocks * 512;
        apparent += st.size;
    }
    let inside = std::fs::symlink_metadata(p.join("sub-full/inside")).unwrap();
    allocated += inside.blocks() * 512;
    apparent += inside.size();
    assert_eq!(allocated, cachewatch_testkit::du::allocated(&[p]));
    assert_eq!(apparent, cachewatch_testkit::du::apparent(&[p]));
}
