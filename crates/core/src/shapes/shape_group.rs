//! A group of unattributed entries sharing a shape: what it holds, how it is shown and labelled,
//! and how members and folded groups are counted in.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::time::SystemTime;

use super::group::{Lone, EXAMPLES};
use super::{Part, Shape};
use crate::inventory::Measure;

/// A group of unattributed entries of one root sharing a shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeGroup {
    /// The shape as shown and as rules are made from it (the members' common literal prefix
    /// given back: `tmp<rand8>/`).
    pub shape: Shape,
    /// The shape the members were collected under (`<rand11>/`).
    pub key: Shape,
    /// Number of members.
    pub items: u64,
    /// Summed sizes of the members.
    pub measure: Measure,
    /// The oldest of the members' newest mtimes.
    pub oldest_mtime: Option<SystemTime>,
    /// The newest mtime of any member.
    pub newest_mtime: Option<SystemTime>,
    /// Up to three member names, first in byte order.
    pub examples: Vec<OsString>,
    /// The dir the members lie in, relative to the root: a top-level dir (one path component)
    /// for a group found one level down, `<top>/<subdir>` (two components) for one found two
    /// levels down ([`super::Nested`]); `None` for a group of top-level entries.
    pub within: Option<OsString>,
}

impl ShapeGroup {
    /// True when the entry `name` (a dir when `dir`) belongs to this group: its bytes have the
    /// group's shape (every member of its key does, and so does a random run that looked like a
    /// word), decided byte for byte, never on a rendering of the name.
    pub fn contains(&self, name: &OsStr, dir: bool) -> bool {
        self.shape.matches(name.as_bytes(), dir)
    }

    /// The top-level dir the members lie in or under (the first component of
    /// [`ShapeGroup::within`]); `None` for a group of top-level entries.
    pub fn top_dir(&self) -> Option<&OsStr> {
        let w = self.within.as_deref()?.as_bytes();
        let end = w.iter().position(|&b| b == b'/').unwrap_or(w.len());
        Some(OsStr::from_bytes(&w[..end]))
    }

    /// The group as shown (`scan`'s and the snapshot's `shape`) and as `rules add` takes it: its
    /// shape, written `<dir>/<shape>` for a group one level down (the dir's bytes as [`Shape`]'s
    /// `Display` writes literals: `\xff` for a byte that is not UTF-8).
    pub fn shown(&self) -> String {
        self.shown_of(&self.shape)
    }

    /// [`ShapeGroup::shown`] with the shape the members were collected under.
    pub fn key_shown(&self) -> String {
        self.shown_of(&self.key)
    }

    fn shown_of(&self, shape: &Shape) -> String {
        match &self.within {
            Some(dir) => {
                let lit = Shape {
                    parts: vec![Part::Lit(dir.as_bytes().to_vec())],
                    dir: false,
                };
                format!("{lit}/{shape}")
            }
            None => shape.to_string(),
        }
    }

    /// The group's label: [`Shape::label`], written `<dir>/<label>` for a group one level down
    /// with the dir's bytes escaped the same way (`\xNN` for a byte that is not UTF-8, `\\`
    /// for a backslash), so two groups of different bytes never share a label. What names a
    /// group over IPC and in `[groups] ignore`.
    pub fn label(&self) -> String {
        match &self.within {
            Some(dir) => {
                let mut out = String::new();
                super::push_escaped(&mut out, dir.as_bytes());
                out.push('/');
                out.push_str(&self.shape.label());
                out
            }
            None => self.shape.label(),
        }
    }
}

impl ShapeGroup {
    /// Takes in the members of `other`, a group this one's shape covers.
    pub(super) fn merge(&mut self, other: ShapeGroup) {
        self.items += other.items;
        self.measure.add(&other.measure);
        for t in [other.oldest_mtime, other.newest_mtime]
            .into_iter()
            .flatten()
        {
            self.oldest_mtime = Some(self.oldest_mtime.map_or(t, |o| o.min(t)));
            self.newest_mtime = Some(self.newest_mtime.map_or(t, |o| o.max(t)));
        }
        self.examples.extend(other.examples);
        self.examples.sort();
        self.examples.truncate(EXAMPLES);
    }

    /// Counts `m` in: items, sizes, mtimes, examples.
    pub(super) fn absorb(&mut self, m: &Lone) {
        self.items += 1;
        self.measure.add(&m.measure);
        if let Some(t) = m.measure.newest_mtime {
            self.oldest_mtime = Some(self.oldest_mtime.map_or(t, |o| o.min(t)));
            self.newest_mtime = Some(self.newest_mtime.map_or(t, |o| o.max(t)));
        }
        if self.examples.len() < EXAMPLES || self.examples.last().is_some_and(|l| m.name < *l) {
            let at = self.examples.partition_point(|e| *e < m.name);
            self.examples.insert(at, m.name.clone());
            self.examples.truncate(EXAMPLES);
        }
    }
}

/// What is left of the unattributed top-level dir measured `m` once `groups`, the groups found
/// in it or in its subdirs ([`ShapeGroup::top_dir`] is that dir), are taken out, and whether the
/// rest is only the dirs that hold them (the top-level dir and each subdir a group lies in, no
/// file): shown through the groups then, not listed.
pub fn rest_of(m: &Measure, groups: &[&ShapeGroup]) -> (Measure, bool) {
    let mut rest = *m;
    let mut holders: Vec<&OsStr> = Vec::new();
    for g in groups {
        rest = rest.less(&g.measure);
        if let Some(w) = g.within.as_deref().filter(|w| w.as_bytes().contains(&b'/')) {
            if !holders.contains(&w) {
                holders.push(w);
            }
        }
    }
    let bare = rest.files == 0 && rest.dirs <= 1 + holders.len() as u64;
    (rest, bare)
}
