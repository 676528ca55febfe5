//! Groups one and two levels down: the children of one unattributed top-level dir, and the
//! children of each of its subdirs, grouped as the scan walks them.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use super::group::{Grouper, GROUP_MIN_ITEMS, NESTED_MAX_SHAPES, NESTED_NAME_BUDGET};
use super::ShapeGroup;
use crate::inventory::Measure;

/// Subdirs of one top-level dir whose own children are grouped (two levels down,
/// `<tool>/<slug>/<member>`), at most: the first ones the walk reaches. Past it, a subdir's
/// children are summed but not grouped, so a top-level dir of many subdirs (itself a group one
/// level down, most likely) costs at most this many groupers.
pub const NESTED_MAX_SUBDIRS: usize = 64;

/// The children of one dir grouped by shape while the scan walks them (from the walk's own
/// listing and sums: nothing is read again), in memory bounded by [`NESTED_NAME_BUDGET`] and
/// [`NESTED_MAX_SHAPES`] whatever the number of children. A top-level dir's [`Nested`] also
/// takes the groups its subdirs' children form (two levels down, at most
/// [`NESTED_MAX_SUBDIRS`] of them); nothing deeper is grouped.
#[derive(Debug)]
pub struct Nested {
    grouper: Grouper,
    children: u64,
    /// True for a top-level dir's children (its subdirs may be grouped too), false for a
    /// subdir's.
    top: bool,
    /// Subdirs whose children were given a grouper ([`Nested::nest`]).
    subdirs: usize,
    /// The groups found in those subdirs, `within` naming the subdir.
    below: Vec<ShapeGroup>,
}

impl Default for Nested {
    fn default() -> Nested {
        Nested::new()
    }
}

impl Nested {
    /// A top-level dir's children, none seen yet.
    pub fn new() -> Nested {
        Nested {
            grouper: Grouper::bounded(NESTED_NAME_BUDGET, NESTED_MAX_SHAPES),
            children: 0,
            top: true,
            subdirs: 0,
            below: Vec::new(),
        }
    }

    /// A grouper for the children of one more subdir of this top-level dir (two levels down),
    /// or `None`: this is itself a subdir's (nothing deeper is grouped), or
    /// [`NESTED_MAX_SUBDIRS`] subdirs have one already.
    pub fn nest(&mut self) -> Option<Nested> {
        if !self.top || self.subdirs >= NESTED_MAX_SUBDIRS {
            return None;
        }
        self.subdirs += 1;
        Some(Nested {
            top: false,
            ..Nested::new()
        })
    }

    /// Takes the group `g` the children of the subdir `g.within` form ([`Nested::finish`] of
    /// the grouper [`Nested::nest`] gave).
    pub fn add_below(&mut self, g: ShapeGroup) {
        self.below.push(g);
    }

    /// Adds the child `name` (a dir when `dir`) with its sizes (all of it but what rules claim).
    pub fn add(&mut self, name: &OsStr, dir: bool, measure: &Measure) {
        self.children += 1;
        self.grouper.add(name, dir, measure);
    }

    /// Children counted so far.
    pub fn children(&self) -> u64 {
        self.children
    }

    /// Distinct shapes tracked now (at most [`NESTED_MAX_SHAPES`]).
    pub fn shapes(&self) -> usize {
        self.grouper.shape_count()
    }

    /// The names held now and their bytes (with their shapes' keys), counted over what is held:
    /// `bytes + names * size_of::<Lone>()` stays within [`NESTED_NAME_BUDGET`].
    pub fn names_held(&self) -> (usize, usize) {
        self.grouper.names_held()
    }

    /// The group the children of the dir `within` form, if any: one of at least
    /// [`GROUP_MIN_ITEMS`] members holding more than half of the children (a dir of varied
    /// names with a few numbered ones among them is no leak).
    pub fn finish(&self, within: &OsStr) -> Option<ShapeGroup> {
        let mut g = self
            .grouper
            .finish()
            .groups
            .into_iter()
            .filter(|g| g.items >= GROUP_MIN_ITEMS && 2 * g.items > self.children)
            .max_by_key(|g| g.items)?;
        g.within = Some(within.to_os_string());
        Some(g)
    }

    /// Every group found in the top-level dir `within`: the one its children form
    /// ([`Nested::finish`]), then those its subdirs' children form (`within` becoming
    /// `<within>/<subdir>`), but for a subdir that is a member of the first (its bytes are
    /// counted there: no byte is in two groups). Largest first.
    pub fn finish_all(self, within: &OsStr) -> Vec<ShapeGroup> {
        let top = self.finish(within);
        let mut out: Vec<ShapeGroup> = Vec::with_capacity(self.below.len() + 1);
        for mut g in self.below {
            let Some(sub) = g.within.take() else { continue };
            if top.as_ref().is_some_and(|t| t.contains(&sub, true)) {
                continue;
            }
            let mut path = within.as_bytes().to_vec();
            path.push(b'/');
            path.extend_from_slice(sub.as_bytes());
            g.within = Some(OsString::from_vec(path));
            out.push(g);
        }
        out.extend(top);
        out.sort_by(|a, b| {
            b.measure
                .allocated_bytes
                .cmp(&a.measure.allocated_bytes)
                .then_with(|| a.within.cmp(&b.within))
        });
        out
    }
}
