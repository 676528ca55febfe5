//! A leaking program of our own for the writer-evidence tests: a renamed copy of `sh`
//! ([`WRITER`]) whose every launch leaves two `wrk_<pid>_<n>_<ts>` dirs in a root, then waits on
//! its stdin (a builtin, so no child of another name stands in for it) until the test closes it.

use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

/// The writer's name: a copy of `sh` under a name no other process has.
pub const WRITER: &str = "leakwriter";

/// What each launch runs: `$1` the root, `$2` the launch's Unix seconds.
const SCRIPT: &str = r#"for n in 0 1; do d="$1/wrk_$$_${n}_$2"; mkdir "$d" && echo leak > "$d/f"; done; read x; exit 0"#;

/// The copy of `sh` named [`WRITER`] in `dir`.
pub fn install(dir: &Path) -> PathBuf {
    let exe = dir.join(WRITER);
    std::fs::copy("/bin/sh", &exe).unwrap();
    exe
}

/// One launch; killed if the test drops it still running.
pub struct Launch {
    /// The process.
    pub child: Child,
    stdin: Option<ChildStdin>,
}

impl Launch {
    /// Closes its stdin and waits for it to exit.
    pub fn finish(&mut self) {
        self.stdin.take();
        self.child.wait().unwrap();
    }
}

impl Drop for Launch {
    fn drop(&mut self) {
        self.stdin.take();
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

/// Whole seconds since the Unix epoch, now.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Launches `exe` (from [`install`]) leaving its two dirs in `root`.
pub fn launch(exe: &Path, root: &Path) -> Launch {
    let mut child = Command::new(exe)
        .arg("-c")
        .arg(SCRIPT)
        .arg(WRITER)
        .arg(root)
        .arg(unix_now().to_string())
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take();
    Launch { child, stdin }
}

/// What [`hold`] runs: `$1` the member dir to make, holding a file open in it until stdin closes
/// (fd 3 stays open while `read`, a builtin, waits: no child process shares it).
const HOLD_SCRIPT: &str = r#"mkdir "$1" && exec 3>"$1/f" && echo held >&3; read x; exit 0"#;

/// Launches `exe` (a copy of `sh`, from [`install`] or renamed otherwise) making the dir
/// `member` and holding a file inside it open until [`Launch::finish`].
pub fn hold(exe: &Path, member: &Path) -> Launch {
    let mut child = Command::new(exe)
        .arg("-c")
        .arg(HOLD_SCRIPT)
        .arg(exe.file_name().unwrap_or_default())
        .arg(member)
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take();
    Launch { child, stdin }
}
