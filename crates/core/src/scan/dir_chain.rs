//! What the fd-relative walk keeps instead of a path per entry: [`At`], a dir's place as a chain
//! of names on the walk's stack (a path is built only for an item or an issue), [`Names`], a
//! batch of listed names in one buffer, and [`FdBudget`], how many listed dirs may keep their fd
//! open while their subdirs are walked.

use std::ffi::{CStr, OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::platform::ScanStat;
use crate::shapes::Nested;

/// A dir being walked: its name and its parent's [`At`] (both on the walk's stack), or, for the
/// dir the walk started at, its whole path.
pub(crate) struct At<'a> {
    up: Option<&'a At<'a>>,
    name: &'a OsStr,
    /// Where its children's sums go while they are walked: set on an unattributed top-level dir
    /// whose children the walk groups by shape ([`crate::shapes::Nested`]).
    pub(crate) kids: Option<&'a Mutex<Nested>>,
}

impl<'a> At<'a> {
    /// The dir the walk starts at (the root, or an item re-measured).
    pub(crate) fn start(path: &'a Path) -> At<'a> {
        At {
            up: None,
            name: path.as_os_str(),
            kids: None,
        }
    }

    /// The entry `name` of the dir `up`.
    pub(crate) fn child(up: &'a At<'a>, name: &'a OsStr) -> At<'a> {
        At {
            up: Some(up),
            name,
            kids: None,
        }
    }

    /// The same dir with its children's sums going to `kids`.
    pub(crate) fn with_kids<'b>(&'b self, kids: &'b Mutex<Nested>) -> At<'b>
    where
        'a: 'b,
    {
        At {
            up: self.up,
            name: self.name,
            kids: Some(kids),
        }
    }

    /// The entry's name (the whole path for the start).
    pub(crate) fn name(&self) -> &OsStr {
        self.name
    }

    /// True for the dir the walk started at.
    pub(crate) fn is_start(&self) -> bool {
        self.up.is_none()
    }

    /// Its absolute path.
    pub(crate) fn path(&self) -> PathBuf {
        let mut p = Vec::with_capacity(self.len());
        self.push_into(&mut p);
        PathBuf::from(OsString::from_vec(p))
    }

    /// The absolute path of its entry `name`.
    pub(crate) fn join(&self, name: &OsStr) -> PathBuf {
        let mut p = Vec::with_capacity(self.len() + 1 + name.len());
        self.push_into(&mut p);
        push_name(&mut p, name);
        PathBuf::from(OsString::from_vec(p))
    }

    fn len(&self) -> usize {
        self.name.len() + self.up.map_or(0, |u| u.len() + 1)
    }

    /// Its path's bytes, as `PathBuf::push` of each name would give (names hold no `/`).
    fn push_into(&self, p: &mut Vec<u8>) {
        match self.up {
            Some(up) => {
                up.push_into(p);
                push_name(p, self.name);
            }
            None => p.extend_from_slice(self.name.as_bytes()),
        }
    }
}

/// Appends `/name` to `p` (no second `/` after a path ending in one, such as the root `/`).
fn push_name(p: &mut Vec<u8>, name: &OsStr) {
    if !p.is_empty() && !p.ends_with(b"/") {
        p.push(b'/');
    }
    p.extend_from_slice(name.as_bytes());
}

/// Names listed from one dir, NUL-terminated in one buffer (no allocation per name), with the
/// `lstat` a listing handed over with a name, where it did (macOS `getattrlistbulk`).
#[derive(Default)]
pub(crate) struct Names {
    bytes: Vec<u8>,
    /// `(start, end)` of each name in `bytes`, its NUL included.
    spans: Vec<(usize, usize)>,
    /// The listed `lstat` of the name of the same index; empty while no name came with one (so a
    /// listing that hands over none, Linux's, costs nothing here).
    stats: Vec<Option<ScanStat>>,
}

impl Names {
    /// Adds `name`; its span.
    pub(crate) fn push(&mut self, name: &CStr) -> (usize, usize) {
        self.push_listed(name, None)
    }

    /// Adds `name` with the `lstat` its listing handed over (`None`: asked later); its span.
    pub(crate) fn push_listed(&mut self, name: &CStr, stat: Option<ScanStat>) -> (usize, usize) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(name.to_bytes_with_nul());
        let span = (start, self.bytes.len());
        if stat.is_some() || !self.stats.is_empty() {
            self.stats.resize(self.spans.len(), None);
            self.stats.push(stat);
        }
        self.spans.push(span);
        span
    }

    /// The listed `lstat` of the `i`th name, if its listing handed one over.
    pub(crate) fn listed_stat(&self, i: usize) -> Option<ScanStat> {
        self.stats.get(i).copied().flatten()
    }

    pub(crate) fn len(&self) -> usize {
        self.spans.len()
    }

    /// Empties it, keeping its buffers.
    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
        self.spans.clear();
        self.stats.clear();
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// The `(start, end)` spans, to split into chunks.
    pub(crate) fn spans(&self) -> &[(usize, usize)] {
        &self.spans
    }

    /// The name at `span`.
    pub(crate) fn get(&self, span: (usize, usize)) -> Option<&CStr> {
        CStr::from_bytes_with_nul(self.bytes.get(span.0..span.1)?).ok()
    }
}

/// A reusable buffer holding `<parent rel>/<name>`: the path relative to the root that the
/// classifier is asked about, rebuilt per entry without allocating.
pub(crate) struct RelBuf {
    bytes: Vec<u8>,
    base: usize,
}

impl RelBuf {
    /// A buffer for the entries of the dir at `parent` (relative to the root; empty for the root).
    pub(crate) fn new(parent: &Path) -> RelBuf {
        let mut bytes = Vec::with_capacity(parent.as_os_str().len() + 64);
        bytes.extend_from_slice(parent.as_os_str().as_bytes());
        if !bytes.is_empty() {
            bytes.push(b'/');
        }
        RelBuf {
            base: bytes.len(),
            bytes,
        }
    }

    /// `<parent>/<name>`.
    pub(crate) fn with(&mut self, name: &OsStr) -> &Path {
        self.bytes.truncate(self.base);
        self.bytes.extend_from_slice(name.as_bytes());
        Path::new(OsStr::from_bytes(&self.bytes))
    }
}

/// How many dirs may keep their fd open while their subdirs are walked (so that those are opened
/// relative to it); past that a dir whose listing ended is closed first and its subdirs are
/// opened by path, as `read_dir` would. Bounds the walk's fds whatever the tree's depth.
#[repr(align(128))] // its counter changes often: not on the walker's read-only cache lines
pub(crate) struct FdBudget {
    held: AtomicUsize,
    max: usize,
}

impl FdBudget {
    /// A budget of a quarter of the process's open-file limit, between 8 and 1024.
    pub(crate) fn new() -> FdBudget {
        let limit = crate::platform::open_files_limit().unwrap_or(256);
        FdBudget {
            held: AtomicUsize::new(0),
            max: usize::try_from(limit / 4).unwrap_or(1024).clamp(8, 1024),
        }
    }

    /// A budget of `max` fds (tests: a budget already spent, or a small one).
    #[cfg(test)]
    pub(crate) fn with_max(max: usize) -> FdBudget {
        FdBudget {
            held: AtomicUsize::new(0),
            max,
        }
    }

    /// Takes one fd from the budget; `false` when none is left.
    pub(crate) fn take(&self) -> bool {
        let prev = self.held.fetch_add(1, Ordering::Relaxed);
        if prev < self.max {
            true
        } else {
            self.held.fetch_sub(1, Ordering::Relaxed);
            false
        }
    }

    /// Gives back an fd [`FdBudget::take`] took.
    pub(crate) fn give_back(&self) {
        self.held.fetch_sub(1, Ordering::Relaxed);
    }

    /// Fds taken and not given back.
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// The most fds held at once.
    #[cfg(test)]
    pub(crate) fn max(&self) -> usize {
        self.max
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_built_from_the_chain_of_names() {
        let root = At::start(Path::new("/r/oot"));
        let a = At::child(&root, OsStr::new("a"));
        let b = At::child(&a, OsStr::new("b"));
        assert_eq!(root.path(), Path::new("/r/oot"));
        assert_eq!(b.path(), Path::new("/r/oot/a/b"));
        assert_eq!(b.join(OsStr::new("c")), Path::new("/r/oot/a/b/c"));
        assert!(root.is_start() && !b.is_start());
        assert_eq!(b.name(), "b");
        let slash = At::start(Path::new("/"));
        let top = At::child(&slash, OsStr::new("top"));
        assert_eq!(top.path(), Path::new("/top"));
        assert_eq!(slash.join(OsStr::new("x")), Path::new("/x"));
        assert_eq!(
            top.path().as_os_str(),
            PathBuf::from("/").join("top").as_os_str()
        );
    }

    #[test]
    fn rel_buf_and_names_hold_what_was_put_in() {
        let mut top = RelBuf::new(Path::new(""));
        assert_eq!(top.with(OsStr::new("x")), Path::new("x"));
        let mut deep = RelBuf::new(Path::new("a/b"));
        assert_eq!(
            deep.with(OsStr::new("long-name")),
            Path::new("a/b/long-name")
        );
        assert_eq!(deep.with(OsStr::new("c")), Path::new("a/b/c"));
        let mut names = Names::default();
        names.push(c"one");
        names.push(c"two");
        let got: Vec<&CStr> = names
            .spans()
            .iter()
            .map(|&s| names.get(s).unwrap())
            .collect();
        assert_eq!(got, [c"one", c"two"]);
        assert_eq!(names.len(), 2);
    }

    /// A listed `lstat` stays with its own name, whichever name first came with one; names
    /// listed without one (Linux) keep no stats at all.
    #[test]
    fn listed_stats_stay_with_their_names() {
        let st = |ino| ScanStat {
            dev: 1,
            ino,
            nlink: 1,
            blocks: 8,
            size: 10,
            kind: crate::platform::ScanKind::File,
            mtime: None,
            born: None,
            private_bytes: None,
        };
        let mut names = Names::default();
        names.push(c"a");
        names.push_listed(c"b", None);
        assert!(names.stats.is_empty());
        names.push_listed(c"c", Some(st(3)));
        names.push(c"d");
        names.push_listed(c"e", Some(st(5)));
        let got: Vec<Option<u64>> = (0..6)
            .map(|i| names.listed_stat(i).map(|s| s.ino))
            .collect();
        assert_eq!(got, [None, None, Some(3), None, Some(5), None]);
        names.clear();
        names.push(c"x");
        assert_eq!(names.listed_stat(0), None);
    }

    #[test]
    fn the_fd_budget_runs_out_and_comes_back() {
        let b = FdBudget {
            held: AtomicUsize::new(0),
            max: 2,
        };
        assert!(b.take() && b.take());
        assert!(!b.take());
        b.give_back();
        assert!(b.take());
    }
}
