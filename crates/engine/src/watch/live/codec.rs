//! An [`Item`] into a [`Slot`] (interning its producer id and bundle name) and back.

use std::path::PathBuf;
use std::sync::Arc;

use crate::inventory::{Captures, Item, Measure};

use super::slot::{Extra, Slot, BUNDLES_INLINE, EXTRA, FREE, HAS_PID, NO_PRODUCER, SYMLINK};
use super::RootState;

/// `producer` of a slot whose producer id is in its [`Extra`] (the id table is full).
const PRODUCER_IN_EXTRA: u8 = NO_PRODUCER - 1;

impl RootState {
    /// The index of producer `id` in the root's table, added if new; `None` when the table is full.
    fn producer_index(&mut self, id: &str) -> Option<u8> {
        if let Some(i) = self.ids.iter().position(|x| &**x == id) {
            return Some(i as u8);
        }
        if self.ids.len() >= PRODUCER_IN_EXTRA as usize {
            return None;
        }
        let arc = match self.producers.get_key_value(id) {
            Some((k, _)) => k.clone(),
            None => Arc::from(id),
        };
        self.ids.push(arc);
        Some((self.ids.len() - 1) as u8)
    }

    /// The index + 1 of bundle name `b`, added if new; `None` when the table is full.
    fn bundle_index(&mut self, b: &str) -> Option<u16> {
        if let Some(&i) = self.bundle_ids.get(b) {
            return Some(i);
        }
        if self.bundles.len() >= BUNDLES_INLINE as usize {
            return None;
        }
        self.bundles.push(Box::from(b));
        let i = self.bundles.len() as u16;
        self.bundle_ids.insert(Box::from(b), i);
        Some(i)
    }

    /// The slot for `item` under the arena record (dir id and name) at `rec`, and what did not fit
    /// in it. The pid the name captured goes into the root's pid table ([`HAS_PID`]).
    pub(super) fn encode(&mut self, item: &Item, rec: u32) -> (Slot, Option<Extra>) {
        let mut s = Slot::default();
        s.rec = rec;
        s.flags = if item.is_symlink { SYMLINK } else { 0 };
        s.producer = NO_PRODUCER;
        let ino = u32::try_from(item.ino).ok();
        s.ino = ino.unwrap_or(0);
        let mut fits = s.set_measure(&item.measure)
            && ino.is_some()
            && item.dev == self.root_dev
            && item.captures.ts.is_none();
        let mut producer = None;
        if let Some(id) = item.producer.as_deref() {
            match self.producer_index(id) {
                Some(i) => s.producer = i,
                None => {
                    s.producer = PRODUCER_IN_EXTRA;
                    producer = Some(Arc::from(id));
                    fits = false;
                }
            }
        }
        if item.captures.pid.is_some() {
            s.flags |= HAS_PID;
        }
        if let Some(b) = item.captures.bundle.as_deref() {
            match self.bundle_index(b) {
                Some(i) => s.set_bundle(i),
                None => fits = false,
            }
        }
        if fits {
            return (s, None);
        }
        s.flags |= EXTRA;
        let extra = Extra {
            measure: item.measure,
            dev: item.dev,
            ino: item.ino,
            captures: item.captures.clone(),
            producer,
        };
        (s, Some(extra))
    }

    /// The producer id of slot `id`.
    pub(super) fn producer_of(&self, id: u32) -> Option<Arc<str>> {
        let s = &self.slots[id as usize];
        match s.producer {
            NO_PRODUCER => None,
            PRODUCER_IN_EXTRA => self.extra.get(&id).and_then(|e| e.producer.clone()),
            i => self.ids.get(i as usize).cloned(),
        }
    }

    /// The measure of slot `id`.
    pub(super) fn measure_of(&self, id: u32) -> Measure {
        let s = &self.slots[id as usize];
        if s.flags & EXTRA != 0 {
            if let Some(e) = self.extra.get(&id) {
                return e.measure;
            }
        }
        s.inline_measure()
    }

    /// The allocated bytes of slot `id`.
    pub(super) fn allocated_of(&self, id: u32) -> u64 {
        let s = &self.slots[id as usize];
        if s.flags & EXTRA != 0 {
            if let Some(e) = self.extra.get(&id) {
                return e.measure.allocated_bytes;
            }
        }
        s.inline_allocated()
    }

    /// The path of slot `id` relative to the root.
    pub(super) fn rel_path_of(&self, id: u32) -> PathBuf {
        self.names.item_path(self.slots[id as usize].rec)
    }

    /// Slot `id` as an [`Item`] (absolute path).
    pub(super) fn item_of(&self, id: u32) -> Item {
        let s = &self.slots[id as usize];
        let extra = (s.flags & EXTRA != 0)
            .then(|| self.extra.get(&id))
            .flatten();
        let (measure, dev, ino, captures) = match extra {
            Some(e) => (e.measure, e.dev, e.ino, e.captures.clone()),
            None => (
                s.inline_measure(),
                self.root_dev,
                s.ino as u64,
                Captures {
                    pid: (s.flags & HAS_PID != 0)
                        .then(|| self.pids.get(&id).copied())
                        .flatten(),
                    ts: None,
                    bundle: (s.bundle() > 0)
                        .then(|| self.bundles.get(s.bundle() as usize - 1))
                        .flatten()
                        .map(|b| b.to_string()),
                },
            ),
        };
        Item {
            path: self.root.canonical.join(self.rel_path_of(id)),
            producer: self.producer_of(id).map(|p| p.to_string()),
            captures,
            measure,
            is_symlink: s.flags & SYMLINK != 0,
            dev,
            ino,
        }
    }

    /// Ids of the live slots.
    pub(super) fn live(&self) -> impl Iterator<Item = u32> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.flags & FREE == 0)
            .map(|(i, _)| i as u32)
    }

    /// Writes `item` into slot `id` under the arena record at `rec`.
    pub(super) fn write_slot(&mut self, id: u32, item: &Item, rec: u32) {
        let (slot, extra) = self.encode(item, rec);
        self.slots[id as usize] = slot;
        match extra {
            Some(e) => self.extra.insert(id, Box::new(e)),
            None => self.extra.remove(&id),
        };
        match item.captures.pid.filter(|_| slot.flags & HAS_PID != 0) {
            Some(pid) => self.pids.insert(id, pid),
            None => self.pids.remove(&id),
        };
    }

    /// Puts `item` into a new (or free) slot under the arena record at `rec` and indexes it.
    pub(super) fn insert_slot(&mut self, item: &Item, rec: u32) {
        let id = match self.free.pop() {
            Some(id) => id,
            None => {
                self.slots.push(Slot::default());
                (self.slots.len() - 1) as u32
            }
        };
        self.write_slot(id, item, rec);
        self.names.index_item(&self.slots, id);
    }

    /// Frees slot `id`; compacts the name arena when half of it is garbage.
    pub(super) fn free_slot(&mut self, id: u32) {
        self.names.unindex_item(&self.slots, id);
        self.slots[id as usize].flags = FREE;
        self.extra.remove(&id);
        self.pids.remove(&id);
        self.free.push(id);
        self.names.compact(&mut self.slots);
    }
}
