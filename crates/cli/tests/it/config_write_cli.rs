//! The config file under attack while `rules add` runs, through the binary: the file swapped for a
//! FIFO or a link to `/dev/zero` between the config's load and the rule's write (refused, never
//! waited on nor read), and two `rules add` at once (both rules kept).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cachewatch_testkit::hostile::Rng;
use cachewatch_testkit::tree;

/// Two groups of unknown leaks in `root`: `pbx<rand8>/` (dirs) and `qmz<rand8>.dat` (files), 24
/// members each.
fn two_groups(root: &Path) {
    let mut r = Rng::new(0x5eed_c0f1_6000_0001);
    for i in 0..24 {
        tree::write_file(
            &root.join(format!("pbx{}", r.alnum(8))).join("blob"),
            500 + i,
        );
        tree::write_file(&root.join(format!("qmz{}.dat", r.alnum(8))), 700 + i);
    }
}

fn rules_add(dir: &Path, root: &Path, shape: &str, id: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cachewatch"));
    c.arg("--config")
        .arg(dir.join("config.toml"))
        .arg("--data-dir")
        .arg(dir.join("data"))
        .args(["rules", "add", shape, "--id", id, "--root"])
        .arg(format!("temp={}", root.display()))
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// Waits for `child` at most `limit` (a bound against hanging forever, not a timing assertion);
/// kills it and fails past that.
fn wait_bounded(mut child: Child, limit: Duration, what: &str) -> (i32, String, String) {
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > limit {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("{what}: still running after {limit:?} (blocked or reading without end)");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Blocks until the file at `path` is closed after a read (inotify `IN_CLOSE_NOWRITE`), the
/// watch set up by [`CloseWatch::new`] before the reader starts.
struct CloseWatch(std::os::fd::OwnedFd);

impl CloseWatch {
    fn new(path: &Path) -> CloseWatch {
        use std::os::fd::FromRawFd as _;
        // SAFETY: plain syscalls on a fresh descriptor and a NUL-terminated path.
        unsafe {
            let fd = libc::inotify_init1(libc::IN_CLOEXEC);
            assert!(fd >= 0);
            let c = CString::new(path.as_os_str().as_bytes()).unwrap();
            assert!(libc::inotify_add_watch(fd, c.as_ptr(), libc::IN_CLOSE_NOWRITE) >= 0);
            CloseWatch(std::os::fd::OwnedFd::from_raw_fd(fd))
        }
    }

    fn wait(&self) {
        use std::os::fd::AsRawFd as _;
        let mut buf = [0u8; 4096];
        // SAFETY: reads into a buffer of its length.
        let n = unsafe { libc::read(self.0.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        assert!(n > 0, "inotify read failed");
    }
}

fn mkfifo(path: &Path) {
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// `rules add` with its config swapped, right after the config's load (while the roots are
/// scanned), for `swap_in` (a FIFO, a link to `/dev/zero`), renamed over the file. The child's
/// address space is capped at 1 GiB, so reading `/dev/zero` without end fails there instead of
/// eating the machine's memory.
fn add_with_config_swapped(make: impl Fn(&Path)) -> (tempfile::TempDir, PathBuf, i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap().join("root");
    std::fs::create_dir(&root).unwrap();
    two_groups(&root);
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "# mine\n").unwrap();
    let swap_in = dir.path().join("swap-in");
    make(&swap_in);
    let watch = CloseWatch::new(&config);
    let mut cmd = rules_add(dir.path(), &root, "pbx<rand8>/", "local-pbx");
    // SAFETY: setrlimit is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 1 << 30,
                rlim_max: 1 << 30,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd.spawn().unwrap();
    watch.wait();
    std::fs::rename(&swap_in, &config).unwrap();
    let (code, _, err) = wait_bounded(child, Duration::from_secs(60), "rules add");
    (dir, config, code, err)
}

/// Regression: `rules add` re-read the config with a plain read: a FIFO swapped in while it
/// scanned blocked it forever.
#[test]
fn rules_add_refuses_a_config_swapped_for_a_fifo_mid_run() {
    let (_dir, config, code, err) = add_with_config_swapped(mkfifo);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("FIFO"), "{err}");
    assert!(err.contains(&config.display().to_string()), "{err}");
    let md = std::fs::symlink_metadata(&config).unwrap();
    assert!(
        std::os::unix::fs::FileTypeExt::is_fifo(&md.file_type()),
        "the FIFO is left as it was"
    );
}

/// Regression: a link to `/dev/zero` swapped in while `rules add` scanned was read until memory
/// ran out.
#[test]
fn rules_add_refuses_a_config_swapped_for_a_link_to_dev_zero_mid_run() {
    let (_dir, config, code, err) =
        add_with_config_swapped(|p| std::os::unix::fs::symlink("/dev/zero", p).unwrap());
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("character device"), "{err}");
    assert!(err.contains(&config.display().to_string()), "{err}");
    assert_eq!(
        std::fs::read_link(&config).unwrap(),
        Path::new("/dev/zero"),
        "the link is left as it was"
    );
}

/// The `id = "..."` lines of `text` (each `[[producer]]` table has one; nothing else does here).
fn producer_ids(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("id = \""))
        .map(|l| l.trim_end_matches('"').to_owned())
        .collect()
}

/// Regression: two `rules add` at once both said "Added" and one rule was lost (read-modify-write
/// with no lock). 20 tries, each with a fresh config: both rules and the user's comment are kept.
#[test]
fn two_rules_add_at_once_keep_both_rules() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap().join("root");
    std::fs::create_dir(&root).unwrap();
    two_groups(&root);
    let config = dir.path().join("config.toml");
    for attempt in 0..20 {
        std::fs::write(
            &config,
            "# mine, keep this\n[reclaim]\nolder_than = \"3d\"\n",
        )
        .unwrap();
        let a = rules_add(dir.path(), &root, "pbx<rand8>/", "local-pbx")
            .spawn()
            .unwrap();
        let b = rules_add(dir.path(), &root, "qmz<rand8>.dat", "local-qmz")
            .spawn()
            .unwrap();
        let limit = Duration::from_secs(120);
        let (ca, oa, ea) = wait_bounded(a, limit, "first rules add");
        let (cb, ob, eb) = wait_bounded(b, limit, "second rules add");
        assert_eq!(ca, 0, "try {attempt}: {oa}{ea}");
        assert_eq!(cb, 0, "try {attempt}: {ob}{eb}");
        let text = std::fs::read_to_string(&config).unwrap();
        let mut ids = producer_ids(&text);
        ids.sort();
        assert_eq!(ids, ["local-pbx", "local-qmz"], "try {attempt}:\n{text}");
        assert!(text.starts_with("# mine, keep this\n"), "{text}");
    }
    // The lock file stays beside the config, an empty regular file.
    let lock = std::fs::symlink_metadata(dir.path().join("config.toml.lock")).unwrap();
    assert!(lock.file_type().is_file());
    assert_eq!(lock.len(), 0);
}
