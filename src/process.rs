//! Is a process alive, when did it start, which files are open: `sysinfo` and the platform facade
//! behind one trait, so reclaim can be tested with a fake.
//!
//! SKELETON — owned by the reclaim helper; the signatures below are the agreed interface.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// What reclaim needs to know about a live process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessInfo {
    /// Process id.
    pub pid: u32,
    /// Executable name (as `ps -o comm` shows it).
    pub name: String,
    /// When the process started.
    pub start_time: SystemTime,
}

/// A file some process holds open (or has mapped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenFile {
    /// The process holding it.
    pub pid: u32,
    /// Canonical path of the file.
    pub path: PathBuf,
}

/// Liveness and open-file queries. [`SystemProbe`] asks the OS; tests use fakes.
pub trait ProcessProbe {
    /// The live process with this pid, or `None` when none runs.
    fn process(&self, pid: u32) -> Option<ProcessInfo>;
    /// True when a process with this executable name runs.
    fn is_running(&self, name: &str) -> bool;
    /// The first open (or mapped) file under `dir` (canonical path), if any.
    fn open_file_under(&self, dir: &Path) -> Option<OpenFile>;
}

/// The real probe: `sysinfo` for processes, `/proc` (Linux) or `libproc` (macOS) for open files.
pub struct SystemProbe {
    _private: (),
}
