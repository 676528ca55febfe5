//! What the walk queues of a listed subdir until its parent's listing (or batch) is done.

use std::path::PathBuf;

use super::super::at::Names;
use super::super::Claim;
use super::Head;

/// What to do with a queued subdir.
pub(super) enum Next {
    /// Walk it and add its contents to the parent's sum (its own entry is already added).
    Plain,
    /// Measure it as an item (claimed, or unattributed when `None`).
    Item(Option<Claim>),
}

/// Where a listed name is kept for a subdir queued with it.
pub(super) enum Keep<'a> {
    /// Copied into this buffer (the name is in the listing's buffer, about to be reused).
    Copy(&'a mut Names),
    /// Already at this span of the batch's names.
    Batch((usize, usize)),
}

/// A queued subdir's name: a span of its parent's serial or batch names.
#[derive(Clone, Copy)]
pub(super) enum SubName {
    Serial((usize, usize)),
    Batch((usize, usize)),
}

/// A subdir queued for walking once its parent's listing (or batch) is done.
pub(super) struct Sub {
    pub(super) name: SubName,
    pub(super) head: Head,
    pub(super) rel: Option<PathBuf>,
    pub(super) next: Next,
}
