//! Groups one level down: the children of one unattributed top-level dir, grouped as the scan
//! walks them.

use std::ffi::OsStr;

use super::group::{Grouper, GROUP_MIN_ITEMS, NESTED_MAX_SHAPES, NESTED_NAME_BUDGET};
use super::ShapeGroup;
use crate::inventory::Measure;

/// The children of one top-level dir grouped by shape while the scan walks them (from the
/// walk's own listing and sums: nothing is read again), in memory bounded by
/// [`NESTED_NAME_BUDGET`] and [`NESTED_MAX_SHAPES`] whatever the number of children.
#[derive(Debug)]
pub struct Nested {
    grouper: Grouper,
    children: u64,
}

impl Default for Nested {
    fn default() -> Nested {
        Nested::new()
    }
}

impl Nested {
    /// No child seen yet.
    pub fn new() -> Nested {
        Nested {
            grouper: Grouper::bounded(NESTED_NAME_BUDGET, NESTED_MAX_SHAPES),
            children: 0,
        }
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
}
