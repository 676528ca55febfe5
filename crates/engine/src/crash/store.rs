//! The crash reports of a reports dir, parsed once and kept until the file changes.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::{read_report, CrashError, CrashReport};

/// Sub-directory where macOS 12+ moves older reports.
pub const RETIRED_DIR: &str = "Retired";

/// File extensions of the reports Apple writes to the reports dir.
pub const REPORT_EXTENSIONS: &[&str] = &["ips", "crash", "diag", "spin", "hang", "panic"];

/// A report file that could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    /// The file.
    pub path: PathBuf,
    /// Why (the error's text, naming the path and the cause).
    pub cause: String,
}

#[derive(Debug)]
struct Entry {
    len: u64,
    mtime: Option<SystemTime>,
    parsed: Result<CrashReport, String>,
}

/// Parsed reports of one or more reports dirs (files with a [`REPORT_EXTENSIONS`] extension, and
/// synced analytics `*.ips.ca.synced`, at the top and in `Retired/`), re-read only when a file's
/// size or mtime changes: a report read while it was written (counted by its header,
/// [`CrashReport::partial`]) is read whole once it grows.
#[derive(Debug, Default)]
pub struct ReportStore {
    entries: HashMap<PathBuf, Entry>,
    dir_errors: Vec<Unreadable>,
}

impl ReportStore {
    /// An empty store.
    pub fn new() -> ReportStore {
        ReportStore::default()
    }

    /// Brings the store up to date with `dirs`: new and changed report files are parsed, vanished
    /// ones dropped. A dir that does not exist holds no reports; one that cannot be listed is
    /// counted in [`ReportStore::unreadable`]. Returns how many files were (re)parsed.
    pub fn refresh(&mut self, dirs: &[PathBuf]) -> usize {
        let mut seen: Vec<PathBuf> = Vec::new();
        self.dir_errors.clear();
        for dir in dirs {
            for d in [dir.clone(), dir.join(RETIRED_DIR)] {
                self.list(&d, &mut seen);
            }
        }
        let mut parsed = 0;
        for path in &seen {
            let Ok(meta) = std::fs::symlink_metadata(path) else {
                continue;
            };
            if !meta.is_file() {
                continue;
            }
            let len = meta.len();
            let mtime = meta.modified().ok();
            if let Some(e) = self.entries.get(path) {
                if e.len == len && e.mtime == mtime {
                    continue;
                }
            }
            parsed += 1;
            let result = read_report(path).map_err(|e: CrashError| e.to_string());
            self.entries.insert(
                path.clone(),
                Entry {
                    len,
                    mtime,
                    parsed: result,
                },
            );
        }
        let keep: std::collections::HashSet<&PathBuf> = seen.iter().collect();
        self.entries.retain(|p, _| keep.contains(p));
        parsed
    }

    fn list(&mut self, dir: &Path, seen: &mut Vec<PathBuf>) {
        let rd = match std::fs::read_dir(dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(e) => {
                self.dir_errors.push(Unreadable {
                    path: dir.to_owned(),
                    cause: format!("cannot list reports dir {}: {e}", dir.display()),
                });
                return;
            }
        };
        for entry in rd.flatten() {
            let p = entry.path();
            let report_ext = p
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| REPORT_EXTENSIONS.contains(&e));
            if report_ext || super::read::is_synced_analytics(&p) {
                seen.push(p);
            }
        }
    }

    /// The reports read only by their header so far (body cut short or absent: being written),
    /// with why, sorted by path.
    pub fn partial(&self) -> Vec<Unreadable> {
        let mut out: Vec<Unreadable> = self
            .reports()
            .filter_map(|r| {
                r.partial.as_ref().map(|cause| Unreadable {
                    path: r.path.clone(),
                    cause: cause.clone(),
                })
            })
            .collect();
        out.sort_by(|a, b| a.path.cmp(&b.path));
        out
    }

    /// The parsed reports (crash or not), in no particular order.
    pub fn reports(&self) -> impl Iterator<Item = &CrashReport> {
        self.entries.values().filter_map(|e| e.parsed.as_ref().ok())
    }

    /// Report files and dirs that could not be read or parsed, sorted by path.
    pub fn unreadable(&self) -> Vec<Unreadable> {
        let mut out: Vec<Unreadable> = self
            .entries
            .iter()
            .filter_map(|(p, e)| {
                e.parsed.as_ref().err().map(|cause| Unreadable {
                    path: p.clone(),
                    cause: cause.clone(),
                })
            })
            .chain(self.dir_errors.iter().cloned())
            .collect();
        out.sort_by(|a, b| a.path.cmp(&b.path));
        out
    }

    /// Number of report files known (parsed or not).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when no report file is known.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}
