//! The pieces of a root's live inventory: the totals and largest items of a
//! group (a producer, or the unattributed entries), and a dir's own entry between root and item.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::inventory::Measure;

/// The own entry of a directory between the root and an item (its `lstat` sizes), kept so that a
/// change below it updates the totals without walking its siblings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DirEntryStat {
    /// `st_blocks * 512`.
    pub allocated_bytes: u64,
    /// `st_size`.
    pub apparent_bytes: u64,
}

impl DirEntryStat {
    /// `lstat` of `path`; `None` when it cannot be read (gone or denied).
    pub fn of(path: &Path) -> Option<DirEntryStat> {
        let md = std::fs::symlink_metadata(path).ok()?;
        Some(DirEntryStat {
            allocated_bytes: md.blocks() * 512,
            apparent_bytes: md.size(),
        })
    }
}

/// Items listed per producer in a snapshot (and kept per producer per root).
pub const TOP_ITEMS: usize = 10;
/// Unattributed entries listed in a snapshot (and kept per root).
pub const TOP_UNATTRIBUTED: usize = 20;

/// Item count and summed sizes of a group of items. Times in `measure` are not kept by deltas.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Number of items.
    pub items: u64,
    /// Summed sizes.
    pub measure: Measure,
}

/// The largest items of a group: `(allocated bytes, relative path)`, largest first, ties by path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopList {
    /// At most the list's capacity; when not stale, exactly the group's largest items.
    pub items: Vec<(u64, Box<Path>)>,
    /// True when an item of a full list shrank or went away: the list must be recomputed.
    pub stale: bool,
}

impl TopList {
    pub(super) fn rank(a: &(u64, Box<Path>), b: &(u64, Box<Path>)) -> std::cmp::Ordering {
        b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1))
    }

    /// Takes `rel` out (its allocated bytes were `old_bytes`), then offers it again with
    /// `new_bytes` (`None`: it left the group). `cap` is the list's capacity.
    pub(super) fn update(&mut self, rel: &Path, new_bytes: Option<u64>, cap: usize) {
        let full = self.items.len() >= cap;
        let pos = self.items.iter().position(|(_, p)| &**p == rel);
        if let Some(pos) = pos {
            let (old_bytes, _) = self.items.remove(pos);
            // Below the last listed item there may be one larger than what it became.
            if full && new_bytes.map_or(true, |b| b < old_bytes) {
                self.stale = true;
            }
        }
        if self.stale {
            return;
        }
        if let Some(bytes) = new_bytes {
            let cand = (bytes, Box::from(rel));
            let fits = self.items.len() < cap
                || self
                    .items
                    .last()
                    .is_some_and(|last| Self::rank(&cand, last).is_lt());
            if fits {
                let at = self.items.partition_point(|x| Self::rank(x, &cand).is_lt());
                self.items.insert(at, cand);
                self.items.truncate(cap);
            }
        }
    }
}

/// Totals and largest items of one producer (or of the unattributed entries) in one root.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Group {
    /// Count and sizes.
    pub totals: Totals,
    /// The largest items.
    pub top: TopList,
}

/// Takes `other`'s counts out of `m` (saturating); times are left as they are.
pub(super) fn sub(m: &mut Measure, other: &Measure) {
    m.allocated_bytes = m.allocated_bytes.saturating_sub(other.allocated_bytes);
    m.apparent_bytes = m.apparent_bytes.saturating_sub(other.apparent_bytes);
    m.freeable_bytes = m.freeable_bytes.saturating_sub(other.freeable_bytes);
    m.files = m.files.saturating_sub(other.files);
    m.dirs = m.dirs.saturating_sub(other.dirs);
}

/// Moves `m` by a dir entry's own change; a dir's blocks are never shared, so they are freeable.
pub(super) fn shift(m: &mut Measure, d_alloc: i64, d_apparent: i64) {
    m.allocated_bytes = m.allocated_bytes.saturating_add_signed(d_alloc);
    m.freeable_bytes = m.freeable_bytes.saturating_add_signed(d_alloc);
    m.apparent_bytes = m.apparent_bytes.saturating_add_signed(d_apparent);
}

/// A member of a group of unattributed entries as the writer's evidence reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMember {
    /// Its name (one path component).
    pub name: std::ffi::OsString,
    /// Its absolute path.
    pub path: std::path::PathBuf,
    /// When it was born: the inventory's [`Measure::birth_time`], the top entry's birth time
    /// (`statx` on Linux, `st_birthtime` on macOS) where the file system keeps one, else the
    /// oldest mtime seen in its subtree (a member's creation leaves its dir's mtime at least that
    /// old). `None` for a member measured with no time at all.
    pub born: Option<std::time::SystemTime>,
}

impl super::RootState {
    /// For each of `groups` (of this root), its unattributed top-level members, at most `cap`
    /// each (the first met in the inventory's order): one pass over the live items, each
    /// unclaimed one matched against the groups' shapes by its name's bytes. The members of a
    /// group one level down are not items: its dir is listed (its first `cap` members, born at
    /// their `lstat`'s birth time, else mtime).
    pub fn group_members(
        &self,
        groups: &[&crate::shapes::ShapeGroup],
        cap: usize,
    ) -> Vec<Vec<GroupMember>> {
        let mut out: Vec<Vec<GroupMember>> = vec![Vec::new(); groups.len()];
        if groups.is_empty() || cap == 0 {
            return out;
        }
        for (gi, g) in groups.iter().enumerate() {
            if let Some(within) = &g.within {
                out[gi] = listed_members(&self.root.canonical.join(within), g, cap);
            }
        }
        if groups.iter().all(|g| g.within.is_some()) {
            return out;
        }
        for id in self.live() {
            if self.producer_of(id).is_some() {
                continue;
            }
            let item = self.item_of(id);
            if self.root.is_nested_root(&item.path) {
                continue;
            }
            let Some(name) = item.path.file_name() else {
                continue;
            };
            let dir = !item.is_symlink && item.measure.dirs > 0;
            let Some(gi) = groups
                .iter()
                .position(|g| g.within.is_none() && g.contains(name, dir))
            else {
                continue;
            };
            if out[gi].len() >= cap {
                continue;
            }
            out[gi].push(GroupMember {
                name: name.to_os_string(),
                path: item.path.clone(),
                born: item.measure.birth_time,
            });
        }
        out
    }
}

/// The first `cap` entries of `dir` that are members of `group` (read from the dir: the members
/// of a group one level down are not items of the live inventory). Nothing when it cannot be
/// listed.
fn listed_members(dir: &Path, group: &crate::shapes::ShapeGroup, cap: usize) -> Vec<GroupMember> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        if out.len() >= cap {
            break;
        }
        let name = entry.file_name();
        // `DirEntry::metadata` does not follow a symlink.
        let Ok(md) = entry.metadata() else {
            continue;
        };
        if !group.contains(&name, md.is_dir()) {
            continue;
        }
        out.push(GroupMember {
            path: entry.path(),
            name,
            born: md.created().or_else(|_| md.modified()).ok(),
        });
    }
    out
}
