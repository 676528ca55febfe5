//! The parallel walk: lists a dir, `lstat`s its entries relative to the dir's fd, and measures
//! subtrees in parallel (rayon), accumulating per item instead of keeping per-entry records.

use std::fs::{DirEntry, Metadata};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::SystemTime;

use rayon::prelude::*;

pub(crate) use super::acc::Acc;
use super::progress::ScanProgress;
use super::stat::{birth_time, failure, stat_entry, LinkSet, Stat};
use super::{Claim, Classify};
use crate::inventory::{Captures, Item, ScanIssue};
use crate::roots::RootKind;

/// Entries of a dir `lstat`ed while it is listed; past this the rest is `lstat`ed in parallel.
const SERIAL_ENTRIES: usize = 64;

/// Entries of a big dir listed (and `lstat`ed, and their subdirs walked) per batch: bounds the
/// walk's buffers (about 0.5 KiB per queued subdir) whatever the dir's size.
const BATCH_ENTRIES: usize = 4096;

/// Entries per parallel `lstat` task of a big dir.
const STAT_CHUNK: usize = 256;

/// The state of one walk (a root scan, or one item re-measured).
pub(crate) struct Walker<'a, C: ?Sized> {
    kind: RootKind,
    classifier: &'a C,
    max_depth: usize,
    dev: u64,
    private_from: u64,
    links: LinkSet,
    /// Called once per finished item (from any walk thread).
    sink: &'a (dyn Fn(Item) + Sync + 'a),
    progress: &'a ScanProgress,
    /// A `container-temp` root's bundle id, set as every item's `captures.bundle`.
    bundle: Option<String>,
    total: Mutex<Acc>,
    pub(crate) items: AtomicU64,
    issues: Mutex<Vec<ScanIssue>>,
    pub(crate) vanished: AtomicU64,
    pub(crate) non_utf8_names: AtomicU64,
    pub(crate) other_device: AtomicU64,
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
            sink,
            progress,
            bundle,
            total: Mutex::new(Acc::default()),
            items: AtomicU64::new(0),
            issues: Mutex::new(Vec::new()),
            vanished: AtomicU64::new(0),
            non_utf8_names: AtomicU64::new(0),
            other_device: AtomicU64::new(0),
        }
    }

    /// Deepest level at which entries are classified.
    pub(crate) fn max_depth(&self) -> usize {
        self.max_depth
    }

    /// The entry's own sizes, hard links counted once per walk. Its freeable bytes are its
    /// allocated bytes unless it is a regular file of at least the walk's `private_from` bytes: then
    /// its private bytes ([`crate::platform::private_bytes`] of `path()`), when the OS can tell.
    pub(crate) fn own(&self, md: &Metadata, path: impl FnOnce() -> PathBuf) -> Acc {
        let mut acc = Acc::of(md, &self.links);
        if md.is_file() && acc.allocated_bytes >= self.private_from.max(1) {
            if let Ok(private) = crate::platform::private_bytes(&path()) {
                acc.freeable_bytes = private.min(acc.allocated_bytes);
            }
        }
        acc
    }

    /// The sum of the items' accumulators (structure dirs included) and what could not be read.
    pub(crate) fn into_found(self) -> (Acc, Vec<ScanIssue>) {
        let total = self.total.into_inner().unwrap_or_else(|p| p.into_inner());
        let issues = self.issues.into_inner().unwrap_or_else(|p| p.into_inner());
        (total, issues)
    }

    fn add_total(&self, acc: Acc) {
        let mut total = self.total.lock().unwrap_or_else(|p| p.into_inner());
        *total = total.merge(acc);
    }

    fn report(&self, issue: Option<ScanIssue>) {
        match issue {
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

    /// Measures the contents of `dir` (at `depth`; the root is 0), not its own entry. `rel` is
    /// `dir`'s path relative to the root while its children are still to be classified, else `None`.
    /// Claimed entries and top-level entries become items and are left out of the returned sum.
    ///
    /// The first [`SERIAL_ENTRIES`] entries are `lstat`ed (and classified) as they are listed; the
    /// rest of a big dir is listed [`BATCH_ENTRIES`] at a time, each batch `lstat`ed in parallel
    /// chunks and its subdirs walked (in parallel) before the next batch is listed, so one huge dir
    /// neither serializes the walk nor holds its whole listing: the walk's buffers are bounded by
    /// the batch, not by the dir. Only subdirs are kept (as small [`Sub`]s). A dir whose listing
    /// ends within its first batch is closed before its subdirs are walked, so open dir fds grow
    /// only with the number of nested dirs of more than [`BATCH_ENTRIES`] entries.
    pub(crate) fn children(&self, dir: &Path, rel: Option<&Path>, depth: usize) -> Acc {
        if self.progress.is_cancelled() {
            return Acc::default();
        }
        let listing = match std::fs::read_dir(dir) {
            Ok(l) => l,
            Err(e) => {
                self.report(failure(dir, "read dir", e));
                return Acc::default();
            }
        };
        let mut listing = Some(listing);
        let mut acc = Acc::default();
        let mut subs = Vec::new();
        let mut listed = 0u64;
        for entry in listing.iter_mut().flatten().take(SERIAL_ENTRIES) {
            listed += 1;
            match entry {
                Ok(e) => self.entry(&e, rel, depth + 1, &mut acc, &mut subs),
                Err(e) => self.report(failure(dir, "read dir", e)),
            }
        }
        self.progress.add_entries(listed);
        if listed < SERIAL_ENTRIES as u64 {
            listing = None;
        }
        loop {
            let mut batch: Vec<DirEntry> = Vec::new();
            let mut taken = 0;
            if let Some(l) = listing.as_mut() {
                batch.reserve(BATCH_ENTRIES);
                for entry in l.by_ref().take(BATCH_ENTRIES) {
                    taken += 1;
                    match entry {
                        Ok(e) => batch.push(e),
                        Err(e) => self.report(failure(dir, "read dir", e)),
                    }
                }
            }
            if taken < BATCH_ENTRIES {
                listing = None;
            }
            // Subdirs in groups (the serial part, then one per chunk), walked without concatenating.
            let mut groups: Vec<Vec<Sub>> = Vec::new();
            if !batch.is_empty() {
                let chunks: Vec<(Acc, Vec<Sub>)> = batch
                    .par_chunks(STAT_CHUNK)
                    .map(|chunk| {
                        let mut acc = Acc::default();
                        let mut subs = Vec::new();
                        for e in chunk {
                            self.entry(e, rel, depth + 1, &mut acc, &mut subs);
                        }
                        self.progress.add_entries(chunk.len() as u64);
                        (acc, subs)
                    })
                    .collect();
                drop(batch);
                groups.reserve(chunks.len() + 1);
                for (more, more_subs) in chunks {
                    acc = acc.merge(more);
                    groups.push(more_subs);
                }
            }
            acc = acc.merge(self.descend_all(std::mem::take(&mut subs), groups, depth + 1));
            if listing.is_none() || self.progress.is_cancelled() {
                return acc;
            }
        }
    }

    /// Walks the queued subdirs `subs` and `groups` (at `depth`), in parallel when there are
    /// several: the sum to add to their parent.
    fn descend_all(&self, mut subs: Vec<Sub>, mut groups: Vec<Vec<Sub>>, depth: usize) -> Acc {
        match (subs.len(), groups.is_empty()) {
            (0, true) => Acc::default(),
            (1, true) => subs
                .pop()
                .map_or_else(Acc::default, |s| self.descend(s, depth)),
            _ => {
                groups.push(subs);
                groups
                    .into_par_iter()
                    .flat_map(Vec::into_par_iter)
                    .map(|s| self.descend(s, depth))
                    .reduce(Acc::default, Acc::merge)
            }
        }
    }

    /// One listed entry at `depth`: classified, turned into an item, summed into `acc`, or queued in
    /// `subs` when there is a subtree to walk.
    fn entry(
        &self,
        e: &DirEntry,
        parent_rel: Option<&Path>,
        depth: usize,
        acc: &mut Acc,
        subs: &mut Vec<Sub>,
    ) {
        let name = e.file_name();
        if name.to_str().is_none() {
            self.non_utf8_names.fetch_add(1, Ordering::Relaxed);
        }
        let md = match stat_entry(e) {
            Stat::Found(md) => md,
            Stat::Vanished => {
                self.vanished.fetch_add(1, Ordering::Relaxed);
                return;
            }
            Stat::Failed(issue) => {
                self.report(Some(issue));
                return;
            }
        };
        if md.dev() != self.dev {
            self.other_device.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let head = self.head(&md, || e.path());
        let rel = parent_rel
            .filter(|_| depth <= self.max_depth)
            .map(|p| p.join(&name));
        let claim = rel
            .as_deref()
            .and_then(|r| self.classifier.classify(self.kind, r));
        let inner_rel = rel.filter(|_| claim.is_none() && depth < self.max_depth);
        let next = if claim.is_some() || depth == 1 {
            Next::Item(claim)
        } else {
            *acc = acc.merge(head.own);
            Next::Plain
        };
        if head.is_dir {
            subs.push(Sub {
                path: e.path(),
                head,
                rel: inner_rel,
                next,
            });
        } else if let Next::Item(claim) = next {
            self.finish(e.path(), head, claim, None, depth);
        }
    }

    /// Walks a queued subdir at `depth`: the sum to add to its parent (nothing for an item).
    fn descend(&self, sub: Sub, depth: usize) -> Acc {
        match sub.next {
            Next::Plain => self.children(&sub.path, sub.rel.as_deref(), depth),
            Next::Item(claim) => {
                self.finish(sub.path, sub.head, claim, sub.rel.as_deref(), depth);
                Acc::default()
            }
        }
    }

    fn head(&self, md: &Metadata, path: impl FnOnce() -> PathBuf) -> Head {
        Head {
            own: self.own(md, path),
            birth: birth_time(md),
            dev: md.dev(),
            ino: md.ino(),
            is_dir: md.is_dir(),
            is_symlink: md.file_type().is_symlink(),
        }
    }

    /// Measures the item at `path` (whose metadata is `md`, at `depth`) and records it. `claim` is
    /// the rule claiming it (`None`: an unattributed top-level entry, whose claimed descendants are
    /// classified through `rel` and left out of its measure).
    pub(crate) fn item(
        &self,
        path: PathBuf,
        md: &Metadata,
        claim: Option<Claim>,
        rel: Option<&Path>,
        depth: usize,
    ) {
        let head = self.head(md, || path.clone());
        self.finish(path, head, claim, rel, depth);
    }

    fn finish(
        &self,
        path: PathBuf,
        head: Head,
        claim: Option<Claim>,
        rel: Option<&Path>,
        depth: usize,
    ) {
        let mut acc = head.own;
        let mut unclaimed_inside = false;
        if head.is_dir {
            let inside = self.children(&path, rel, depth);
            unclaimed_inside = inside.files > 0 || inside.dirs > 0 || inside.allocated_bytes > 0;
            acc = acc.merge(inside);
        }
        let (producer, captures) = match claim {
            Some(c) => (Some(c.producer), c.captures),
            None => {
                let structure = path
                    .file_name()
                    .filter(|_| depth == 1)
                    .and_then(|name| self.classifier.structure_of(self.kind, Path::new(name)));
                if structure.is_some() && !unclaimed_inside {
                    // A dir a producer's items live in (`com.apple.gpuarchiver`), holding nothing
                    // but claimed items: neither an item of its own (it would inflate the
                    // producer's item count) nor unattributed. Its own entry stays in the total.
                    self.add_total(acc);
                    return;
                }
                (None, Captures::default())
            }
        };
        let mut captures = captures;
        if let Some(bundle) = &self.bundle {
            captures.bundle = Some(bundle.clone());
        }
        let item = Item {
            path,
            producer,
            captures,
            measure: acc.into_measure(head.birth),
            is_symlink: head.is_symlink,
            dev: head.dev,
            ino: head.ino,
        };
        self.add_total(acc);
        self.items.fetch_add(1, Ordering::Relaxed);
        self.progress.add_item();
        (self.sink)(item);
    }
}

/// What the walk keeps of an entry's metadata.
struct Head {
    own: Acc,
    birth: Option<SystemTime>,
    dev: u64,
    ino: u64,
    is_dir: bool,
    is_symlink: bool,
}

/// What to do with a queued subdir.
enum Next {
    /// Walk it and add its contents to the parent's sum (its own entry is already added).
    Plain,
    /// Measure it as an item (claimed, or unattributed when `None`).
    Item(Option<Claim>),
}

/// A subdir queued for walking once its parent's listing is done.
struct Sub {
    path: PathBuf,
    head: Head,
    rel: Option<PathBuf>,
    next: Next,
}
