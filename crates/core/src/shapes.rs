//! Name shapes: what the unattributed entries of a root have in common when one unknown producer
//! left them, so thousands of them read as one group instead of a list nobody can read.
//!
//! [`shape_of`] turns a top-level entry's name into a [`Shape`]: runs that look random or counted
//! become placeholders, the rest stays literal, and a trailing `/` marks a dir:
//!
//! | run (between `.`, `-`, `_` and other non-alphanumerics)           | placeholder |
//! |-------------------------------------------------------------------|-------------|
//! | `8-4-4-4-12` hex digits                                           | `<uuid>`    |
//! | 10 digits of epoch seconds or 13 of epoch milliseconds (2001–2099)| `<ts>`      |
//! | 16, 32, 40 or 64 digits (a hash that came out all digits)         | `<hexN>`    |
//! | any other digit run (a pid, a counter, a thread index, a time part; after letters too, and between the `T`/`Z` of an ISO time) | `<digitsA-B>` |
//! | 8 hex digits or more, one case, with a digit (or 12 or more)      | `<hexN>`    |
//! | 5 alphanumerics or more mixing digits and letters, or mixing case in a way no word does | `<randN>` |
//!
//! So `.1a2b3c4d5e6f7a8b-00012345.dylib` is `.<hex16>-<digits8>.dylib` and `tmpXk3q9ZbA/` is
//! `<rand11>/`. A shape's key leaves the length of its digit runs out, so names that differ only
//! there (`kestrel_417_0_<ts>`, `kestrel_48213_1_<ts>`) share one key; in the group's shape a
//! digit run that took one value in every member is given back literal (`report-2026-01-05.pdf`
//! stays itself), one that varied becomes `<digitsA-B>` with the lengths seen
//! (`kestrel_<digits2-6>_<digits1>_<ts>/`). A handful of numbered names (`report-1.pdf` ..
//! `report-4.pdf`) is no group: it is short of [`GROUP_MIN_ITEMS`]. [`Grouper`] collects the unattributed
//! entries of one root under their shapes and keeps the groups of at least [`GROUP_MIN_ITEMS`]
//! members or [`GROUP_MIN_BYTES`]; for display a group's leading random run gives back the
//! literal prefix all its members share (`tmp<rand8>/`), which is also what its [`Shape::regex`]
//! demands. A random run that happens to look like a word (an all-lowercase `rand8`, about 1 in
//! 1000) gives a literal name; [`Grouper::finish`] puts such a name back into the group whose
//! regex it matches.
//!
//! Known limit: two producers whose names differ only in a literal prefix glued to the same
//! length of random run (`tmp<rand8>` and `abc<rand8>`) share one shape (`<rand11>`) in a root.

mod group;
mod key;
mod nested;
mod rule;
mod shape_group;
mod writers;

use std::ffi::OsStr;
use std::fmt;
use std::os::unix::ffi::OsStrExt;

pub use group::{
    Grouped, Grouper, Lone, GROUP_MIN_BYTES, GROUP_MIN_ITEMS, MAX_LITERALS, MAX_SHAPES,
    NESTED_MAX_SHAPES, NESTED_NAME_BUDGET,
};
pub use key::shape_key;
use key::{key_and_numbers, merge_lits, MARK};
pub use nested::{Nested, NESTED_MAX_SUBDIRS};
pub use rule::{
    check_rule, check_rule_in, owner_from, rule_for, suggested_id, RuleCheck, RuleError,
    RuleOptions, MIN_AGE_FLOOR_SECS,
};
pub use shape_group::{rest_of, ShapeGroup};
pub use writers::{writers, Writer, MAX_OPEN_FILES};

/// One run of a shape.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Part {
    /// Literal bytes, as the names hold them (not always UTF-8).
    Lit(Vec<u8>),
    /// A UUID, any case.
    Uuid,
    /// Epoch seconds (10 digits) or milliseconds (13 digits).
    Ts,
    /// `n` hex digits of one case.
    Hex(usize),
    /// Decimal digits, from `.0` to `.1` of them (a pid, a counter, a thread index, a time part).
    Digits(usize, usize),
    /// `n` characters of `[A-Za-z0-9]`.
    Rand(usize),
}

/// The shape of a name: its runs and whether it names a dir.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Shape {
    /// The runs, adjacent literals merged.
    pub parts: Vec<Part>,
    /// True for a dir (rendered with a trailing `/`).
    pub dir: bool,
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for p in &self.parts {
            match p {
                Part::Lit(s) => write_lit(f, s)?,
                Part::Uuid => f.write_str("<uuid>")?,
                Part::Ts => f.write_str("<ts>")?,
                Part::Hex(n) => write!(f, "<hex{n}>")?,
                Part::Digits(lo, hi) if lo == hi => write!(f, "<digits{lo}>")?,
                Part::Digits(lo, hi) => write!(f, "<digits{lo}-{hi}>")?,
                Part::Rand(n) => write!(f, "<rand{n}>")?,
            }
        }
        if self.dir {
            f.write_str("/")?;
        }
        Ok(())
    }
}

/// Appends `text` to the glob `out` as literal text: each glob metacharacter (`*?[]{}\\` and
/// `!`, `,`, `-`, which mean something inside a class or braces) escaped with a backslash.
pub(crate) fn glob_escape(text: &str, out: &mut String) {
    for c in text.chars() {
        match c {
            // A class, not `\*`: the catalogue refuses an item glob holding `**`, which an
            // escaped star followed by a wildcard would spell.
            '*' => out.push_str("[*]"),
            '?' => out.push_str("[?]"),
            '[' | ']' | '{' | '}' | '\\' | '!' | ',' | '-' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
}

/// Writes literal bytes: UTF-8 as text, any other byte as `\xNN`, so a name holding the byte
/// 0xff never reads as one holding U+FFFD.
fn write_lit(f: &mut fmt::Formatter<'_>, b: &[u8]) -> fmt::Result {
    for chunk in b.utf8_chunks() {
        f.write_str(chunk.valid())?;
        for x in chunk.invalid() {
            write!(f, "\\x{x:02x}")?;
        }
    }
    Ok(())
}

impl Shape {
    /// True when the shape has a placeholder (a literal shape is one name only).
    pub fn has_placeholder(&self) -> bool {
        self.parts.iter().any(|p| !matches!(p, Part::Lit(_)))
    }

    /// An anchored regex matching exactly the names of this shape (dir or not aside), with a `ts`
    /// capture on a `<ts>` run so a rule made from it ages items by the time in their names. A
    /// literal byte that is not UTF-8 is written `(?-u:\xFF)`: the pattern then compiles only as
    /// a [`regex::bytes::Regex`], and [`rule_for`] refuses such a shape.
    pub fn regex(&self) -> String {
        self.regex_with_pid(None)
    }

    /// [`Shape::regex`], with a `pid` capture on the part at index `pid` of [`Shape::parts`] when
    /// that part is a `<digits>` run (any other index captures nothing). The capture matches the
    /// same names: only a group is added.
    pub fn regex_with_pid(&self, pid: Option<usize>) -> String {
        let mut out = String::from("^");
        let mut ts_seen = false;
        for (i, p) in self.parts.iter().enumerate() {
            match p {
                Part::Digits(lo, hi) if pid == Some(i) => {
                    let n = if lo == hi {
                        format!("{{{lo}}}")
                    } else {
                        format!("{{{lo},{hi}}}")
                    };
                    out.push_str(&format!("(?P<pid>[0-9]{n})"));
                }
                Part::Lit(s) => {
                    for chunk in s.utf8_chunks() {
                        out.push_str(&regex::escape(chunk.valid()));
                        for x in chunk.invalid() {
                            out.push_str(&format!("(?-u:\\x{x:02X})"));
                        }
                    }
                }
                Part::Uuid => out.push_str(
                    "[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}",
                ),
                Part::Ts if !ts_seen => {
                    ts_seen = true;
                    out.push_str("(?P<ts>[0-9]{13}|[0-9]{10})");
                }
                Part::Ts => out.push_str("(?:[0-9]{13}|[0-9]{10})"),
                Part::Hex(n) => out.push_str(&format!("[0-9A-Fa-f]{{{n}}}")),
                Part::Digits(lo, hi) if lo == hi => out.push_str(&format!("[0-9]{{{lo}}}")),
                Part::Digits(lo, hi) => out.push_str(&format!("[0-9]{{{lo},{hi}}}")),
                Part::Rand(n) => out.push_str(&format!("[A-Za-z0-9]{{{n}}}")),
            }
        }
        out.push('$');
        out
    }

    /// A glob (catalogue syntax, relative to the root) matching every name of this shape: each
    /// placeholder a `*`, each glob metacharacter of the literal text (`*?[]{}\` and `!`, `,`,
    /// `-`, which mean something inside a class or braces) escaped with a backslash. Literal bytes
    /// that are not UTF-8 read as U+FFFD (see [`rule_for`], which refuses such a shape).
    pub fn glob(&self) -> String {
        let mut out = String::new();
        // Whether the glob ends in a wildcard: an escaped literal `*` (`\*`) ends in `*` too, so
        // the text cannot tell.
        let mut wild = false;
        for p in &self.parts {
            match p {
                Part::Lit(s) => {
                    glob_escape(&String::from_utf8_lossy(s), &mut out);
                    wild = false;
                }
                _ => {
                    if !wild {
                        out.push('*');
                        wild = true;
                    }
                }
            }
        }
        out
    }

    /// The shape with `k` leading characters of its first random run turned literal (`prefix`,
    /// the text every member shares there), at least one character left random. Used for display
    /// and rules: `<rand11>` whose members all start `tmp` becomes `tmp<rand8>`.
    fn with_rand_prefix(&self, common: &[u8]) -> Shape {
        let mut lit_len = 0usize;
        for (i, p) in self.parts.iter().enumerate() {
            match p {
                Part::Lit(s) => lit_len += s.len(),
                Part::Rand(n) => {
                    let Some(rest) = common.get(lit_len..) else {
                        break;
                    };
                    let k = rest
                        .iter()
                        .take(n.saturating_sub(1))
                        .take_while(|b| b.is_ascii_alphanumeric())
                        .count();
                    if k == 0 {
                        break;
                    }
                    let mut parts = self.parts.clone();
                    let lit = rest[..k].to_vec();
                    parts[i] = Part::Rand(n - k);
                    parts.insert(i, Part::Lit(lit));
                    return Shape {
                        parts: merge_lits(parts),
                        dir: self.dir,
                    };
                }
                _ => break,
            }
        }
        self.clone()
    }
}

impl Shape {
    /// The label of this shape: its rendering with a literal byte that is not UTF-8 as `\xNN`
    /// and a backslash as `\\`, so two shapes of different bytes never share a label (the plain
    /// rendering gives `a\xff` for the byte 0xff and for the four characters `\xff`). What
    /// `[groups] ignore` lists and what names a group over IPC.
    pub fn label(&self) -> String {
        let mut out = String::new();
        for p in &self.parts {
            match p {
                Part::Lit(b) => push_escaped(&mut out, b),
                other => out.push_str(
                    &Shape {
                        parts: vec![other.clone()],
                        dir: false,
                    }
                    .to_string(),
                ),
            }
        }
        if self.dir {
            out.push('/');
        }
        out
    }

    /// True when every name of shape `other` has this shape too, seen part by part: the same
    /// literals, and where they differ a placeholder here whose class holds the other's (a
    /// `<rand6>` holds `<hex6>` and `<digits6>`, a hex run that came out all digits; `<digits1-3>`
    /// holds `<digits2>`; `<ts>` holds 10 and 13 digits). Never true across a file and a dir.
    pub fn covers(&self, other: &Shape) -> bool {
        self.dir == other.dir
            && self.parts.len() == other.parts.len()
            && self
                .parts
                .iter()
                .zip(&other.parts)
                .all(|(a, b)| part_covers(a, b))
    }

    /// True when `name` (one path component, its bytes; a dir when `dir`) has this shape: what
    /// [`Shape::regex`] matches, decided on the bytes themselves (no rendering of them).
    pub fn matches(&self, name: &[u8], dir: bool) -> bool {
        dir == self.dir && match_parts(&self.parts, name)
    }

    /// True when every literal byte is UTF-8 and no literal holds U+FFFD: a rule's regex, matched
    /// on names as text, then tells this shape's names from all others.
    pub fn is_text(&self) -> bool {
        self.parts.iter().all(|p| match p {
            Part::Lit(s) => std::str::from_utf8(s).is_ok_and(|t| !t.contains('\u{FFFD}')),
            _ => true,
        })
    }
}

/// `b` onto `out` as [`Shape::label`] writes a literal: UTF-8 as is but `\` doubled and `<`
/// written `\<` (a literal never reads as a placeholder: the name `a-<ts>` is not the shape
/// `a-<ts>`), any other byte as `\xNN`.
pub fn push_escaped(out: &mut String, b: &[u8]) {
    for chunk in b.utf8_chunks() {
        out.push_str(&chunk.valid().replace('\\', "\\\\").replace('<', "\\<"));
        for x in chunk.invalid() {
            out.push_str(&format!("\\x{x:02x}"));
        }
    }
}

/// A name written as [`push_escaped`] writes a literal: it reads as the `shape` and `label` of
/// its group do and names the name's bytes.
pub fn name_escaped(name: &std::ffi::OsStr) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut out = String::new();
    push_escaped(&mut out, name.as_bytes());
    out
}

/// `text` with each control character (a newline, a tab, DEL, the C1 controls) written
/// `\xNN` (`\u{NNNN}` past 0x7f): on one line, safe in a TOML comment and a terminal.
pub fn escape_controls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match u32::from(c) {
            n if c.is_control() && n < 0x80 => out.push_str(&format!("\\x{n:02x}")),
            n if c.is_control() => out.push_str(&format!("\\u{{{n:04x}}}")),
            _ => out.push(c),
        }
    }
    out
}

impl Shape {
    /// The byte range of `name` each part of the shape covers, when `name` has the shape (the
    /// first way it matches, lengths tried in the order [`Shape::matches`] tries them).
    pub fn spans(&self, name: &[u8]) -> Option<Vec<std::ops::Range<usize>>> {
        let mut out = Vec::with_capacity(self.parts.len());
        span_parts(&self.parts, name, 0, &mut out).then_some(out)
    }

    /// The index of the part that holds the `k`-th run of ASCII digits (0 = the first) of every
    /// name of `names` whole (the run is exactly a `<digits>` placeholder): the part a `pid`
    /// capture goes on. `None` when a name does not have the shape, or the run is partly literal,
    /// split, or not the same part in all of them.
    pub fn digit_run_part(&self, names: &[&[u8]], k: usize) -> Option<usize> {
        let mut found = None;
        for name in names {
            let spans = self.spans(name)?;
            let run = digit_runs(name).into_iter().nth(k)?;
            let i = spans.iter().position(|s| *s == run)?;
            if !matches!(self.parts[i], Part::Digits(..)) || found.is_some_and(|f| f != i) {
                return None;
            }
            found = Some(i);
        }
        found
    }
}

/// The byte ranges of the runs of ASCII digits in `name`.
fn digit_runs(name: &[u8]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < name.len() {
        if name[i].is_ascii_digit() {
            let start = i;
            while i < name.len() && name[i].is_ascii_digit() {
                i += 1;
            }
            out.push(start..i);
        } else {
            i += 1;
        }
    }
    out
}

/// [`match_parts`], recording the range each part covers (from `at`, the offset of `s` in the
/// whole name) in `out`.
fn span_parts(parts: &[Part], s: &[u8], at: usize, out: &mut Vec<std::ops::Range<usize>>) -> bool {
    let Some((p, rest)) = parts.split_first() else {
        return s.is_empty();
    };
    let mut lens: Vec<usize> = Vec::new();
    let ok: fn(&u8) -> bool = match p {
        Part::Lit(l) => {
            if s.starts_with(l) {
                lens.push(l.len());
            }
            |_| true
        }
        Part::Uuid => {
            if match_parts(&[Part::Uuid], s.get(..36).unwrap_or_default()) {
                lens.push(36);
            }
            |_| true
        }
        Part::Ts => {
            lens.extend([13, 10]);
            u8::is_ascii_digit
        }
        Part::Hex(n) => {
            lens.push(*n);
            u8::is_ascii_hexdigit
        }
        Part::Digits(lo, hi) => {
            lens.extend(*lo..=*hi);
            u8::is_ascii_digit
        }
        Part::Rand(n) => {
            lens.push(*n);
            u8::is_ascii_alphanumeric
        }
    };
    for n in lens {
        let Some(run) = s.get(..n) else {
            continue;
        };
        if !run.iter().all(ok) {
            continue;
        }
        out.push(at..at + n);
        if span_parts(rest, &s[n..], at + n, out) {
            return true;
        }
        out.pop();
    }
    false
}

/// [`Shape::covers`] for one part.
fn part_covers(a: &Part, b: &Part) -> bool {
    match (a, b) {
        _ if a == b => true,
        (Part::Rand(n), Part::Hex(m)) => n == m,
        (Part::Rand(n) | Part::Hex(n), Part::Digits(lo, hi)) => lo == n && hi == n,
        (Part::Digits(lo, hi), Part::Digits(l, h)) => lo <= l && h <= hi,
        (Part::Ts, Part::Digits(l, h)) => l == h && (*l == 10 || *l == 13),
        _ => false,
    }
}

/// [`Shape::matches`] on the parts: literals byte for byte, placeholders their classes.
fn match_parts(parts: &[Part], s: &[u8]) -> bool {
    let Some((p, rest)) = parts.split_first() else {
        return s.is_empty();
    };
    let run = |n: usize, ok: fn(&u8) -> bool| -> bool {
        s.get(..n).is_some_and(|r| r.iter().all(ok)) && match_parts(rest, &s[n..])
    };
    match p {
        Part::Lit(l) => s.starts_with(l) && match_parts(rest, &s[l.len()..]),
        Part::Uuid => {
            s.get(..36).is_some_and(|r| {
                r.iter().enumerate().all(|(j, c)| match j {
                    8 | 13 | 18 | 23 => *c == b'-',
                    _ => c.is_ascii_hexdigit(),
                })
            }) && match_parts(rest, &s[36..])
        }
        Part::Ts => run(13, u8::is_ascii_digit) || run(10, u8::is_ascii_digit),
        Part::Hex(n) => run(*n, u8::is_ascii_hexdigit),
        Part::Digits(lo, hi) => (*lo..=*hi).any(|n| run(n, u8::is_ascii_digit)),
        Part::Rand(n) => run(*n, u8::is_ascii_alphanumeric),
    }
}

/// The shape of `name` (one path component), a dir when `dir`.
pub fn shape_of(name: &OsStr, dir: bool) -> Shape {
    let (mut key, mut nums) = (Vec::new(), Vec::new());
    key_and_numbers(name.as_bytes(), dir, &mut key, &mut nums);
    let mut shape = Shape::from_key(&key);
    let mut lens = nums.iter().map(|(s, e)| e - s);
    for p in &mut shape.parts {
        if let Part::Digits(lo, hi) = p {
            let n = lens.next().unwrap_or(0);
            (*lo, *hi) = (n, n);
        }
    }
    shape
}

#[cfg(test)]
mod tests;

#[cfg(test)]
#[path = "shapes/bytes_tests.rs"]
mod bytes_tests;
