//! The slots of a root in pages of [`PAGE`] slots each, so a slot id stays valid as the store
//! grows: adding an item never moves the others, and a load of any size holds at most one page of
//! spare capacity (a `Vec` doubling would hold up to as much spare as it holds slots, and copy all
//! of them at each doubling; pages are never copied).

use std::ops::{Index, IndexMut};

use super::slot::Slot;

/// log2 of [`PAGE`].
const PAGE_BITS: usize = 12;
/// Slots per page (4096; 144 KiB a page).
pub(super) const PAGE: usize = 1 << PAGE_BITS;

/// Every slot of a root, by id.
#[derive(Debug, Clone, Default)]
pub(super) struct Slots {
    /// Full pages, then the last one (its capacity is [`PAGE`]; only what is pushed is touched).
    pages: Vec<Vec<Slot>>,
    len: usize,
}

impl Slots {
    /// Number of slots (free ones included).
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Adds `slot` at id [`Slots::len`].
    pub(super) fn push(&mut self, slot: Slot) {
        if self.len % PAGE == 0 {
            self.pages.push(Vec::with_capacity(PAGE));
        }
        if let Some(last) = self.pages.last_mut() {
            last.push(slot);
            self.len += 1;
        }
    }

    /// The slots in id order.
    pub(super) fn iter(&self) -> impl Iterator<Item = &Slot> + '_ {
        self.pages.iter().flatten()
    }

    /// The slots in id order, to change.
    pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = &mut Slot> + '_ {
        self.pages.iter_mut().flatten()
    }
}

impl Index<usize> for Slots {
    type Output = Slot;

    fn index(&self, id: usize) -> &Slot {
        &self.pages[id >> PAGE_BITS][id & (PAGE - 1)]
    }
}

impl IndexMut<usize> for Slots {
    fn index_mut(&mut self, id: usize) -> &mut Slot {
        &mut self.pages[id >> PAGE_BITS][id & (PAGE - 1)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_stay_put_across_pages() {
        let mut s = Slots::default();
        for i in 0..(2 * PAGE + 3) {
            let mut slot = Slot::default();
            slot.rec = i as u32;
            s.push(slot);
        }
        assert_eq!(s.len(), 2 * PAGE + 3);
        assert_eq!(s[PAGE].rec, PAGE as u32);
        assert_eq!(s[2 * PAGE + 2].rec, 2 * PAGE as u32 + 2);
        s[5].rec = 77;
        assert_eq!(s.iter().nth(5).map(|x| x.rec), Some(77));
        assert!(s
            .iter()
            .enumerate()
            .all(|(i, x)| i == 5 || x.rec == i as u32));
        assert_eq!(s.iter_mut().count(), 2 * PAGE + 3);
    }
}
