//! The parallel walk, fd-relative: each dir is opened relative to its parent's fd
//! (`openat(O_NOFOLLOW | O_DIRECTORY)`), listed through its fd, and its entries `lstat`ed relative
//! to it, so no path is built per entry (only per item or issue, from the chain of names in
//! [`At`]). Subtrees are measured in parallel (rayon), accumulating per item instead of keeping
//! per-entry records.

use std::ffi::{CStr, OsStr};
use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::SystemTime;

use rayon::prelude::*;

pub(crate) use super::dir_chain::At;
pub(crate) use super::dir_chain::FdBudget;
use super::dir_chain::{Names, RelBuf};
use super::progress::ScanProgress;
use super::shard::Merged;
use super::stat::{failure, LinkSet};
pub(crate) use super::sums::Acc;
use super::{Claim, Classify, DirOwn};
use crate::inventory::{Captures, Item, ScanIssue};
use crate::platform::{self, Listing, ScanKind, ScanStat};
use crate::roots::RootKind;
use crate::shapes::{Nested, ShapeGroup};

mod list;
mod pipeline;

/// Entries of a dir `lstat`ed while it is listed; past this the rest is `lstat`ed in parallel.
const SERIAL_ENTRIES: usize = 64;

/// Entries of a big dir listed (and `lstat`ed, and their subdirs walked) per batch: bounds the
/// walk's buffers (about 100 bytes per queued subdir) whatever the dir's size.
const BATCH_ENTRIES: usize = 1024;

/// Entries per parallel `lstat` task of a big dir.
const STAT_CHUNK: usize = 256;

/// Batches of a big dir walked at once while it is listed on: bounds the walk's buffers at this
/// many batches per big dir being listed.
const BATCHES_IN_FLIGHT: usize = 4;

/// The state of one walk (a root scan, or one item re-measured).
pub(crate) struct Walker<'a, C: ?Sized> {
    kind: RootKind,
    classifier: &'a C,
    max_depth: usize,
    dev: u64,
    private_from: u64,
    links: LinkSet,
    fds: FdBudget,
    /// Called once per finished item (from any walk thread).
    sink: &'a (dyn Fn(Item) + Sync + 'a),
    progress: &'a ScanProgress,
    /// A `container-temp` root's bundle id, set as every item's `captures.bundle`.
    bundle: Option<String>,
    /// Other roots inside this one, relative to it ([`crate::roots::Root::nested`]): nothing at or
    /// below them is classified (the innermost root owns its items).
    nested: &'a [PathBuf],
    total: Merged<Acc>,
    issues: Mutex<Vec<ScanIssue>>,
    pub(crate) vanished: AtomicU64,
    pub(crate) non_utf8_names: AtomicU64,
    pub(crate) other_device: AtomicU64,
    /// When set ([`Walker::record_dirs`]): the own entries of the dirs whose entries it classified.
    dirs: Option<Mutex<Vec<DirOwn>>>,
    /// When set ([`Walker::with_nested_groups`]): gets the group the children of an unattributed
    /// top-level dir form, with the dir's name.
    nested_groups: Option<&'a NestedSink<'a>>,
}

/// Gets the group the children of an unattributed top-level dir form, with the dir's name.
pub(crate) type NestedSink<'a> = dyn Fn(&OsStr, ShapeGroup) + Sync + 'a;

/// How to open a dir about to be listed.
#[derive(Clone, Copy)]
pub(crate) enum Open<'a> {
    /// The entry of this name in the dir of this fd.
    At(BorrowedFd<'a>, &'a CStr),
    /// By its path ([`At::path`]): the start of a walk, or a parent closed to save fds.
    Path,
}

/// The dir whose queued subdirs are walked: its fd when it is still open, its place, and the
/// names its subdirs were queued with.
#[derive(Clone, Copy)]
struct Parent<'p> {
    fd: Option<BorrowedFd<'p>>,
    at: &'p At<'p>,
    serial: &'p Names,
    batch: &'p Names,
}

impl<'a, C: Classify + ?Sized> Walker<'a, C> {
    /// A walk of a root of `kind` on device `dev`. Regular files of at least `private_from`
    /// allocated bytes have their private bytes asked for (`u64::MAX`: none; see
    /// [`crate::platform::private_bytes`]). Each finished item goes to `sink`, with `bundle` as its
    /// `captures.bundle` when given; `progress` counts entries and is checked for a cancel.
    pub(crate) fn new(
        kind: RootKind,
        classifier: &'a C,
        dev: u64,
        private_from: u64,
        sink: &'a (dyn Fn(Item) + Sync + 'a),
        progress: &'a ScanProgress,
        bundle: Option<String>,
    ) -> Walker<'a, C> {
        Walker {
            kind,
            classifier,
            max_depth: classifier.max_depth(kind),
            dev,
            private_from,
            links: LinkSet::new(),
            fds: FdBudget::new(),
            sink,
            progress,
            bundle,
            nested: &[],
            total: Merged::default(),
            issues: Mutex::new(Vec::new()),
            vanished: AtomicU64::new(0),
            non_utf8_names: AtomicU64::new(0),
            other_device: AtomicU64::new(0),
            dirs: None,
            nested_groups: None,
        }
    }

    /// The walk grouping the children of each unattributed top-level dir by shape as it sums them
    /// ([`crate::shapes::Nested`]), handing the group they form, if any, to `sink`.
    pub(crate) fn with_nested_groups(mut self, sink: &'a NestedSink<'a>) -> Walker<'a, C> {
        self.nested_groups = Some(sink);
        self
    }

    /// The walk with nothing classified at or below `nested` (paths relative to the root: the
    /// other roots inside it, [`crate::roots::Root::nested`]).
    pub(crate) fn with_nested(mut self, nested: &'a [PathBuf]) -> Walker<'a, C> {
        self.nested = nested;
        self
    }

    /// Deepest level at which entries are classified.
    pub(crate) fn max_depth(&self) -> usize {
        self.max_depth
    }

    /// The entry's own sizes, hard links counted once per walk. Its freeable bytes are its
    /// allocated bytes unless it is a regular file of at least the walk's `private_from` bytes: then
    /// its private bytes, when the OS can tell: those the listing returned with its stat (macOS
    /// bulk listing), else [`crate::platform::private_bytes`] of `path()` (one call per file).
    pub(crate) fn own(&self, st: &ScanStat, path: impl FnOnce() -> PathBuf) -> Acc {
        let mut acc = Acc::of(st, &self.links);
        if st.kind == ScanKind::File && acc.allocated_bytes >= self.private_from.max(1) {
            let private = match st.private_bytes {
                Some(listed) => Some(listed),
                None => platform::private_bytes(&path()).ok(),
            };
            if let Some(private) = private {
                acc.freeable_bytes = private.min(acc.allocated_bytes);
            }
        }
        acc
    }

    /// The sum of the items' accumulators (structure dirs included) and what could not be read.
    pub(crate) fn into_found(self) -> (Acc, Vec<ScanIssue>) {
        let total = self.total.into_fold(Acc::default(), Acc::merge);
        let issues = self.issues.into_inner().unwrap_or_else(|p| p.into_inner());
        (total, issues)
    }

    fn add_total(&self, acc: Acc) {
        self.total.with(|total| *total = total.merge(acc));
    }

    /// Reports `e` (of `op` on `path()`), or counts a vanished entry when `e` says it is gone.
    fn fail(&self, path: impl FnOnce() -> PathBuf, op: &str, e: io::Error) {
        match failure(&path(), op, e) {
            Some(i) => self
                .issues
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(i),
            None => {
                self.vanished.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Measures the contents of the dir at `path` (`depth`; the root is 0), as [`Walker::children`].
    pub(crate) fn contents(&self, path: &Path, rel: Option<&Path>, depth: usize) -> Acc {
        self.children(Open::Path, &At::start(path), rel, depth)
    }

    /// Measures the contents of the dir at `at` (`depth`; the root is 0), opened as `open` says,
    /// not its own entry. `rel` is its path relative to the root while its children are still to
    /// be classified, else `None`. Claimed entries and top-level entries become items and are left
    /// out of the returned sum. A dir that vanished or was replaced by a non-dir (a symlink is
    /// never followed: `O_NOFOLLOW`) since its `lstat` counts as vanished.
    fn children(&self, open: Open<'_>, at: &At<'_>, rel: Option<&Path>, depth: usize) -> Acc {
        if self.progress.is_cancelled() {
            return Acc::default();
        }
        let fd = match open {
            Open::At(dir, name) => platform::open_dir_at(dir, name),
            Open::Path => platform::open_dir_path(&at.path()),
        };
        let fd = match fd {
            Ok(fd) => fd,
            Err(e) if platform::is_replaced(&e) => {
                self.vanished.fetch_add(1, Ordering::Relaxed);
                return Acc::default();
            }
            Err(e) => {
                self.fail(|| at.path(), "read dir", e);
                return Acc::default();
            }
        };
        self.list(fd, at, rel, depth)
    }

    /// One listed entry at `depth`: classified, turned into an item, summed into `acc`, or queued in
    /// `subs` when there is a subtree to walk. `rel` holds the dir's path relative to the root
    /// while its entries are classified.
    fn entry(
        &self,
        e: Entry<'_, '_>,
        keep: Keep<'_>,
        rel: Option<&mut RelBuf>,
        depth: usize,
        acc: &mut Acc,
        subs: &mut Vec<Sub>,
    ) {
        let name = OsStr::from_bytes(e.name.to_bytes());
        if !name.as_bytes().is_ascii() && std::str::from_utf8(name.as_bytes()).is_err() {
            self.non_utf8_names.fetch_add(1, Ordering::Relaxed);
        }
        // The listing's own `lstat` where it handed one over (a big dir's batches on macOS);
        // inside the listing's callback `scan_stat_at` finds it by itself.
        let st = match e
            .listed
            .map_or_else(|| platform::scan_stat_at(e.dir, e.name), Ok)
        {
            Ok(st) => st,
            Err(err) => {
                self.fail(|| e.at.join(name), "lstat", err);
                return;
            }
        };
        if st.dev != self.dev {
            self.other_device.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let head = self.head(&st, || e.at.join(name));
        // Inside another root nested in this one, nothing is classified: its items are that root's.
        let rel = rel
            .filter(|_| depth <= self.max_depth)
            .map(|r| r.with(name))
            .filter(|r| !self.nested.iter().any(|n| r.starts_with(n)));
        let has = |inside: &str| head.is_dir && super::contains::has_entry(e.dir, e.name, inside);
        let claim = rel.and_then(|r| self.classifier.classify_in(self.kind, r, &has));
        let next = if claim.is_some() || depth == 1 {
            Next::Item(claim)
        } else {
            *acc = acc.merge(head.own);
            Next::Plain
        };
        // A child of a dir whose children are grouped: a file counts now, a dir once walked.
        if let (Some(kids), Next::Plain, false) = (e.at.kids, &next, head.is_dir) {
            let m = head.own.into_measure(head.birth);
            kids.lock()
                .unwrap_or_else(|p| p.into_inner())
                .add(name, false, &m);
        }
        if head.is_dir {
            let inner = matches!(next, Next::Plain | Next::Item(None)) && depth < self.max_depth;
            if let (Some(rel), Next::Plain, true) = (rel, &next, inner) {
                self.record_dir(rel, &head.own);
            }
            let name = match keep {
                Keep::Copy(names) => SubName::Serial(names.push(e.name)),
                Keep::Batch(span) => SubName::Batch(span),
            };
            subs.push(Sub {
                name,
                head,
                rel: rel.filter(|_| inner).map(Path::to_path_buf),
                next,
            });
        } else if let Next::Item(claim) = next {
            let at = At::child(e.at, name);
            self.finish(Open::Path, &at, head, claim, None, depth);
        }
    }

    fn head(&self, st: &ScanStat, path: impl FnOnce() -> PathBuf) -> Head {
        Head {
            own: self.own(st, path),
            birth: st.born,
            dev: st.dev,
            ino: st.ino,
            is_dir: st.is_dir(),
            is_symlink: st.kind == ScanKind::Symlink,
        }
    }

    /// Measures the item at `path` (whose `lstat` is `st`, at `depth`) and records it. `claim` is
    /// the rule claiming it (`None`: an unattributed top-level entry, whose claimed descendants are
    /// classified through `rel` and left out of its measure).
    pub(crate) fn item(
        &self,
        path: &Path,
        st: &ScanStat,
        claim: Option<Claim>,
        rel: Option<&Path>,
        depth: usize,
    ) {
        let head = self.head(st, || path.to_path_buf());
        self.finish(Open::Path, &At::start(path), head, claim, rel, depth);
    }

    /// Measures the item at `at` (its contents opened as `open` says when it is a dir) and hands it
    /// to the sink, or adds a structure dir to the total.
    fn finish(
        &self,
        open: Open<'_>,
        at: &At<'_>,
        head: Head,
        claim: Option<Claim>,
        rel: Option<&Path>,
        depth: usize,
    ) {
        let mut acc = head.own;
        let mut unclaimed_inside = false;
        // An unattributed top-level dir: its children grouped by shape as they are summed (not
        // one that is, or holds, another root: what lies there is that root's).
        let kids = (depth == 1
            && claim.is_none()
            && head.is_dir
            && self.nested_groups.is_some()
            && !self.nested.iter().any(|n| {
                let top = Path::new(at.name());
                n.starts_with(if at.is_start() {
                    top.file_name().map_or(top, Path::new)
                } else {
                    top
                })
            }))
        .then(|| Mutex::new(Nested::new()));
        if head.is_dir {
            let marked = kids.as_ref().map(|k| at.with_kids(k));
            let inside = self.children(open, marked.as_ref().unwrap_or(at), rel, depth);
            unclaimed_inside = inside.files > 0 || inside.dirs > 0 || inside.allocated_bytes > 0;
            acc = acc.merge(inside);
        }
        let (producer, captures) = match claim {
            Some(c) => (Some(c.producer), c.captures),
            None => {
                let name = if at.is_start() {
                    Path::new(at.name()).file_name()
                } else {
                    Some(at.name())
                };
                let structure = name
                    .filter(|_| depth == 1)
                    .and_then(|name| self.classifier.structure_of(self.kind, Path::new(name)));
                if structure.is_some() && !unclaimed_inside {
                    // A dir a producer's items live in (`com.apple.gpuarchiver`), holding nothing
                    // but claimed items: neither an item of its own (it would inflate the
                    // producer's item count) nor unattributed. Its own entry stays in the total.
                    self.add_total(acc);
                    return;
                }
                // With more inside (`Homebrew/downloads` itself, `mpsgraph-cache`), the
                // producer's item: attributed to it, kept by reclaim (`structure`).
                if let (None, Some(name), Some(kids), Some(sink)) =
                    (&structure, name, kids, self.nested_groups)
                {
                    let kids = kids.into_inner().unwrap_or_else(|p| p.into_inner());
                    for g in kids.finish_all(name) {
                        sink(name, g);
                    }
                }
                (structure, Captures::default())
            }
        };
        let mut captures = captures;
        if let Some(bundle) = &self.bundle {
            captures.bundle = Some(bundle.clone());
        }
        let item = Item {
            path: at.path(),
            producer,
            captures,
            measure: acc.into_measure(head.birth),
            is_symlink: head.is_symlink,
            dev: head.dev,
            ino: head.ino,
        };
        self.add_total(acc);
        self.progress.add_item();
        (self.sink)(item);
    }
}

/// A listed entry: its dir's fd and place, and its name.
#[derive(Clone, Copy)]
struct Entry<'d, 'n> {
    dir: BorrowedFd<'d>,
    at: &'d At<'d>,
    name: &'n CStr,
    /// The `lstat` its listing handed over with it, if any.
    listed: Option<ScanStat>,
}

/// What the walk keeps of an entry's metadata.
#[derive(Clone, Copy)]
struct Head {
    own: Acc,
    birth: Option<SystemTime>,
    dev: u64,
    ino: u64,
    is_dir: bool,
    is_symlink: bool,
}

// --- The subdirs a listing queues ---------------------------------------------------------------

// What the walk queues of a listed subdir until its parent's listing (or batch) is done.

/// What to do with a queued subdir.
enum Next {
    /// Walk it and add its contents to the parent's sum (its own entry is already added).
    Plain,
    /// Measure it as an item (claimed, or unattributed when `None`).
    Item(Option<Claim>),
}

/// Where a listed name is kept for a subdir queued with it.
enum Keep<'a> {
    /// Copied into this buffer (the name is in the listing's buffer, about to be reused).
    Copy(&'a mut Names),
    /// Already at this span of the batch's names.
    Batch((usize, usize)),
}

/// A queued subdir's name: a span of its parent's serial or batch names.
#[derive(Clone, Copy)]
enum SubName {
    Serial((usize, usize)),
    Batch((usize, usize)),
}

/// A subdir queued for walking once its parent's listing (or batch) is done.
struct Sub {
    name: SubName,
    head: Head,
    rel: Option<PathBuf>,
    next: Next,
}

// --- The own entries of the dirs a walk classified --------------------------------------------

// Kept for the watcher's baselines (see [`super::measure_entry_with`]).
impl<C: Classify + ?Sized> Walker<'_, C> {
    /// Makes the walk keep the own entry of every unclaimed dir whose entries it classifies (less
    /// than [`Walker::max_depth`] deep), as it counted it ([`Walker::take_dirs`]).
    pub(crate) fn record_dirs(mut self) -> Self {
        self.dirs = Some(Mutex::new(Vec::new()));
        self
    }

    /// The walk with a budget of `max` fds instead of a quarter of the open-file limit.
    #[cfg(test)]
    pub(crate) fn with_fd_budget(mut self, max: usize) -> Self {
        self.fds = FdBudget::with_max(max);
        self
    }

    /// The own entries kept by [`Walker::record_dirs`] (empty when not asked), in no order.
    pub(crate) fn take_dirs(&self) -> Vec<DirOwn> {
        self.dirs.as_ref().map_or_else(Vec::new, |d| {
            std::mem::take(&mut *d.lock().unwrap_or_else(|p| p.into_inner()))
        })
    }

    /// Keeps the own entry `own` of the dir at `rel` (relative to the root) when asked to.
    pub(super) fn record_dir(&self, rel: &Path, own: &Acc) {
        if let Some(dirs) = &self.dirs {
            let own = DirOwn::of(rel, own);
            dirs.lock().unwrap_or_else(|p| p.into_inner()).push(own);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "walk_tests.rs"]
mod tests;
