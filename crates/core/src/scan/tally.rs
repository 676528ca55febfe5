//! [`Tally`]: what a report of a scan needs, summed while the items stream past: per-producer
//! totals, the unattributed entries grouped by name shape per root ([`crate::shapes`]) and the
//! largest lone ones, never the item list.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::path::{Path, PathBuf};

use crate::inventory::{Item, Measure, ProducerTotals};
use crate::roots::{Root, RootKind};
use crate::shapes::{Grouper, ShapeGroup};

/// A group of unattributed top-level entries of one root sharing a name shape.
#[derive(Debug, Clone)]
pub struct UnattributedGroup {
    /// The root's canonical path.
    pub root: PathBuf,
    /// The kind of the root.
    pub root_kind: RootKind,
    /// The group: shape, items, sizes, mtimes, examples.
    pub group: ShapeGroup,
}

/// One of the largest unattributed top-level entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unattributed {
    /// The entry's absolute path.
    pub path: PathBuf,
    /// The kind of the root it lies in.
    pub root_kind: RootKind,
    /// Its sizes (only what no rule claims inside it).
    pub measure: Measure,
}

impl Unattributed {
    /// Report order: largest allocated bytes first, ties by path.
    fn report_order(&self, other: &Unattributed) -> Ordering {
        other
            .measure
            .allocated_bytes
            .cmp(&self.measure.allocated_bytes)
            .then_with(|| self.path.cmp(&other.path))
    }
}

/// Heap entry: the greatest is the one to drop first (last in report order).
#[derive(Debug, PartialEq, Eq)]
struct Worst(Unattributed);

impl Ord for Worst {
    fn cmp(&self, other: &Worst) -> Ordering {
        self.0.report_order(&other.0)
    }
}

impl PartialOrd for Worst {
    fn partial_cmp(&self, other: &Worst) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Per-producer totals, the unattributed entries grouped by shape, and the `top` largest
/// unattributed entries that joined no group, in memory bounded by the number of producers and
/// of distinct shapes per root ([`crate::shapes::MAX_SHAPES`]), not by the number of items.
#[derive(Debug)]
pub struct Tally {
    /// Per root (canonical path), its unattributed entries by shape.
    shapes: Vec<(PathBuf, RootKind, Grouper)>,
    /// Groups found one level down ([`super::Found::Nested`]): root, kind, group; at most
    /// [`crate::shapes::MAX_SHAPES`] per root.
    nested: Vec<(PathBuf, RootKind, ShapeGroup)>,
    /// Per producer, in the order first seen (a few dozen at most: searched in place, the last
    /// one found first, as items of one producer tend to come in runs).
    producers: Vec<ProducerTotals>,
    last: usize,
    top: usize,
}

impl Tally {
    /// An empty tally keeping the `top` largest unattributed entries.
    pub fn new(top: usize) -> Tally {
        Tally {
            shapes: Vec::new(),
            nested: Vec::new(),
            producers: Vec::new(),
            last: 0,
            top,
        }
    }

    /// Adds one item of `root`: to its producer's totals, or (unattributed) to its root's shape
    /// groups ([`crate::shapes::Grouper`]). An
    /// unattributed item that is another root nested in `root` ([`Root::is_nested_root`]) is left
    /// out: that root's own items report its contents.
    pub fn add(&mut self, root: &Root, item: &Item) {
        match item.producer.as_deref() {
            Some(id) => {
                let at = match self.producers.get(self.last) {
                    Some(t) if t.id == id => Some(self.last),
                    _ => self.producers.iter().position(|t| t.id == id),
                };
                match at {
                    Some(at) => {
                        let t = &mut self.producers[at];
                        t.items += 1;
                        t.measure.add(&item.measure);
                        self.last = at;
                    }
                    None => {
                        self.last = self.producers.len();
                        self.producers.push(ProducerTotals {
                            id: id.to_owned(),
                            items: 1,
                            measure: item.measure,
                        });
                    }
                }
            }
            // A top-level entry that is another root: that root reports what is in it.
            None if root.is_nested_root(&item.path) => {}
            None => self.add_unattributed(root, item),
        }
    }

    /// Adds what a scan of `root` found ([`super::scan_root_each_found`]): an item as
    /// [`Tally::add`], or the group one unattributed top-level dir's children form (left out when
    /// that dir is another root nested in `root`).
    pub fn add_found(&mut self, root: &Root, found: &super::Found) {
        match found {
            super::Found::Item(item) => self.add(root, item),
            super::Found::Nested(g) => {
                let Some(within) = &g.within else { return };
                if root.in_nested(Path::new(within)) {
                    return;
                }
                let held = self
                    .nested
                    .iter()
                    .filter(|(p, _, _)| *p == root.canonical)
                    .count();
                if held < crate::shapes::MAX_SHAPES {
                    self.nested
                        .push((root.canonical.clone(), root.kind, g.clone()));
                }
            }
        }
    }

    fn add_unattributed(&mut self, root: &Root, item: &Item) {
        let at = match self.shapes.last() {
            // Compared as bytes: a path's `==` walks its components, per item.
            Some((p, _, _)) if p.as_os_str() == root.canonical.as_os_str() => self.shapes.len() - 1,
            _ => match self
                .shapes
                .iter()
                .position(|(p, _, _)| *p == root.canonical)
            {
                Some(at) => at,
                None => {
                    let g = Grouper::new(self.top);
                    self.shapes.push((root.canonical.clone(), root.kind, g));
                    self.shapes.len() - 1
                }
            },
        };
        if let Some(name) = top_name(&root.canonical, &item.path) {
            let dir = !item.is_symlink && item.measure.dirs > 0;
            self.shapes[at].2.add(name, dir, &item.measure);
        }
    }

    /// Offers a lone entry to the heap of the largest.
    fn push_largest(
        largest: &mut BinaryHeap<Worst>,
        top: usize,
        root_kind: RootKind,
        path: PathBuf,
        measure: Measure,
    ) {
        if top == 0 {
            return;
        }
        let item = Unattributed {
            path,
            root_kind,
            measure,
        };
        if largest.len() >= top {
            let beats_worst = largest.peek().is_some_and(|w| {
                let worst = &w.0.measure.allocated_bytes;
                item.measure.allocated_bytes > *worst
                    || (item.measure.allocated_bytes == *worst && item.path < w.0.path)
            });
            if !beats_worst {
                return;
            }
            largest.pop();
        }
        largest.push(Worst(item));
    }

    /// Totals per producer id, largest allocated first (ties by id), as
    /// [`crate::inventory::Inventory::producers`] orders them.
    pub fn producers(&self) -> Vec<ProducerTotals> {
        let mut v: Vec<ProducerTotals> = self.producers.clone();
        v.sort_by(|a, b| {
            b.measure
                .allocated_bytes
                .cmp(&a.measure.allocated_bytes)
                .then_with(|| a.id.cmp(&b.id))
        });
        v
    }

    /// The largest unattributed entries that joined no group (at most `top`), largest allocated
    /// first, ties by path. A top-level dir whose children form a group one level down
    /// ([`Tally::unattributed_groups`]) counts only what lies outside that group, and is left out
    /// when nothing but its own entry is left (that entry then counts in the group).
    pub fn unattributed(&self) -> Vec<Unattributed> {
        self.report().1
    }

    /// The groups of unattributed entries of every root, largest allocated first (ties by root,
    /// then label): groups of top-level entries, and groups one level down
    /// ([`ShapeGroup::within`]) inside a top-level dir that is no member of a group itself. Such
    /// a group's bytes are taken out of its dir's lone entry ([`Tally::unattributed`]), so no
    /// byte is counted twice; when its members are all the dir holds, the dir's own entry counts
    /// in the group.
    pub fn unattributed_groups(&self) -> Vec<UnattributedGroup> {
        self.report().0
    }

    /// The groups and the largest lone entries, nested groups taken out of their dirs.
    fn report(&self) -> (Vec<UnattributedGroup>, Vec<Unattributed>) {
        let mut groups: Vec<UnattributedGroup> = Vec::new();
        let mut largest: BinaryHeap<Worst> = BinaryHeap::new();
        for (root, kind, g) in &self.shapes {
            let done = g.finish();
            let top = done.groups.len();
            groups.extend(done.groups.into_iter().map(|group| UnattributedGroup {
                root: root.clone(),
                root_kind: *kind,
                group,
            }));
            let at = groups.len() - top;
            // A dir that is a member of a top-level group is shown through that group.
            let nested: Vec<UnattributedGroup> = self
                .nested
                .iter()
                .filter(|(r, _, n)| {
                    let top = n.top_dir().unwrap_or_default();
                    r == root && !groups[at..].iter().any(|t| t.group.contains(top, true))
                })
                .map(|(_, _, group)| UnattributedGroup {
                    root: root.clone(),
                    root_kind: *kind,
                    group: group.clone(),
                })
                .collect();
            let first_nested = groups.len();
            groups.extend(nested);
            for lone in done.lone {
                let mut measure = lone.measure;
                // The groups in this dir and in its subdirs: the dir lists only the rest.
                let inside: Vec<usize> = (first_nested..groups.len())
                    .filter(|&i| groups[i].group.top_dir() == Some(lone.name.as_os_str()))
                    .collect();
                if let Some(&first) = inside.first() {
                    let held: Vec<&ShapeGroup> = inside.iter().map(|&i| &groups[i].group).collect();
                    let (rest, bare) = crate::shapes::rest_of(&measure, &held);
                    measure = rest;
                    if bare {
                        let n = &mut groups[first];
                        n.group.measure.allocated_bytes += measure.allocated_bytes;
                        n.group.measure.apparent_bytes += measure.apparent_bytes;
                        n.group.measure.freeable_bytes += measure.freeable_bytes;
                        n.group.measure.dirs += measure.dirs;
                        continue;
                    }
                }
                let path = root.join(&lone.name);
                Tally::push_largest(&mut largest, self.top, *kind, path, measure);
            }
        }
        // Every nested group is listed above: its dir is an unattributed item of the same root,
        // so that root has its grouper.
        groups.sort_by(|a, b| {
            b.group
                .measure
                .allocated_bytes
                .cmp(&a.group.measure.allocated_bytes)
                .then_with(|| a.root.cmp(&b.root))
                .then_with(|| a.group.label().cmp(&b.group.label()))
        });
        let mut lone: Vec<Unattributed> = largest.into_iter().map(|w| w.0).collect();
        lone.sort_by(Unattributed::report_order);
        (groups, lone)
    }
}

/// The name of the top-level entry `p` of the root `root` (as [`Path::file_name`] gives it): the
/// bytes after the root's and a `/` when they hold no other `/` (a slice and a `memchr`: parsing
/// the path's components cost the grouping as much again per item); else `file_name`.
fn top_name<'p>(root: &Path, p: &'p Path) -> Option<&'p std::ffi::OsStr> {
    use std::os::unix::ffi::OsStrExt;
    let (b, r) = (p.as_os_str().as_bytes(), root.as_os_str().as_bytes());
    match b.strip_prefix(r).and_then(|rest| rest.strip_prefix(b"/")) {
        Some(name)
            if !name.is_empty() && !name.contains(&b'/') && name != b"." && name != b".." =>
        {
            Some(std::ffi::OsStr::from_bytes(name))
        }
        _ => p.file_name(),
    }
}
