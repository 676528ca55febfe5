//! The names of a root's dirs and items, each kept once in one byte arena; an item's name with the
//! id of its dir, so that its slot need not hold the dir.

use std::collections::HashMap;

/// Every name once, each as a header, an optional prefix id and the rest of its bytes. The header
/// is 1 byte when the rest is shorter than 64 bytes, else 2 (up to 16383 bytes); its bit
/// [`HAS_PREFIX`] says that the name starts with one of the arena's prefixes (the part of a name up
/// to its last `-`, `.` or `_`, such as `gpuarchiver-` or `com.apple.`), named by the next byte.
/// Names of one producer share such a prefix, so a `gpuarchiver-XXXXXX` name takes 8 bytes instead
/// of 19. At most 256 prefixes per arena, first come first served; a name whose prefix did not get
/// one is kept whole.
#[derive(Debug, Clone, Default)]
pub(super) struct Arena {
    bytes: Vec<u8>,
    /// The prefixes, by id.
    prefixes: Vec<Box<[u8]>>,
    /// Prefix ids by prefix.
    prefix_ids: HashMap<Box<[u8]>, u8>,
    /// Bytes of names no longer referenced (removed items), reclaimed by a compaction.
    pub(super) garbage: usize,
}

/// Header bit: a prefix id follows the header.
const HAS_PREFIX: u8 = 0x40;
/// Longest name kept whole (longer ones are cut; no file system allows names this long).
const MAX_NAME: usize = 0x3fff;
/// Shortest prefix worth an id (the id itself takes a byte).
const MIN_PREFIX: usize = 3;
/// Names copied to the stack to hash or compare them whole; longer ones go to the heap.
const STACK_NAME: usize = 256;

impl Arena {
    /// The id of the prefix `name` would be kept under (added if new and there is room), with its
    /// length.
    fn prefix_of(&mut self, name: &[u8]) -> Option<(u8, usize)> {
        let end = name.iter().rposition(|b| matches!(b, b'-' | b'.' | b'_'))? + 1;
        if end < MIN_PREFIX || end >= name.len() {
            return None;
        }
        let prefix = &name[..end];
        if let Some(&id) = self.prefix_ids.get(prefix) {
            return Some((id, end));
        }
        let id = u8::try_from(self.prefixes.len()).ok()?;
        self.prefixes.push(Box::from(prefix));
        self.prefix_ids.insert(Box::from(prefix), id);
        Some((id, end))
    }

    /// Appends `name`; returns its offset.
    pub(super) fn push(&mut self, name: &[u8]) -> u32 {
        let at = self.bytes.len() as u32;
        let name = &name[..name.len().min(MAX_NAME)];
        let (prefix, rest) = match self.prefix_of(name) {
            Some((id, len)) => (Some(id), &name[len..]),
            None => (None, name),
        };
        let flag = if prefix.is_some() { HAS_PREFIX } else { 0 };
        let len = rest.len();
        if len < 0x40 {
            self.bytes.push(flag | len as u8);
        } else {
            self.bytes.push(0x80 | flag | (len >> 8) as u8);
            self.bytes.push(len as u8);
        }
        if let Some(id) = prefix {
            self.bytes.push(id);
        }
        self.bytes.extend_from_slice(rest);
        at
    }

    /// Appends the record of an item named `name` in dir `dir`: the dir id (LEB128: 1 byte below
    /// 128, at most 5), then the name as [`Arena::push`] keeps it. Returns the record's offset.
    pub(super) fn push_item(&mut self, dir: u32, name: &[u8]) -> u32 {
        let at = self.bytes.len() as u32;
        let mut d = dir;
        while d >= 0x80 {
            self.bytes.push(0x80 | (d & 0x7f) as u8);
            d >>= 7;
        }
        self.bytes.push(d as u8);
        self.push(name);
        at
    }

    /// The dir id and the name offset of the item record at `at`.
    pub(super) fn item(&self, at: u32) -> (u32, u32) {
        let mut i = at as usize;
        let mut dir = 0u32;
        let mut shift = 0;
        loop {
            let b = self.bytes[i];
            i += 1;
            dir |= u32::from(b & 0x7f) << shift;
            if b & 0x80 == 0 || shift >= 28 {
                return (dir, i as u32);
            }
            shift += 7;
        }
    }

    /// Bytes the item record at `at` takes (to count it as garbage).
    pub(super) fn item_size_of(&self, at: u32) -> usize {
        let (_, name) = self.item(at);
        (name - at) as usize + self.size_of(name)
    }

    /// The name at `at` as its prefix (empty if none) and the rest.
    pub(super) fn parts(&self, at: u32) -> (&[u8], &[u8]) {
        let at = at as usize;
        let b0 = self.bytes[at];
        let (len, mut start) = if b0 & 0x80 == 0 {
            ((b0 & 0x3f) as usize, at + 1)
        } else {
            (
                (((b0 & 0x3f) as usize) << 8) | self.bytes[at + 1] as usize,
                at + 2,
            )
        };
        let mut prefix: &[u8] = &[];
        if b0 & HAS_PREFIX != 0 {
            prefix = &self.prefixes[self.bytes[start] as usize];
            start += 1;
        }
        (prefix, &self.bytes[start..start + len])
    }

    /// Calls `f` with the name at `at` in one piece (copied when it has a prefix).
    pub(super) fn with<R>(&self, at: u32, f: impl FnOnce(&[u8]) -> R) -> R {
        let (prefix, rest) = self.parts(at);
        if prefix.is_empty() {
            return f(rest);
        }
        let n = prefix.len() + rest.len();
        if n <= STACK_NAME {
            let mut buf = [0u8; STACK_NAME];
            buf[..prefix.len()].copy_from_slice(prefix);
            buf[prefix.len()..n].copy_from_slice(rest);
            f(&buf[..n])
        } else {
            f(&[prefix, rest].concat())
        }
    }

    /// The name at `at`, owned.
    pub(super) fn get(&self, at: u32) -> Vec<u8> {
        let (prefix, rest) = self.parts(at);
        [prefix, rest].concat()
    }

    /// True when the name at `at` is `name`.
    pub(super) fn is(&self, at: u32, name: &[u8]) -> bool {
        let (prefix, rest) = self.parts(at);
        name.len() == prefix.len() + rest.len()
            && name.starts_with(prefix)
            && &name[prefix.len()..] == rest
    }

    /// Bytes the name at `at` takes (to count it as garbage).
    pub(super) fn size_of(&self, at: u32) -> usize {
        let (prefix, rest) = self.parts(at);
        let n = rest.len();
        n + if n < 0x40 { 1 } else { 2 } + usize::from(!prefix.is_empty())
    }

    /// Bytes held.
    pub(super) fn len(&self) -> usize {
        self.bytes.len()
    }

    pub(super) fn shrink(&mut self) {
        self.bytes.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item_records_round_trip_dir_ids_of_every_width() {
        let mut a = Arena::default();
        let dirs = [
            0,
            1,
            0x7f,
            0x80,
            0x3fff,
            0x4000,
            0x1f_ffff,
            0x20_0000,
            u32::MAX,
        ];
        let names: [&[u8]; 3] = [b"gpuarchiver-abc123", b"x", &[b'n'; 200]];
        let mut recs = Vec::new();
        for (i, &d) in dirs.iter().enumerate() {
            let name = names[i % names.len()];
            recs.push((a.push_item(d, name), d, name));
        }
        for (at, d, name) in recs {
            let (dir, n) = a.item(at);
            assert_eq!(dir, d);
            assert!(a.is(n, name));
            assert_eq!(a.get(n), name.to_vec());
            // LEB128 width: 7 bits a byte.
            let width = (32 - d.leading_zeros()).div_ceil(7).max(1) as usize;
            assert_eq!(a.item_size_of(at), width + a.size_of(n));
        }
    }
}
