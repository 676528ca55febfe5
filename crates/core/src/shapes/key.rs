//! The compact key of a name's shape (what the grouper looks shapes up by) and how the runs of a
//! name are classified into placeholders: UUIDs, epoch times, hex, digits, random runs.

use super::{Part, Shape};

/// Marks a placeholder in a shape key: a byte no file name holds.
pub(super) const MARK: u8 = 0;

/// First byte of the key of a dir's shape ...
const KEY_DIR: u8 = b'd';
/// ... and of a file's.
const KEY_FILE: u8 = b'f';

/// Writes the shape of `name` as a compact key into `out` (cleared first): [`KEY_DIR`] or
/// [`KEY_FILE`], then literal bytes as they are and each placeholder as [`MARK`] (no name holds
/// NUL), a kind byte and a length byte (any value: read by position, never taken for text).
/// Allocates nothing once `out` has grown: the grouper looks shapes up by this key.
pub fn shape_key(b: &[u8], dir: bool, out: &mut Vec<u8>) {
    let mut nums = Vec::new();
    key_and_numbers(b, dir, out, &mut nums);
}

/// [`shape_key`], with the byte ranges of the name's number runs (each a `<digits>` placeholder
/// of the key, whose length the key leaves out) in `nums` (cleared first).
pub(crate) fn key_and_numbers(
    b: &[u8],
    dir: bool,
    out: &mut Vec<u8>,
    nums: &mut Vec<(usize, usize)>,
) {
    nums.clear();
    out.clear();
    // A key is at most a byte longer than its name but for placeholders (3 bytes each, for a
    // run of at least one byte): one reserve, so the pushes below never grow it but rarely.
    out.reserve(b.len() + 8);
    out.push(if dir { KEY_DIR } else { KEY_FILE });
    let mut i = 0;
    while i < b.len() {
        // The bytes up to the next alphanumeric run, as they are.
        let lit = b[i..]
            .iter()
            .take_while(|&&c| CLASS[c as usize] == 0)
            .count();
        if lit > 0 {
            // Mostly one separator: pushed, not a `memcpy` call.
            for &c in &b[i..i + lit] {
                out.push(c);
            }
            i += lit;
            continue;
        }
        // A UUID: 36 bytes from here with a `-` after the first 8 (checked first: most runs
        // are no UUID).
        if b.get(i + 8) == Some(&b'-')
            && b.len() - i >= 36
            && (i == 0 || CLASS[b[i - 1] as usize] == 0)
            && is_uuid_at(b, i)
        {
            out.extend_from_slice(&[MARK, b'u', 36]);
            i += 36;
            continue;
        }
        // The run, counted as it is found (one lookup per byte).
        let mut counts = Counts::default();
        let mut end = i;
        while let Some(&c) = b.get(end) {
            let k = CLASS[c as usize];
            if k == 0 {
                break;
            }
            counts.add(k);
            end += 1;
        }
        classify(&b[i..end], &counts, out, i, nums);
        i = end;
    }
}

/// Byte classes, one table lookup per byte: a decimal digit, a lowercase or uppercase ASCII
/// letter, and a hex digit of either; 0 for any other byte.
const DIGIT: u8 = 1;
const LOWER: u8 = 2;
const UPPER: u8 = 4;
const HEXL: u8 = 8;
static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = if b.is_ascii_digit() {
            DIGIT | HEXL
        } else if b.is_ascii_lowercase() {
            LOWER | if b <= b'f' { HEXL } else { 0 }
        } else if b.is_ascii_uppercase() {
            UPPER | if b <= b'F' { HEXL } else { 0 }
        } else {
            0
        };
        c += 1;
    }
    t
};

impl Shape {
    /// The shape a key of [`shape_key`] encodes.
    pub fn from_key(key: &[u8]) -> Shape {
        let (dir, body) = match key.split_first() {
            Some((&KEY_DIR, body)) => (true, body),
            Some((_, body)) => (false, body),
            None => (false, key),
        };
        let mut parts = Vec::new();
        let mut lit: Vec<u8> = Vec::new();
        let mut i = 0;
        while i < body.len() {
            if body[i] != MARK || i + 2 >= body.len() {
                lit.push(body[i]);
                i += 1;
                continue;
            }
            if !lit.is_empty() {
                parts.push(Part::Lit(std::mem::take(&mut lit)));
            }
            let n = usize::from(body[i + 2]);
            parts.push(match body[i + 1] {
                b'u' => Part::Uuid,
                b't' => Part::Ts,
                b'h' => Part::Hex(n),
                b'd' => Part::Digits(n, n),
                _ => Part::Rand(n),
            });
            i += 3;
        }
        if !lit.is_empty() {
            parts.push(Part::Lit(lit));
        }
        Shape { parts, dir }
    }
}

pub(super) fn merge_lits(parts: Vec<Part>) -> Vec<Part> {
    let mut out: Vec<Part> = Vec::with_capacity(parts.len());
    for p in parts {
        match (out.last_mut(), p) {
            (Some(Part::Lit(a)), Part::Lit(b)) => a.extend_from_slice(&b),
            (_, p) => out.push(p),
        }
    }
    out
}

fn is_uuid_at(b: &[u8], i: usize) -> bool {
    let Some(s) = b.get(i..i + 36) else {
        return false;
    };
    if s[8] != b'-' {
        return false;
    }
    if b.get(i + 36).is_some_and(u8::is_ascii_alphanumeric) {
        return false;
    }
    s.iter().enumerate().all(|(j, c)| match j {
        8 | 13 | 18 | 23 => *c == b'-',
        _ => c.is_ascii_hexdigit(),
    })
}

/// Epoch seconds of 2001-09-09 .. 2099-12-31 have 10 digits; milliseconds 13.
const TS_SECS: std::ops::RangeInclusive<u64> = 1_000_000_000..=4_102_444_800;

/// What an alphanumeric run holds: how many digits, the classes any byte has (`any`) and those
/// every byte has (`all`: [`HEXL`] set when all are hex digits).
struct Counts {
    digits: usize,
    any: u8,
    all: u8,
}

impl Default for Counts {
    fn default() -> Counts {
        Counts {
            digits: 0,
            any: 0,
            all: u8::MAX,
        }
    }
}

impl Counts {
    fn add(&mut self, k: u8) {
        self.digits += usize::from(k & DIGIT);
        self.any |= k;
        self.all &= k;
    }
}

/// Writes one alphanumeric run (at `at` in the name; `counts` what it holds) into a shape key:
/// its placeholder(s), or the run itself; the ranges of its number runs go to `nums`.
fn classify(
    run: &[u8],
    counts: &Counts,
    out: &mut Vec<u8>,
    at: usize,
    nums: &mut Vec<(usize, usize)>,
) {
    let n = run.len();
    let digits = counts.digits;
    // Whether any byte is a lowercase / uppercase letter, and whether all are hex digits.
    let (lower, upper) = (counts.any & LOWER != 0, counts.any & UPPER != 0);
    let hex = counts.all & HEXL != 0;
    if digits == n {
        digits_part(run, out, at, nums);
        return;
    }
    if n >= 8 && (digits > 0 || n >= 12) && !(lower && upper) && hex {
        placeholder(out, b'h', n);
        return;
    }
    // Letters of one case, then a counter: `build20240105`, `tmp123456`, `python3`.
    let letters = n - digits;
    if digits > 0
        && run[..letters].iter().all(u8::is_ascii_alphabetic)
        && (!(lower && upper) || word_like(&run[..letters]))
    {
        out.extend_from_slice(&run[..letters]);
        digits_part(&run[letters..], out, at + letters, nums);
        return;
    }
    // Times: digits around single `T` and `Z` (`31T23`, `20251231T235959Z`, `123Z`).
    if run[0].is_ascii_digit() && is_time_run(run) {
        let mut i = 0;
        while i < n {
            let len = run[i..]
                .iter()
                .take_while(|c| c.is_ascii_digit() == run[i].is_ascii_digit())
                .count();
            if run[i].is_ascii_digit() {
                digits_part(&run[i..i + len], out, at + i, nums);
            } else {
                out.extend_from_slice(&run[i..i + len]);
            }
            i += len;
        }
        return;
    }
    // Letters and digits mixed (two letters at least: `31T23` of an ISO time is no random run).
    if n >= 5 && ((digits > 0 && letters >= 2) || (lower && upper && !word_like(run))) {
        placeholder(out, b'r', n);
        return;
    }
    out.extend_from_slice(run);
}

/// Digits with single `T` or `Z` letters between them (a `Z` may end the run).
fn is_time_run(run: &[u8]) -> bool {
    run.iter().enumerate().all(|(i, c)| {
        c.is_ascii_digit()
            || (matches!(c, b'T' | b'Z')
                && run.get(i + 1).map_or(*c == b'Z', u8::is_ascii_digit)
                && i > 0
                && run[i - 1].is_ascii_digit())
    })
}

fn placeholder(out: &mut Vec<u8>, kind: u8, n: usize) {
    out.extend_from_slice(&[MARK, kind, u8::try_from(n).unwrap_or(u8::MAX)]);
}

/// Writes the placeholder of an all-digit run (at `at` in the name): a time or a hash of its
/// own length, else a number run of any length (its range goes to `nums`; the grouper decides
/// whether it stays literal: see [`group`]).
#[inline]
fn digits_part(run: &[u8], out: &mut Vec<u8>, at: usize, nums: &mut Vec<(usize, usize)>) {
    let n = run.len();
    // The run is all ASCII digits (10 or 13 of them here: no overflow of a u64).
    let value = || {
        Some(
            run.iter()
                .fold(0u64, |v, &c| v * 10 + u64::from(c.wrapping_sub(b'0'))),
        )
    };
    match n {
        // Seconds and milliseconds alike: `<ts>` matches both, so names that differ only there
        // are one template (one group, one history key).
        10 if value().is_some_and(|v| TS_SECS.contains(&v)) => placeholder(out, b't', 0),
        13 if value().is_some_and(|v| TS_SECS.contains(&(v / 1000))) => placeholder(out, b't', 0),
        16 | 32 | 40 | 64 => placeholder(out, b'h', n),
        _ => {
            placeholder(out, b'd', 0);
            nums.push((at, at + n));
        }
    }
}

/// Mixed-case letters written as words are: `TemporaryItems`, `MyProject`, `HTTPServer`. From 8
/// letters on, each uppercase letter starts a word of at least two lowercase letters, or belongs
/// to a run of capitals (an acronym) that ends the name or is followed by such a word. A shorter
/// run is a word only when capitalized (`Python`): random runs of 5 to 7 letters take the other
/// patterns (`OxsfTV`, `VvoYkq`) too often, so `MacOS` counts as random (a shape of its own).
fn word_like(run: &[u8]) -> bool {
    if run.len() < 8 {
        return run.first().is_some_and(u8::is_ascii_uppercase)
            && run[1..].iter().all(u8::is_ascii_lowercase);
    }
    let mut i = 0;
    // A leading lowercase word (`iPhone`, `myProject`).
    while i < run.len() && run[i].is_ascii_lowercase() {
        i += 1;
    }
    while i < run.len() {
        let caps = run[i..]
            .iter()
            .take_while(|c| c.is_ascii_uppercase())
            .count();
        let low = run[i + caps..]
            .iter()
            .take_while(|c| c.is_ascii_lowercase())
            .count();
        match (caps, low) {
            (0, _) => return false,
            (_, 0) => return i + caps == run.len(),
            (1, l) if l >= 2 => {}
            // `MyApp`: a two-letter first word.
            (1, 1) if i == 0 => {}
            // An acronym then a word: its last capital starts the word.
            (c, l) if c >= 3 && l >= 2 => {}
            _ => return false,
        }
        i += caps + low;
    }
    true
}
