//! The open and mapped files of every process, gathered within a bound whatever the processes
//! hold: the platform readers (`other.rs`, `macos.rs`) hand each path to a [`Collector`] as they
//! read it, and it keeps only paths inside the scope (the roots asked about), each once, at most
//! [`EXACT_BYTES_PER_PROCESS`] of new paths from one process and [`EXACT_BYTES`] in all. What a
//! process holds beyond that is kept coarsely, as the dir it lies in ("something at or under this
//! dir is open"), and those dirs are merged into their parents whenever they pass
//! [`COARSE_BYTES`]. A coarse dir keeps every item it lies in or that lies in it: the guard keeps
//! more, never less, than the exact paths would.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// New exact paths one process may add (bytes of path plus [`ENTRY_COST`] each).
pub const EXACT_BYTES_PER_PROCESS: usize = 1 << 20;
/// Exact paths of all processes together (bytes of path plus [`ENTRY_COST`] each).
pub const EXACT_BYTES: usize = 16 << 20;
/// Coarse dirs of all processes together; beyond it the deepest are merged into their parents.
pub const COARSE_BYTES: usize = 2 << 20;
/// What one kept path costs beyond its bytes: the map node, the allocation and the pid.
pub const ENTRY_COST: usize = 64;

/// True when `path` is `dir` or lies under it (whole components; both absolute, no trailing `/`
/// but for `/` itself).
pub(super) fn is_under(path: &[u8], dir: &[u8]) -> bool {
    if dir == b"/" {
        return path.first() == Some(&b'/');
    }
    path.starts_with(dir) && (path.len() == dir.len() || path[dir.len()] == b'/')
}

/// The parent of an absolute path (`/` for `/x` and for `/`).
fn parent(path: &[u8]) -> &[u8] {
    match path.iter().rposition(|b| *b == b'/') {
        Some(0) | None => b"/",
        Some(i) => &path[..i],
    }
}

fn depth(path: &[u8]) -> usize {
    if path == b"/" {
        0
    } else {
        path.iter().filter(|b| **b == b'/').count()
    }
}

fn cost(path: &[u8]) -> usize {
    path.len() + ENTRY_COST
}

fn path_of(bytes: &[u8]) -> PathBuf {
    PathBuf::from(OsStr::from_bytes(bytes))
}

/// The longest of `prefixes` that `path` lies under, if any.
fn floor_in<'p>(prefixes: &'p [Vec<u8>], path: &[u8]) -> Option<&'p [u8]> {
    prefixes
        .iter()
        .filter(|q| is_under(path, q))
        .max_by_key(|q| q.len())
        .map(Vec::as_slice)
}

/// Gathers `(pid, path)` entries within the scope and the bounds; see the module docs.
#[derive(Debug)]
pub(super) struct Collector {
    /// The scope: absolute dirs without a trailing `/`; `["/"]` when unscoped.
    prefixes: Vec<Vec<u8>>,
    exact: BTreeMap<PathBuf, u32>,
    exact_bytes: usize,
    coarse: BTreeMap<PathBuf, u32>,
    coarse_bytes: usize,
    /// Per prefix, its device and whether a mount lies inside it (see [`Collector::add_unknown`]).
    homes: Option<Vec<(Option<u64>, bool)>>,
    pid: u32,
    pid_bytes: usize,
    pid_bounded: bool,
    bounded_pids: usize,
}

impl Collector {
    /// A collector of paths at or under `scope` (every absolute path when `None`).
    pub(super) fn new(scope: Option<&[PathBuf]>) -> Collector {
        let mut prefixes: Vec<Vec<u8>> = match scope {
            None => vec![b"/".to_vec()],
            Some(dirs) => dirs
                .iter()
                .map(|d| d.as_os_str().as_bytes())
                .filter(|d| d.first() == Some(&b'/'))
                .map(|d| {
                    let trimmed = d.len() - d.iter().rev().take_while(|b| **b == b'/').count();
                    if trimmed == 0 {
                        b"/".to_vec()
                    } else {
                        d[..trimmed].to_vec()
                    }
                })
                .collect(),
        };
        prefixes.sort();
        prefixes.dedup();
        Collector {
            prefixes,
            exact: BTreeMap::new(),
            exact_bytes: 0,
            coarse: BTreeMap::new(),
            coarse_bytes: 0,
            homes: None,
            pid: 0,
            pid_bytes: 0,
            pid_bounded: false,
            bounded_pids: 0,
        }
    }

    /// Starts the entries of process `pid` (the per-process bound counts from here).
    pub(super) fn begin(&mut self, pid: u32) {
        self.end_process();
        self.pid = pid;
    }

    fn end_process(&mut self) {
        if self.pid_bounded {
            self.bounded_pids += 1;
        }
        self.pid_bytes = 0;
        self.pid_bounded = false;
    }

    /// The longest scope prefix `path` lies under, if any.
    fn floor(&self, path: &[u8]) -> Option<&[u8]> {
        floor_in(&self.prefixes, path)
    }

    // Asked by the `/proc` reader only (macOS names every path whole).
    #[cfg_attr(target_os = "macos", allow(dead_code))]
    /// True when `path` lies in the scope (worth a closer look: a `stat`, say).
    pub(super) fn wants(&self, path: &[u8]) -> bool {
        path.first() == Some(&b'/') && self.floor(path).is_some()
    }

    /// An open file at `path` (absolute, as the kernel names it); ignored outside the scope.
    pub(super) fn add(&mut self, path: &[u8]) {
        let Some(floor) = self.floor(path).map(<[u8]>::to_vec) else {
            return;
        };
        if let Some(pid) = self.exact.get_mut(Path::new(OsStr::from_bytes(path))) {
            *pid = (*pid).min(self.pid);
            return;
        }
        let c = cost(path);
        if self.pid_bytes + c <= EXACT_BYTES_PER_PROCESS && self.exact_bytes + c <= EXACT_BYTES {
            self.pid_bytes += c;
            self.exact_bytes += c;
            self.exact.insert(path_of(path), self.pid);
            return;
        }
        self.pid_bounded = true;
        let dir = if path == floor { path } else { parent(path) };
        let dir = if is_under(dir, &floor) { dir } else { &floor };
        self.add_coarse(dir);
    }

    // Asked by the `/proc` reader only (macOS names every path whole).
    #[cfg_attr(target_os = "macos", allow(dead_code))]
    /// Something open at or under `dir` (absolute), its exact path unknown: a dir of the scope
    /// that `dir` lies in is kept as is; a `dir` above some scope prefixes keeps those prefixes.
    pub(super) fn add_dir(&mut self, dir: &[u8]) {
        if dir.first() != Some(&b'/') {
            return;
        }
        if self.floor(dir).is_some() {
            self.add_coarse(dir);
            return;
        }
        let below: Vec<Vec<u8>> = self
            .prefixes
            .iter()
            .filter(|q| is_under(q, dir))
            .cloned()
            .collect();
        for q in below {
            self.add_coarse(&q);
        }
    }

    /// Something open whose path cannot be told (too long for the kernel to name): it may lie
    /// in any scope prefix that can hold a file of its device `dev` (`None`: unknown), so each
    /// such prefix is kept coarsely: one on that device, or with a mount point inside it.
    pub(super) fn add_unknown(&mut self, dev: Option<u64>) {
        let homes = self.homes().to_vec();
        for (q, (q_dev, mounts_inside)) in self.prefixes.clone().iter().zip(homes) {
            if dev.is_none() || q_dev.is_none() || q_dev == dev || mounts_inside {
                self.add_coarse(q);
            }
        }
    }

    /// Per scope prefix: its device (`None` when it cannot be asked) and whether a file system is
    /// mounted inside it. Read once, at the first file with no name.
    fn homes(&mut self) -> &[(Option<u64>, bool)] {
        if self.homes.is_none() {
            let mounts = super::mount_points();
            let homes = self
                .prefixes
                .iter()
                .map(|q| {
                    let dev = std::fs::metadata(OsStr::from_bytes(q))
                        .ok()
                        .map(|m| std::os::unix::fs::MetadataExt::dev(&m));
                    let inside = mounts.iter().any(|m| {
                        let m = m.as_os_str().as_bytes();
                        m != q.as_slice() && is_under(m, q)
                    });
                    (dev, inside)
                })
                .collect();
            self.homes = Some(homes);
        }
        self.homes.as_deref().unwrap_or_default()
    }

    fn add_coarse(&mut self, dir: &[u8]) {
        if let Some(pid) = self.coarse.get_mut(Path::new(OsStr::from_bytes(dir))) {
            *pid = (*pid).min(self.pid);
            return;
        }
        self.coarse_bytes += cost(dir);
        self.coarse.insert(path_of(dir), self.pid);
        if self.coarse_bytes > COARSE_BYTES {
            self.merge_coarse(COARSE_BYTES / 2);
        }
    }

    /// Merges the deepest coarse dirs into their parents (never above their scope prefix) until
    /// they cost at most `target` or none can rise.
    fn merge_coarse(&mut self, target: usize) {
        let prefixes = &self.prefixes;
        let liftable = |p: &Path| {
            let b = p.as_os_str().as_bytes();
            floor_in(prefixes, b).is_some_and(|f| f != b)
        };
        while self.coarse_bytes > target {
            let Some(deepest) = self
                .coarse
                .keys()
                .filter(|p| liftable(p))
                .map(|p| depth(p.as_os_str().as_bytes()))
                .max()
            else {
                return;
            };
            let old = std::mem::take(&mut self.coarse);
            let mut merged: BTreeMap<PathBuf, u32> = BTreeMap::new();
            for (p, pid) in old {
                let b = p.as_os_str().as_bytes();
                let lifted = if depth(b) == deepest && liftable(&p) {
                    let up = parent(b);
                    match floor_in(prefixes, b) {
                        Some(f) if !is_under(up, f) => path_of(f),
                        _ => path_of(up),
                    }
                } else {
                    p
                };
                merged
                    .entry(lifted)
                    .and_modify(|q| *q = (*q).min(pid))
                    .or_insert(pid);
            }
            self.coarse_bytes = merged.keys().map(|p| cost(p.as_os_str().as_bytes())).sum();
            self.coarse = merged;
        }
    }

    /// What was gathered: the exact entries, the coarse dirs, how many processes went past the
    /// bound (`skipped_pids` is the reader's to count).
    pub(super) fn finish(mut self) -> super::OpenFiles {
        self.end_process();
        super::OpenFiles {
            files: self.exact.into_iter().map(|(p, pid)| (pid, p)).collect(),
            coarse: self.coarse.into_iter().map(|(p, pid)| (pid, p)).collect(),
            skipped_pids: 0,
            bounded_pids: self.bounded_pids,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn paths(v: &[(u32, PathBuf)]) -> Vec<String> {
        v.iter()
            .map(|(_, p)| p.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn only_paths_under_the_scope_are_kept_each_once_with_the_lowest_pid() {
        let scope = [PathBuf::from("/r/a/"), PathBuf::from("/s")];
        let mut c = Collector::new(Some(&scope));
        c.begin(9);
        for p in [
            "/r/a/x",
            "/r/ab/x",
            "/r/a",
            "/s/y",
            "/t/z",
            "/r",
            "relative/r/a/x",
        ] {
            c.add(p.as_bytes());
        }
        c.begin(4);
        c.add(b"/r/a/x");
        let super::super::OpenFiles {
            files: exact,
            coarse,
            bounded_pids: bounded,
            ..
        } = c.finish();
        assert_eq!(paths(&exact), ["/r/a", "/r/a/x", "/s/y"]);
        assert_eq!(exact[1].0, 4);
        assert_eq!(exact[0].0, 9);
        assert!(coarse.is_empty());
        assert_eq!(bounded, 0);
    }

    #[test]
    fn one_process_past_its_bound_is_kept_as_the_dirs_it_holds_files_in() {
        let mut c = Collector::new(Some(&[PathBuf::from("/r")]));
        c.begin(7);
        let name = "n".repeat(200);
        let n = EXACT_BYTES_PER_PROCESS / (cost(format!("/r/d/{name}000000").as_bytes())) + 10;
        for i in 0..n {
            c.add(format!("/r/d/{name}{i:06}").as_bytes());
            c.add(format!("/r/e/{i}/{name}").as_bytes());
        }
        c.begin(8);
        c.add(b"/r/other");
        let super::super::OpenFiles {
            files: exact,
            coarse,
            bounded_pids: bounded,
            ..
        } = c.finish();
        let exact_bytes: usize = exact
            .iter()
            .map(|(_, p)| cost(p.as_os_str().as_bytes()))
            .sum();
        assert!(exact_bytes <= EXACT_BYTES_PER_PROCESS + cost(b"/r/other"));
        assert!(exact
            .iter()
            .any(|(pid, p)| *pid == 8 && p == Path::new("/r/other")));
        assert_eq!(bounded, 1);
        // `/r/d/*` beyond the bound as `/r/d`; the `/r/e/<i>` dirs as themselves, fewer than
        // the bound of coarse dirs allows.
        assert!(coarse.iter().any(|(_, p)| p == Path::new("/r/d")));
        let coarse_bytes: usize = coarse
            .iter()
            .map(|(_, p)| cost(p.as_os_str().as_bytes()))
            .sum();
        assert!(coarse_bytes <= COARSE_BYTES, "{coarse_bytes}");
        // Every path added is covered: exact, or under a coarse dir.
        let exact: std::collections::HashSet<&PathBuf> = exact.iter().map(|(_, p)| p).collect();
        let coarse: std::collections::HashSet<&Path> =
            coarse.iter().map(|(_, p)| p.as_path()).collect();
        for i in 0..n {
            for p in [format!("/r/d/{name}{i:06}"), format!("/r/e/{i}/{name}")] {
                let p = PathBuf::from(p);
                let covered = exact.contains(&p) || p.ancestors().any(|a| coarse.contains(a));
                assert!(covered, "{} lost", p.display());
            }
        }
    }

    #[test]
    fn coarse_dirs_past_their_bound_merge_into_parents_never_above_the_scope() {
        let mut c = Collector::new(Some(&[PathBuf::from("/r/s")]));
        c.begin(3);
        let long = "x".repeat(250);
        let n = 3 * COARSE_BYTES / cost(format!("/r/s/a/{long}/000000").as_bytes());
        let dirs: Vec<String> = (0..n).map(|i| format!("/r/s/a/{long}/{i:06}")).collect();
        for d in &dirs {
            c.add_dir(d.as_bytes());
        }
        c.add_dir(b"/r");
        c.add_dir(b"/q");
        let coarse = c.finish().coarse;
        let bytes: usize = coarse
            .iter()
            .map(|(_, p)| cost(p.as_os_str().as_bytes()))
            .sum();
        assert!(bytes <= COARSE_BYTES, "{bytes} bytes of coarse dirs");
        assert!(
            coarse.iter().any(|(_, p)| p == Path::new("/r/s")),
            "/r keeps its root"
        );
        assert!(
            coarse.iter().all(|(_, p)| p.starts_with("/r/s")),
            "nothing above the root"
        );
        let merged = Path::new("/r/s/a").join(&long);
        assert!(
            coarse.iter().any(|(_, p)| *p == merged),
            "merged into their parent"
        );
        let lost = dirs
            .iter()
            .filter(|d| !coarse.iter().any(|(_, p)| Path::new(d).starts_with(p)))
            .count();
        assert_eq!(lost, 0, "every dir is at or under a coarse one");
    }

    #[test]
    fn unscoped_takes_every_absolute_path_and_unknown_keeps_the_scope() {
        let mut c = Collector::new(None);
        c.begin(1);
        c.add(b"/x/y");
        c.add(b"socket:[1]");
        c.add_unknown(None);
        let super::super::OpenFiles {
            files: exact,
            coarse,
            ..
        } = c.finish();
        assert_eq!(paths(&exact), ["/x/y"]);
        assert_eq!(paths(&coarse), ["/"]);
    }

    #[test]
    fn a_file_with_no_name_keeps_only_the_prefixes_that_can_hold_its_device() {
        let d = tempfile::tempdir().unwrap();
        let here = std::fs::canonicalize(d.path()).unwrap();
        let dev = std::os::unix::fs::MetadataExt::dev(&std::fs::metadata(&here).unwrap());
        let gone = here.join("missing");
        let mut c = Collector::new(Some(&[here.clone(), gone.clone()]));
        c.begin(5);
        c.add_unknown(Some(dev.wrapping_add(977)));
        assert_eq!(
            c.finish().coarse,
            vec![(5, gone.clone())],
            "device unknown for a missing dir"
        );
        let mut c = Collector::new(Some(std::slice::from_ref(&here)));
        c.begin(5);
        c.add_unknown(Some(dev));
        assert_eq!(c.finish().coarse, vec![(5, here.clone())]);
        let mut c = Collector::new(Some(std::slice::from_ref(&here)));
        c.begin(5);
        c.add_unknown(None);
        assert_eq!(c.finish().coarse, vec![(5, here)]);
    }
}
