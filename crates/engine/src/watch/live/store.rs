//! The compact item store of a root: names interned in one arena ([`Arena`]), the dirs between the root and
//! the items as ids (parent id + name), and one fixed-size [`super::slot::Slot`] per item, found by a hash table
//! of slot ids keyed by (parent dir id, name).
//!
//! Per item this costs the slot (36 bytes), its record in the arena (its dir id, 1 byte below 128
//! dirs; 1 or 2 bytes of name length, 1 of prefix id when it has one, and the rest of the name) and
//! 5 to 10 bytes of hash table (4 of slot id and 1 of control byte per bucket, at 44% to 88% load):
//! about 53 bytes for a `gpuarchiver-XXXXXX` dir, against about 400 for a
//! `BTreeMap<Box<Path>, Entry>` with a full `Measure` and an owned path.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};

use hashbrown::HashTable;

use super::arena::Arena;
use super::groups::DirEntryStat;
use super::pages::Slots;

/// The root dir's id.
pub(super) const ROOT_DIR: u32 = 0;

/// A dir between the root and its items (or a top-level item dir whose own entry is a baseline).
#[derive(Debug, Clone, Copy)]
pub(super) struct DirNode {
    /// Parent dir id ([`ROOT_DIR`] for a top-level dir; the root dir is its own parent).
    pub(super) parent: u32,
    /// Name offset in the arena.
    pub(super) name: u32,
    /// Its own entry as last read; `None` when unknown (not recorded, or gone).
    pub(super) stat: Option<DirEntryStat>,
    /// Its mtime as last polled (see [`super::slot::encode_time`]); 0 when unknown.
    pub(super) mtime: u64,
}

/// Names, dirs and the two hash tables. Items live in the caller's slot vector; this only finds
/// them.
#[derive(Debug, Clone)]
pub(super) struct Names {
    pub(super) arena: Arena,
    pub(super) dirs: Vec<DirNode>,
    dir_index: HashTable<u32>,
    item_index: HashTable<u32>,
    hasher: hashbrown::DefaultHashBuilder,
}

impl Default for Names {
    fn default() -> Names {
        let mut arena = Arena::default();
        let name = arena.push(b"");
        Names {
            arena,
            dirs: vec![DirNode {
                parent: ROOT_DIR,
                name,
                stat: None,
                mtime: 0,
            }],
            dir_index: HashTable::new(),
            item_index: HashTable::new(),
            hasher: Default::default(),
        }
    }
}

/// `(parent dir id, name offset)` of slot `id`.
fn key(arena: &Arena, slots: &Slots, id: u32) -> (u32, u32) {
    arena.item(slots[id as usize].rec)
}

fn hash(h: &hashbrown::DefaultHashBuilder, dir: u32, name: &[u8]) -> u64 {
    use std::hash::BuildHasher;
    h.hash_one((dir, name))
}

/// [`hash`] of the name at `at` in `arena`.
fn hash_at(h: &hashbrown::DefaultHashBuilder, arena: &Arena, dir: u32, at: u32) -> u64 {
    arena.with(at, |name| hash(h, dir, name))
}

/// The normal components of `rel`; `None` when it has any other (`..`, a root).
fn components(rel: &Path) -> Option<Vec<&OsStr>> {
    rel.components()
        .map(|c| match c {
            Component::Normal(n) => Some(n),
            _ => None,
        })
        .collect()
}

impl Names {
    /// The id of the dir `name` in `parent`, if known.
    fn find_dir(&self, parent: u32, name: &[u8]) -> Option<u32> {
        let h = hash(&self.hasher, parent, name);
        self.dir_index
            .find(h, |&id| {
                let d = &self.dirs[id as usize];
                d.parent == parent && self.arena.is(d.name, name)
            })
            .copied()
    }

    /// The id of the dir `name` in `parent`, made if new.
    fn intern_dir(&mut self, parent: u32, name: &[u8]) -> u32 {
        if let Some(id) = self.find_dir(parent, name) {
            return id;
        }
        let id = self.dirs.len() as u32;
        let off = self.arena.push(name);
        self.dirs.push(DirNode {
            parent,
            name: off,
            stat: None,
            mtime: 0,
        });
        let h = hash(&self.hasher, parent, name);
        let (dirs, arena, hasher) = (&self.dirs, &self.arena, &self.hasher);
        self.dir_index.insert_unique(h, id, |&i| {
            let d = &dirs[i as usize];
            hash_at(hasher, arena, d.parent, d.name)
        });
        id
    }

    /// The id of the dir at `rel` (`""` is the root dir), if known.
    pub(super) fn find_dir_path(&self, rel: &Path) -> Option<u32> {
        let mut id = ROOT_DIR;
        for c in components(rel)? {
            id = self.find_dir(id, c.as_bytes())?;
        }
        Some(id)
    }

    /// The id of the dir at `rel`, made (with its parents) if new; `None` for a path with `..`.
    pub(super) fn make_dir_path(&mut self, rel: &Path) -> Option<u32> {
        let mut id = ROOT_DIR;
        for c in components(rel)? {
            id = self.intern_dir(id, c.as_bytes());
        }
        Some(id)
    }

    /// The dir id of an item's parent (if known) and the item's name.
    pub(super) fn find_split<'a>(&self, rel: &'a Path) -> Option<(u32, &'a [u8])> {
        let name = rel.file_name()?.as_bytes();
        let parent = rel.parent().unwrap_or(Path::new(""));
        Some((self.find_dir_path(parent)?, name))
    }

    /// The dir id of an item's parent (made if new) and the item's name.
    pub(super) fn make_split<'a>(&mut self, rel: &'a Path) -> Option<(u32, &'a [u8])> {
        let name = rel.file_name()?.as_bytes();
        let parent = rel.parent().unwrap_or(Path::new(""));
        Some((self.make_dir_path(parent)?, name))
    }

    /// The slot of the item `name` in dir `dir`.
    pub(super) fn find_item(&self, slots: &Slots, dir: u32, name: &[u8]) -> Option<u32> {
        let h = hash(&self.hasher, dir, name);
        self.item_index
            .find(h, |&i| {
                let (d, n) = key(&self.arena, slots, i);
                d == dir && self.arena.is(n, name)
            })
            .copied()
    }

    /// Indexes slot `id` (its key must be set and new).
    pub(super) fn index_item(&mut self, slots: &Slots, id: u32) {
        let (dir, name) = key(&self.arena, slots, id);
        let h = hash_at(&self.hasher, &self.arena, dir, name);
        let (arena, hasher) = (&self.arena, &self.hasher);
        self.item_index.insert_unique(h, id, |&i| {
            let (d, n) = key(arena, slots, i);
            hash_at(hasher, arena, d, n)
        });
    }

    /// Takes slot `id` out of the index and counts its name as garbage.
    pub(super) fn unindex_item(&mut self, slots: &Slots, id: u32) {
        let (dir, name) = key(&self.arena, slots, id);
        let h = hash_at(&self.hasher, &self.arena, dir, name);
        if let Ok(e) = self.item_index.find_entry(h, |&i| i == id) {
            e.remove();
        }
        self.arena.garbage += self.arena.item_size_of(slots[id as usize].rec);
    }

    /// The path of dir `id` relative to the root.
    pub(super) fn dir_path(&self, id: u32) -> PathBuf {
        self.path_of(id, None)
    }

    /// The path relative to the root of the item whose record is at `rec`.
    pub(super) fn item_path(&self, rec: u32) -> PathBuf {
        let (dir, name) = self.arena.item(rec);
        self.path_of(dir, Some(name))
    }

    /// The dir id of the item whose record is at `rec`.
    pub(super) fn item_dir(&self, rec: u32) -> u32 {
        self.arena.item(rec).0
    }

    /// Appends `/` and each component of the path relative to the root of the item whose record
    /// is at `rec` to `out` ([`Names::append_path`]).
    pub(super) fn append_item_path(&self, rec: u32, out: &mut Vec<u8>) {
        let (dir, name) = self.arena.item(rec);
        self.append_path(dir, Some(name), out);
    }

    /// The path of dir `dir` relative to the root, with the name at `name` joined.
    fn path_of(&self, dir: u32, name: Option<u32>) -> PathBuf {
        let mut out: Vec<u8> = Vec::new();
        self.append_path(dir, name, &mut out);
        if !out.is_empty() {
            out.remove(0);
        }
        PathBuf::from(OsString::from_vec(out))
    }

    /// Appends `/` and each component of the path of dir `dir` (relative to the root) to `out`,
    /// then `/` and the name at `name`: no allocation but `out`'s growth.
    pub(super) fn append_path(&self, dir: u32, name: Option<u32>, out: &mut Vec<u8>) {
        let mut depth = 0;
        let mut at = dir;
        while at != ROOT_DIR {
            depth += 1;
            at = self.dirs[at as usize].parent;
        }
        // Components from the root down: walk up to the i-th ancestor each time (depth is small).
        for i in (0..depth).rev() {
            let mut at = dir;
            for _ in 0..i {
                at = self.dirs[at as usize].parent;
            }
            self.append_name(self.dirs[at as usize].name, out);
        }
        if let Some(n) = name {
            self.append_name(n, out);
        }
    }

    fn append_name(&self, at: u32, out: &mut Vec<u8>) {
        let (prefix, rest) = self.arena.parts(at);
        out.push(b'/');
        out.extend_from_slice(prefix);
        out.extend_from_slice(rest);
    }

    /// True when dir `id` is `ancestor` or below it.
    pub(super) fn is_under(&self, mut id: u32, ancestor: u32) -> bool {
        loop {
            if id == ancestor {
                return true;
            }
            if id == ROOT_DIR {
                return false;
            }
            id = self.dirs[id as usize].parent;
        }
    }

    /// Number of items indexed.
    pub(super) fn items(&self) -> usize {
        self.item_index.len()
    }

    /// Rewrites the arena with only the names in use (dirs and `slots`), when at least half of it
    /// is garbage. `set_name` moves a slot's name offset.
    pub(super) fn compact(&mut self, slots: &mut Slots) {
        if self.arena.garbage * 2 < self.arena.len() || self.arena.len() < 1 << 16 {
            return;
        }
        let mut fresh = Arena::default();
        for d in &mut self.dirs {
            d.name = self.arena.with(d.name, |n| fresh.push(n));
        }
        for s in slots.iter_mut().filter(|s| !s.is_free()) {
            let (dir, name) = self.arena.item(s.rec);
            s.rec = self.arena.with(name, |n| fresh.push_item(dir, n));
        }
        fresh.shrink();
        self.arena = fresh;
    }

    /// Frees the tables' spare capacity (after a full load).
    pub(super) fn shrink(&mut self, slots: &Slots) {
        let (dirs, arena, hasher) = (&self.dirs, &self.arena, &self.hasher);
        self.dir_index.shrink_to_fit(|&i| {
            let d = &dirs[i as usize];
            hash_at(hasher, arena, d.parent, d.name)
        });
        self.item_index.shrink_to_fit(|&i| {
            let (d, n) = key(arena, slots, i);
            hash_at(hasher, arena, d, n)
        });
        self.arena.shrink();
        self.dirs.shrink_to_fit();
    }
}
