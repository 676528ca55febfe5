//! The careful write, on real trees; the attacks plant their links as `nobody` (uid 65534) through
//! `setpriv` where the attack needs another user (skipped, with the reason printed, where that
//! cannot be done: not root, or no usable `setpriv`).

#![allow(clippy::unwrap_used)]

use std::fs;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::Path;
use std::process::Command;

use super::*;

const NOBODY: u32 = 65534;

fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Runs `argv` as nobody; `false` (with the reason printed) when that cannot be done here.
fn as_nobody(argv: &[&str]) -> bool {
    if euid() != 0 {
        println!("skipped: not root, so no other user can plant a link");
        return false;
    }
    let status = Command::new("setpriv")
        .args([
            &format!("--reuid={NOBODY}"),
            &format!("--regid={NOBODY}"),
            "--clear-groups",
        ])
        .args(argv)
        .status();
    match status {
        Ok(s) if s.success() => true,
        other => {
            println!("skipped: setpriv cannot run {argv:?} as nobody: {other:?}");
            false
        }
    }
}

/// A sticky world-writable dir (as `/tmp`) inside `base`.
fn sticky_dir(base: &Path) -> std::path::PathBuf {
    let d = base.join("shared");
    fs::create_dir(&d).unwrap();
    fs::set_permissions(&d, fs::Permissions::from_mode(0o1777)).unwrap();
    // The temp dir itself is 0700: let nobody reach the shared dir.
    fs::set_permissions(base, fs::Permissions::from_mode(0o755)).unwrap();
    d
}

/// A victim file root owns, in a dir only root can write.
fn victim(base: &Path) -> std::path::PathBuf {
    let d = base.join("root-only");
    fs::create_dir(&d).unwrap();
    fs::set_permissions(&d, fs::Permissions::from_mode(0o755)).unwrap();
    let v = d.join("victim");
    fs::write(&v, "precious\n").unwrap();
    fs::set_permissions(&v, fs::Permissions::from_mode(0o644)).unwrap();
    v
}

fn names(dir: &Path) -> Vec<String> {
    let mut n: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    n.sort();
    n
}

fn is_link(p: &Path) -> bool {
    fs::symlink_metadata(p).unwrap().file_type().is_symlink()
}

#[test]
fn an_atomic_write_replaces_the_file_and_leaves_no_temporary() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cachewatch.prom");
    fs::write(&path, "old\n").unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
    write_atomically(&path, "new\n").unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), "new\n");
    assert_eq!(
        fs::metadata(&path).unwrap().permissions().mode() & 0o7777,
        0o640
    );
    assert_eq!(names(dir.path()), ["cachewatch.prom"]);
    // A new file, by a path going up with `..`.
    let fresh = dir.path().join("sub/../fresh.prom");
    fs::create_dir(dir.path().join("sub")).unwrap();
    write_atomically(&fresh, "x\n").unwrap();
    assert_eq!(
        fs::read_to_string(dir.path().join("fresh.prom")).unwrap(),
        "x\n"
    );
}

#[test]
fn a_missing_directory_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no/such/dir/cachewatch.prom");
    let err = write_atomically(&path, "x\n").unwrap_err();
    assert!(matches!(err, WriteError::Io { .. }), "{err:?}");
    assert!(
        err.to_string().contains("no/such/dir/cachewatch.prom"),
        "{err}"
    );
    assert!(matches!(
        write_atomically(Path::new("/"), "x").unwrap_err(),
        WriteError::NoFileName { .. }
    ));
}

/// A dotfiles-managed config: our own link, in a dir only we can write, is written through (the
/// link stays, its target gets the text and keeps its mode); so is a link among the dirs.
#[test]
fn our_own_symlink_in_a_private_dir_is_written_through_and_keeps_its_mode() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("dotfiles/config.toml");
    fs::create_dir_all(real.parent().unwrap()).unwrap();
    fs::write(&real, "old\n").unwrap();
    fs::set_permissions(&real, fs::Permissions::from_mode(0o600)).unwrap();
    let link = dir.path().join("config.toml");
    std::os::unix::fs::symlink("dotfiles/config.toml", &link).unwrap();
    write_atomically(&link, "new\n").unwrap();
    assert!(is_link(&link));
    assert_eq!(fs::read_to_string(&real).unwrap(), "new\n");
    let mode = fs::metadata(&real).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o600);
    assert_eq!(names(real.parent().unwrap()), ["config.toml"]);
    // Through a linked dir (as macOS's /tmp -> private/tmp).
    std::os::unix::fs::symlink("dotfiles", dir.path().join("dots")).unwrap();
    write_atomically(&dir.path().join("dots/config.toml"), "third\n").unwrap();
    assert_eq!(fs::read_to_string(&real).unwrap(), "third\n");
}

/// The temporary's name is predictable: a link planted there is neither written through nor
/// removed (it is not ours); the write takes the next free name.
#[test]
fn a_link_planted_at_the_temporary_name_is_not_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    fs::write(&victim, "precious\n").unwrap();
    let path = dir.path().join("cachewatch.prom");
    let tmp = dir
        .path()
        .join(format!(".cachewatch.prom.{}.0.tmp", std::process::id()));
    std::os::unix::fs::symlink(&victim, &tmp).unwrap();
    write_atomically(&path, "metrics\n").unwrap();
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");
    assert_eq!(fs::read_to_string(&path).unwrap(), "metrics\n");
    assert!(!is_link(&path));
    assert!(is_link(&tmp), "the planted link is left as it was");
    assert_eq!(names(dir.path()).len(), 3, "{:?}", names(dir.path()));
}

/// The attack: nobody plants `cw.prom -> /root/victim` in a sticky world-writable dir;
/// root's write followed it (canonicalize) and overwrote the victim. Now refused, naming the rule.
#[test]
fn a_link_another_user_planted_in_a_sticky_dir_is_refused_and_the_victim_kept() {
    let base = tempfile::tempdir().unwrap();
    let shared = sticky_dir(base.path());
    let victim = victim(base.path());
    let link = shared.join("cw.prom");
    if !as_nobody(&["ln", "-s", victim.to_str().unwrap(), link.to_str().unwrap()]) {
        return;
    }
    assert_eq!(fs::symlink_metadata(&link).unwrap().uid(), NOBODY);
    let err = write_atomically(&link, "metrics\n").unwrap_err();
    match &err {
        WriteError::ForeignSymlink { owner, us, .. } => {
            assert_eq!((*owner, *us), (NOBODY, 0));
        }
        other => panic!("expected ForeignSymlink, got {other:?}"),
    }
    let msg = err.to_string();
    assert!(
        msg.contains("owned by uid 65534") && msg.contains("cw.prom"),
        "{msg}"
    );
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");
    assert_eq!(
        fs::metadata(&victim).unwrap().permissions().mode() & 0o777,
        0o644
    );
    assert!(is_link(&link), "the link is left");
    assert_eq!(names(&shared), ["cw.prom"], "no temporary left");
}

/// Even our own link is refused in a dir others can write: it could be swapped between the look
/// and the follow.
#[test]
fn our_own_link_in_a_world_writable_dir_is_refused() {
    let base = tempfile::tempdir().unwrap();
    let shared = sticky_dir(base.path());
    let target = base.path().join("target.prom");
    fs::write(&target, "old\n").unwrap();
    let link = shared.join("cw.prom");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let err = write_atomically(&link, "new\n").unwrap_err();
    match &err {
        WriteError::SymlinkInSharedDir { dir_mode, .. } => assert_eq!(*dir_mode, 0o1777),
        other => panic!("expected SymlinkInSharedDir, got {other:?}"),
    }
    assert_eq!(fs::read_to_string(&target).unwrap(), "old\n");
    // The same link as a dir on the way.
    let dirlink = shared.join("d");
    std::os::unix::fs::symlink(base.path(), &dirlink).unwrap();
    assert!(matches!(
        write_atomically(&dirlink.join("target.prom"), "new\n").unwrap_err(),
        WriteError::SymlinkInSharedDir { .. }
    ));
    assert_eq!(fs::read_to_string(&target).unwrap(), "old\n");
}

/// A dir on the way that another user linked elsewhere (`shared/d -> /root-only`) is refused.
#[test]
fn a_dir_link_another_user_planted_is_refused() {
    let base = tempfile::tempdir().unwrap();
    let shared = sticky_dir(base.path());
    let victim = victim(base.path());
    let dirlink = shared.join("textfile");
    if !as_nobody(&[
        "ln",
        "-s",
        victim.parent().unwrap().to_str().unwrap(),
        dirlink.to_str().unwrap(),
    ]) {
        return;
    }
    let err = write_atomically(&dirlink.join("victim"), "metrics\n").unwrap_err();
    assert!(matches!(err, WriteError::ForeignSymlink { .. }), "{err:?}");
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");
}

/// A dangling link as the config was replaced by a regular file. Our own dangling link is now
/// refused (nothing created at its target, the link kept); one nobody planted too.
#[test]
fn a_dangling_symlink_is_not_replaced_nor_its_target_created() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("config.toml");
    let target = dir.path().join("nowhere/config.toml");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let err = write_atomically(&link, "x = 1\n").unwrap_err();
    assert!(matches!(err, WriteError::DanglingSymlink { .. }), "{err:?}");
    assert!(err.to_string().contains("does not exist"), "{err}");
    assert!(is_link(&link));
    assert!(!target.exists());

    let base = tempfile::tempdir().unwrap();
    let shared = sticky_dir(base.path());
    let planted = shared.join("config.toml");
    let aim = base.path().join("created-by-root");
    if !as_nobody(&["ln", "-s", aim.to_str().unwrap(), planted.to_str().unwrap()]) {
        return;
    }
    let err = write_atomically(&planted, "x = 1\n").unwrap_err();
    assert!(matches!(err, WriteError::ForeignSymlink { .. }), "{err:?}");
    assert!(is_link(&planted));
    assert!(!aim.exists());
}

#[test]
fn a_fifo_is_not_a_regular_file_and_is_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("cw.prom");
    let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let err = write_atomically(&fifo, "x\n").unwrap_err();
    match &err {
        WriteError::NotRegular { kind, .. } => assert_eq!(*kind, "FIFO"),
        other => panic!("expected NotRegular, got {other:?}"),
    }
    assert!(
        err.to_string().contains("for standard output, `-`"),
        "{err}"
    );
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(
        &fs::symlink_metadata(&fifo).unwrap().file_type()
    ));
    // A dir too, and through our own link.
    let link = dir.path().join("link");
    std::os::unix::fs::symlink("cw.prom", &link).unwrap();
    assert!(matches!(
        write_atomically(&link, "x\n").unwrap_err(),
        WriteError::NotRegular { kind: "FIFO", .. }
    ));
    fs::create_dir(dir.path().join("d")).unwrap();
    assert!(matches!(
        write_atomically(&dir.path().join("d"), "x\n").unwrap_err(),
        WriteError::NotRegular {
            kind: "directory",
            ..
        }
    ));
}

/// Root rewriting a textfile another user owns made it root's: it now keeps its owner, group and
/// mode.
#[test]
fn root_rewriting_another_users_file_keeps_its_owner_and_mode() {
    if euid() != 0 {
        println!("skipped: not root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cw.prom");
    fs::write(&path, "old\n").unwrap();
    rustix::fs::chown(
        &path,
        Some(rustix::fs::Uid::from_raw(NOBODY)),
        Some(rustix::fs::Gid::from_raw(NOBODY)),
    )
    .unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o604)).unwrap();
    write_atomically(&path, "new\n").unwrap();
    let md = fs::metadata(&path).unwrap();
    assert_eq!((md.uid(), md.gid()), (NOBODY, NOBODY));
    assert_eq!(md.permissions().mode() & 0o7777, 0o604);
    assert_eq!(fs::read_to_string(&path).unwrap(), "new\n");
    // Root's file that a group reads (a collector's group) keeps that group.
    let grouped = dir.path().join("grouped.prom");
    fs::write(&grouped, "old\n").unwrap();
    rustix::fs::chown(&grouped, None, Some(rustix::fs::Gid::from_raw(NOBODY))).unwrap();
    fs::set_permissions(&grouped, fs::Permissions::from_mode(0o640)).unwrap();
    write_atomically(&grouped, "new\n").unwrap();
    let md = fs::metadata(&grouped).unwrap();
    assert_eq!((md.uid(), md.gid()), (0, NOBODY));
    assert_eq!(md.permissions().mode() & 0o7777, 0o640);
}

#[test]
fn a_loop_of_links_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink("b", dir.path().join("a")).unwrap();
    std::os::unix::fs::symlink("a", dir.path().join("b")).unwrap();
    assert!(matches!(
        write_atomically(&dir.path().join("a"), "x").unwrap_err(),
        WriteError::SymlinkLoop { .. }
    ));
}
