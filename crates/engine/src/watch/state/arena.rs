//! The names of a root's dirs and items, each kept once in one byte arena.

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
