//! Planning the reclaim of code-sign clones on a real tree with the real process probe: a clone
//! whose executable a running process was started from is kept (in use), an abandoned one is
//! planned with its freeable bytes.

#![allow(clippy::unwrap_used)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, SystemTime};

use cachewatch_core::process::SystemProbe;
use cachewatch_core::reclaim::{plan, KeepReason, Policy};
use cachewatch_core::scan::scan;
use cachewatch_core::{Catalogue, Root, RootKind};

/// A child running from an executable inside a clone, killed on drop.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.kill().ok();
        self.0.wait().ok();
    }
}

/// Clones an "app" into `clone`: its main executable is a copy of `sleep`.
fn make_clone(clone: &Path) -> std::path::PathBuf {
    let exe = clone.join("Google Chrome.app/Contents/MacOS/Google Chrome");
    fs::create_dir_all(exe.parent().unwrap()).unwrap();
    let sleep = String::from_utf8(
        Command::new("sh")
            .args(["-c", "command -v sleep"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    fs::copy(sleep.trim(), &exe).unwrap();
    fs::set_permissions(&exe, fs::Permissions::from_mode(0o755)).unwrap();
    fs::write(
        clone.join("Google Chrome.app/Contents/Info.plist"),
        vec![b'p'; 3000],
    )
    .unwrap();
    exe
}

#[test]
fn clone_a_running_process_was_started_from_is_kept_and_an_abandoned_one_is_planned() {
    let dir = tempfile::tempdir().unwrap();
    let x = dir.path().join("X");
    let clones = x.join("com.google.Chrome.code_sign_clone");
    let abandoned = clones.join("code_sign_clone.tKdILk");
    let live = clones.join("code_sign_clone.Qw12Er");
    make_clone(&abandoned);
    let exe = make_clone(&live);
    let running = Running(Command::new(&exe).arg("60").spawn().unwrap());

    let root = Root::new(RootKind::CodeSignClones, &x).unwrap();
    let cat = Catalogue::builtin();
    // Two days on, both clones are past the rule's one-hour floor; only use can keep one.
    let now = SystemTime::now() + Duration::from_secs(2 * 86_400);
    let inv = scan(std::slice::from_ref(&root), &cat, now);
    let policy = Policy {
        older_than: Duration::ZERO,
        producers: vec!["chromium-code-sign-clone".to_owned()],
        protected: vec![],
    };
    let p = plan(&inv, &cat, &policy, &SystemProbe::new(), now);

    let abandoned = root
        .canonical
        .join("com.google.Chrome.code_sign_clone/code_sign_clone.tKdILk");
    let live = root
        .canonical
        .join("com.google.Chrome.code_sign_clone/code_sign_clone.Qw12Er");
    assert_eq!(p.items.len(), 1, "{:#?}", p);
    let planned = &p.items[0];
    assert_eq!(planned.path, abandoned);
    let (_, item) = inv.find_item(&abandoned).unwrap();
    assert_eq!(planned.freeable_bytes, item.measure.freeable_bytes);
    assert_eq!(p.planned_freeable_bytes, planned.freeable_bytes);
    assert!(planned.freeable_bytes > 0);
    let kept = p.kept.iter().find(|k| k.path == live).unwrap();
    match &kept.reason {
        KeepReason::InUse { pid, .. } => assert_eq!(*pid, running.0.id()),
        other => panic!("live clone kept for {other:?}, not in use"),
    }
    // The rule is auto: a reclaim of every producer plans the abandoned clone too. The live one
    // is in use, and (the app running from it) the newest clone of a running app as well.
    let default = Policy {
        producers: vec![],
        ..policy
    };
    let all = plan(&inv, &cat, &default, &SystemProbe::new(), now);
    assert_eq!(
        all.items.iter().map(|i| &i.path).collect::<Vec<_>>(),
        [&abandoned]
    );
}
