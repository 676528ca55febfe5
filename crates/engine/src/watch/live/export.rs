//! A root's live inventory handed out as [`Item`]s: whole (a reclaim plan, tests) or in chunks
//! (the periodic figures), so the whole list of items with their paths is never built for them.

use std::path::{Path, PathBuf};

use crate::inventory::{Item, RootScan};

use super::RootState;

impl RootState {
    /// The root as a [`RootScan`] holding only the items whose producer `keep` accepts (`None`:
    /// unattributed), in path order. O(items).
    pub fn to_root_scan_where(&self, keep: impl Fn(Option<&str>) -> bool) -> RootScan {
        let mut items: Vec<Item> = self
            .live()
            .filter(|&id| keep(self.producer_of(id).as_deref()))
            .map(|id| self.item_of(id))
            .collect();
        items.sort_by(|a, b| a.path.cmp(&b.path));
        RootScan {
            root: self.root.clone(),
            total: self.total,
            items,
            issues: self.issues.clone(),
            vanished: 0,
            non_utf8_names: 0,
            other_device: 0,
        }
    }

    /// The whole root as a [`RootScan`] (for a dry reclaim plan or a one-off summary). O(items).
    pub fn to_root_scan(&self) -> RootScan {
        self.to_root_scan_where(|_| true)
    }

    /// Calls `f` with the claimed items in chunks of at most `chunk` (in slot order, not path
    /// order): O(items) time, O(chunk) memory. Each chunk is allocated at its full size at once
    /// (no growth by doubling, no copies).
    pub fn for_each_claimed(&self, chunk: usize, mut f: impl FnMut(Vec<Item>)) {
        let cap = chunk.clamp(1, self.item_count().max(1));
        let mut buf = Vec::with_capacity(cap);
        for id in self.live() {
            if self.slots[id as usize].producer == super::slot::NO_PRODUCER {
                continue;
            }
            buf.push(self.item_of(id));
            if buf.len() >= chunk {
                f(std::mem::replace(&mut buf, Vec::with_capacity(cap)));
            }
        }
        if !buf.is_empty() {
            f(buf);
        }
    }

    /// Every item with its path relative to the root, in path order. O(items): for tests and
    /// one-off summaries.
    pub fn items(&self) -> Vec<(PathBuf, Item)> {
        let mut v: Vec<(PathBuf, Item)> = self
            .live()
            .map(|id| (self.rel_path_of(id), self.item_of(id)))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }
}

impl RootState {
    /// The unattributed top-level entries grouped by name shape ([`crate::shapes::Grouper`]), a
    /// nested root left out, then the groups one level down ([`RootState::set_nested`]) of the
    /// unattributed top-level dirs still live that are no member of a top-level group. O(unattributed
    /// items) time; memory bounded by the distinct shapes.
    pub fn shape_groups(&self) -> crate::shapes::Grouped {
        let mut g = crate::shapes::Grouper::new(0);
        for id in self.live() {
            if self.producer_of(id).is_some() {
                continue;
            }
            let item = self.item_of(id);
            if self.root.is_nested_root(&item.path) {
                continue;
            }
            if let Some(name) = item.path.file_name() {
                let dir = !item.is_symlink && item.measure.dirs > 0;
                g.add(name, dir, &item.measure);
            }
        }
        let mut done = g.finish();
        let top = done.groups.len();
        for group in self.nested.values() {
            let Some(within) = group.top_dir() else {
                continue;
            };
            let holder = self.item_at(Path::new(within));
            let unattributed_dir = holder
                .is_some_and(|it| it.producer.is_none() && !it.is_symlink && it.measure.dirs > 0);
            let in_top = done.groups[..top].iter().any(|t| t.contains(within, true));
            if unattributed_dir && !in_top {
                done.groups.push(group.clone());
            }
        }
        done.groups.sort_by(|a, b| {
            b.measure
                .allocated_bytes
                .cmp(&a.measure.allocated_bytes)
                .then_with(|| a.label().cmp(&b.label()))
        });
        done
    }

    /// Keeps `group` (one or two levels down: its [`crate::shapes::ShapeGroup::within`] names
    /// the dir it lies in) as what that dir's children form now, in place of the last one; a
    /// group without `within` is ignored. Past [`crate::shapes::MAX_SHAPES`] dirs, a new one is
    /// not kept.
    pub fn set_nested(&mut self, group: crate::shapes::ShapeGroup) {
        let Some(within) = group.within.clone() else {
            return;
        };
        if self.nested.len() < crate::shapes::MAX_SHAPES || self.nested.contains_key(&within) {
            self.nested.insert(within, group);
        }
    }

    /// The groups kept in the top-level dir `top` and in its subdirs (one and two levels down).
    pub fn nested_groups(&self, top: &std::ffi::OsStr) -> Vec<&crate::shapes::ShapeGroup> {
        self.nested
            .values()
            .filter(|g| g.top_dir() == Some(top))
            .collect()
    }

    /// Keeps `groups` as all that the top-level dir `top` and its subdirs hold now (what its
    /// last measure found), forgetting the groups kept there before.
    pub fn replace_nested(
        &mut self,
        top: &std::ffi::OsStr,
        groups: Vec<crate::shapes::ShapeGroup>,
    ) {
        self.forget_nested(top);
        for g in groups {
            self.set_nested(g);
        }
    }

    /// Forgets the groups in the top-level dir `top` and in its subdirs (its children form none
    /// any more, or it is gone).
    pub fn forget_nested(&mut self, top: &std::ffi::OsStr) {
        self.nested.retain(|_, g| g.top_dir() != Some(top));
    }
}
