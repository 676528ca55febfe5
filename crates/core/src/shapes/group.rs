//! [`Grouper`]: the unattributed top-level entries of one root collected under their shapes as
//! they stream past, in memory bounded by [`NAME_BUDGET`] bytes of names and keys and at most
//! [`MAX_SHAPES`] shapes, never by the number of members of a group nor by how long the names
//! are. A group holds no compiled matcher: membership is decided on the name's bytes by its
//! shape ([`super::Shape::matches`]); a rule's regex is built only for a group made into a rule.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::time::SystemTime;

use super::{key_and_numbers, merge_lits, shape_key, Part, Shape, ShapeGroup, MARK};
use crate::inventory::Measure;

/// A shape is a group from this many members on ...
pub const GROUP_MIN_ITEMS: u64 = 20;
/// ... or from this many allocated bytes (1 GiB).
pub const GROUP_MIN_BYTES: u64 = 1 << 30;
/// Distinct shapes with placeholders tracked per root; entries of further shapes stay lone
/// entries (kept only when among the largest). Bounds memory when a root holds many unrelated
/// names.
pub const MAX_SHAPES: usize = 4096;
/// Names without a placeholder (each its own shape, never a group by itself) kept per root to
/// join a group whose regex they match or to be listed; further ones are kept only when among
/// the largest.
pub const MAX_LITERALS: usize = 16_384;
/// Bytes of names, keys and bookkeeping a [`Grouper`] holds at most (per root): past it, entries
/// of new shapes, further members of shapes short of a group and further literal names stay lone
/// entries, kept only when among the largest.
pub const NAME_BUDGET: usize = 8 << 20;
/// Bytes of names and keys the grouping of one top-level dir's children holds at most while
/// that dir is walked ([`Nested`]): past it, names of new shapes are counted but not kept.
pub const NESTED_NAME_BUDGET: usize = 256 << 10;
/// Distinct shapes tracked among one top-level dir's children ([`Nested`]).
pub const NESTED_MAX_SHAPES: usize = 256;
/// What one kept name costs against [`NAME_BUDGET`] besides its bytes.
const NAME_COST: usize = std::mem::size_of::<Lone>() + 16;
/// What one shape costs against [`NAME_BUDGET`] besides its key and names.
const SHAPE_COST: usize = std::mem::size_of::<Acc>() + 64;
/// Shapes short of a group tried as near-groups (the largest first), at most.
const MAX_NEAR: usize = 64;
/// Example names kept per group (the first in byte order, so the report is stable).
pub(super) const EXAMPLES: usize = 3;

/// A top-level entry that joined no group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lone {
    /// Its name (one path component).
    pub name: OsString,
    /// Its sizes.
    pub measure: Measure,
}

#[derive(Debug, Default)]
struct Acc {
    items: u64,
    measure: Measure,
    oldest: Option<SystemTime>,
    newest: Option<SystemTime>,
    examples: Vec<OsString>,
    /// The longest prefix all member names share.
    common: Option<Vec<u8>>,
    /// Every member while the shape is not (yet) a group; dropped once it is one.
    members: Vec<Lone>,
    /// What this shape's names cost against [`NAME_BUDGET`].
    held: usize,
    /// The longest member name, in bytes.
    longest: usize,
    /// What the kept members cost.
    kept_bytes: usize,
    /// Some members were not kept (past the budget): they went to the overflow.
    partial: bool,
    /// What the members hold in each number run of the key, in order.
    nums: Vec<NumStat>,
    /// [`prefix8`] of the last example.
    last_head: u64,
}

/// The first 8 bytes of `b` as a big-endian number (missing bytes as 0): two names whose values
/// differ are ordered as the values are.
fn prefix8(b: &[u8]) -> u64 {
    match b.first_chunk::<8>() {
        Some(w) => u64::from_be_bytes(*w),
        None => b
            .iter()
            .enumerate()
            .fold(0, |v, (i, &c)| v | u64::from(c) << (56 - 8 * i)),
    }
}

/// The values one number run of a shape took: a run that took one value in every member stays
/// literal in the group's shape (`report-2026-...`), one that varied becomes `<digitsA-B>`.
#[derive(Debug, Default)]
struct NumStat {
    lo: usize,
    hi: usize,
    /// The one value seen, until a second one is.
    value: Option<Box<[u8]>>,
    varied: bool,
}

impl NumStat {
    fn add(&mut self, digits: &[u8], first: bool) {
        if first {
            (self.lo, self.hi) = (digits.len(), digits.len());
            self.value = Some(digits.into());
            return;
        }
        self.lo = self.lo.min(digits.len());
        self.hi = self.hi.max(digits.len());
        if !self.varied && self.value.as_deref() != Some(digits) {
            self.varied = true;
            self.value = None;
        }
    }
}

impl Acc {
    fn is_group(&self) -> bool {
        self.items >= GROUP_MIN_ITEMS || self.measure.allocated_bytes >= GROUP_MIN_BYTES
    }

    /// Counts `name` in, keeping it as a member while the shape is short of a group and `keep`;
    /// returns the change of what the shape holds against [`NAME_BUDGET`].
    fn add(
        &mut self,
        name: &OsStr,
        measure: &Measure,
        keep: bool,
        nums: &[(usize, usize)],
    ) -> isize {
        let before = self.held;
        let first = self.items == 0;
        if first {
            self.nums.resize_with(nums.len(), NumStat::default);
        }
        for (st, &(a, b)) in self.nums.iter_mut().zip(nums) {
            st.add(&name.as_bytes()[a..b], first);
        }
        self.items += 1;
        self.measure.add(measure);
        if let Some(t) = measure.newest_mtime {
            self.oldest = Some(self.oldest.map_or(t, |o| o.min(t)));
            self.newest = Some(self.newest.map_or(t, |o| o.max(t)));
        }
        let bytes = name.as_bytes();
        match &mut self.common {
            None => self.common = Some(bytes.to_vec()),
            Some(c) => {
                let k = c.iter().zip(bytes).take_while(|(a, b)| a == b).count();
                c.truncate(k);
            }
        }
        // Most names come after the last example: told by their first 8 bytes, no `memcmp`.
        let head = prefix8(bytes);
        let before_last = match self.examples.last() {
            _ if self.examples.len() < EXAMPLES => true,
            Some(_) if head != self.last_head => head < self.last_head,
            Some(l) => name < l.as_os_str(),
            None => true,
        };
        if before_last {
            let at = self.examples.partition_point(|e| e.as_os_str() < name);
            self.examples.insert(at, name.to_os_string());
            self.examples.truncate(EXAMPLES);
            self.last_head = self.examples.last().map_or(0, |l| prefix8(l.as_bytes()));
        }
        self.longest = self.longest.max(bytes.len());
        if self.is_group() {
            self.members = Vec::new();
            self.kept_bytes = 0;
        } else if keep {
            self.members.push(Lone {
                name: name.to_os_string(),
                measure: *measure,
            });
            self.kept_bytes += bytes.len() + NAME_COST;
        } else {
            self.partial = true;
        }
        // Examples and the common prefix, at most as long as the longest name, and the members.
        self.held = (EXAMPLES + 1) * (self.longest + NAME_COST) + self.kept_bytes;
        self.held as isize - before as isize
    }
}

/// What [`Grouper::finish`] returns.
#[derive(Debug, Clone, Default)]
pub struct Grouped {
    /// The groups, largest allocated first (ties by shape).
    pub groups: Vec<ShapeGroup>,
    /// Every entry kept that joined no group, in no particular order.
    pub lone: Vec<Lone>,
}

/// Collects one root's unattributed top-level entries by shape.
#[derive(Debug, Default)]
pub struct Grouper {
    /// By shape key ([`shape_key`]).
    shapes: hashbrown::HashMap<Box<[u8]>, Acc>,
    /// Names without a placeholder, with whether each is a dir.
    literals: Vec<(Lone, bool)>,
    /// Scratch for the key of the name being added ...
    key: Vec<u8>,
    /// ... and for the ranges of its number runs.
    nums: Vec<(usize, usize)>,
    /// Entries whose shape came after [`MAX_SHAPES`] others, the `keep` largest.
    overflow: Vec<Lone>,
    keep: usize,
    /// What is held against the budget.
    held: usize,
    /// The budget of names and keys ([`NAME_BUDGET`] for a root) ...
    budget: usize,
    /// ... and of shapes ([`MAX_SHAPES`]).
    max_shapes: usize,
}

impl Grouper {
    /// An empty grouper that keeps at least the `keep` largest lone entries.
    pub fn new(keep: usize) -> Grouper {
        Grouper {
            keep,
            budget: NAME_BUDGET,
            max_shapes: MAX_SHAPES,
            ..Grouper::default()
        }
    }

    /// Adds the entry `name` (a dir when `dir`) with its sizes.
    pub fn add(&mut self, name: &OsStr, dir: bool, measure: &Measure) {
        key_and_numbers(name.as_bytes(), dir, &mut self.key, &mut self.nums);
        let cost = name.len() + NAME_COST;
        let budget = self.budget;
        let fits = |held: usize, more: usize| held + more <= budget;
        if !self.key.contains(&MARK) {
            if self.literals.len() < MAX_LITERALS && fits(self.held, cost) {
                self.held += cost;
                let lone = Lone {
                    name: name.to_os_string(),
                    measure: *measure,
                };
                self.literals.push((lone, dir));
            } else {
                self.add_overflow(name, measure);
            }
            return;
        }
        // Every name of a shape is counted; a member of a shape short of a group is kept to be
        // listed should the shape stay short, or past the budget goes to the overflow instead
        // (taken out of it again when the shape becomes a group).
        let (held, key) = (self.held, self.key.as_slice());
        if let Some(acc) = self.shapes.get_mut(key) {
            let keep = acc.is_group() || fits(held, cost);
            self.held = held.saturating_add_signed(acc.add(name, measure, keep, &self.nums));
            if !keep {
                self.add_overflow(name, measure);
            }
            return;
        }
        let new_shape = self.key.len() + SHAPE_COST + (EXAMPLES + 2) * cost;
        if self.shapes.len() >= self.max_shapes || !fits(self.held, new_shape) {
            self.add_overflow(name, measure);
            return;
        }
        let mut acc = Acc::default();
        self.held += self.key.len() + SHAPE_COST;
        self.held = self
            .held
            .saturating_add_signed(acc.add(name, measure, true, &self.nums));
        self.shapes.insert(self.key.as_slice().into(), acc);
    }

    /// The names it holds now (kept literals, members, examples, common prefixes, overflow) and
    /// their bytes, counted over what it holds, not from its own accounting.
    /// An empty grouper of its own bounds: `budget` bytes of names, `max_shapes` shapes.
    pub(super) fn bounded(budget: usize, max_shapes: usize) -> Grouper {
        Grouper {
            budget,
            max_shapes,
            ..Grouper::default()
        }
    }

    /// Distinct shapes tracked now.
    pub(super) fn shape_count(&self) -> usize {
        self.shapes.len()
    }

    pub(super) fn names_held(&self) -> (usize, usize) {
        let lones = self
            .literals
            .iter()
            .map(|(l, _)| l)
            .chain(self.overflow.iter())
            .chain(self.shapes.values().flat_map(|a| a.members.iter()));
        let (mut n, mut bytes) = (0, 0);
        for l in lones {
            n += 1;
            bytes += l.name.len();
        }
        for (key, acc) in &self.shapes {
            n += acc.examples.len() + 1;
            bytes += key.len()
                + acc.examples.iter().map(|e| e.len()).sum::<usize>()
                + acc.common.as_ref().map_or(0, Vec::len);
        }
        (n, bytes)
    }

    fn add_overflow(&mut self, name: &OsStr, measure: &Measure) {
        if self.keep == 0 {
            return;
        }
        self.overflow.push(Lone {
            name: name.to_os_string(),
            measure: *measure,
        });
        if self.overflow.len() >= 2 * self.keep.max(16) {
            sort_largest_first(&mut self.overflow);
            self.overflow.truncate(self.keep);
        }
    }

    /// The groups and the lone entries. A lone entry whose name matches a group's regex (a random
    /// run that happened to look like a word) joins that group here; so does a shape with
    /// placeholders that falls short of [`GROUP_MIN_ITEMS`] only because some of its producer's
    /// names came out as words (those make at most a third of it).
    pub fn finish(&self) -> Grouped {
        let mut groups: Vec<ShapeGroup> = Vec::new();
        let mut small: Vec<(Shape, &Acc)> = Vec::new();
        for (key, acc) in &self.shapes {
            let shape = Shape::from_key(key);
            if acc.is_group() {
                groups.extend(make_group(&shape, acc));
            } else {
                small.push((shape, acc));
            }
        }
        // Every member of a shape that is not a group, with its shape's index in `small`, and
        // every literal name (index `small.len()` for files, `+ 1` for dirs).
        let (lit_file, lit_dir) = (small.len(), small.len() + 1);
        let pool: Vec<(usize, &Lone)> = small
            .iter()
            .enumerate()
            .flat_map(|(si, (_, acc))| acc.members.iter().map(move |m| (si, m)))
            .chain(
                self.literals
                    .iter()
                    .map(|(m, dir)| (if *dir { lit_dir } else { lit_file }, m)),
            )
            .collect();
        let dir_of = |si: usize| match small.get(si) {
            Some((s, _)) => s.dir,
            None => si == lit_dir,
        };
        let mut taken = vec![false; pool.len()];
        let mut near: Vec<usize> = (0..small.len())
            .filter(|&si| small[si].1.items >= GROUP_MIN_ITEMS.div_ceil(2))
            .collect();
        near.sort_by(|&a, &b| {
            small[b]
                .1
                .items
                .cmp(&small[a].1.items)
                .then_with(|| small[a].0.to_string().cmp(&small[b].0.to_string()))
        });
        // Bounded: a root of many unrelated names must not cost pool × shapes regex matches.
        near.truncate(MAX_NEAR);
        for si in near {
            let (key, acc) = (&small[si].0, small[si].1);
            let own: Vec<usize> = (0..pool.len()).filter(|&i| pool[i].0 == si).collect();
            if own.iter().any(|&i| taken[i]) {
                continue;
            }
            let Some(mut g) = make_group(key, acc) else {
                continue;
            };
            let joins: Vec<usize> = (0..pool.len())
                .filter(|&i| {
                    !taken[i]
                        && pool[i].0 != si
                        && g.shape
                            .matches(pool[i].1.name.as_bytes(), dir_of(pool[i].0))
                })
                .collect();
            let n = joins.len() as u64;
            if acc.items + n < GROUP_MIN_ITEMS || 2 * n > acc.items {
                continue;
            }
            for &i in own.iter().chain(&joins) {
                taken[i] = true;
            }
            for &i in &joins {
                g.absorb(pool[i].1);
            }
            groups.push(g);
        }
        merge_covered(&mut groups);
        // An overflowed member of a shape that became a group is counted in the group.
        let mut key = Vec::new();
        let mut lone: Vec<Lone> = self
            .overflow
            .iter()
            .filter(|m| {
                let b = m.name.as_bytes();
                let in_group = |dir: bool, key: &mut Vec<u8>| {
                    shape_key(b, dir, key);
                    self.shapes
                        .get(key.as_slice())
                        .is_some_and(|a| a.partial && a.is_group())
                };
                !in_group(false, &mut key) && !in_group(true, &mut key)
            })
            .cloned()
            .collect();
        // Each remaining name tried against the groups of its length (most shapes fix it).
        let mut by_len: HashMap<(bool, usize), Vec<usize>> = HashMap::new();
        for (gi, g) in groups.iter().enumerate() {
            let (lo, hi) = g.shape.len_range();
            for n in lo..=hi.min(lo + 64) {
                by_len.entry((g.shape.dir, n)).or_default().push(gi);
            }
        }
        for (i, (si, m)) in pool.iter().enumerate() {
            if taken[i] {
                continue;
            }
            let (dir, name) = (dir_of(*si), m.name.as_bytes());
            let home = by_len.get(&(dir, name.len())).and_then(|gis| {
                gis.iter()
                    .copied()
                    .find(|&gi| groups[gi].shape.matches(name, dir))
            });
            match home {
                Some(gi) => groups[gi].absorb(m),
                None => lone.push((*m).clone()),
            }
        }
        groups.sort_by(|a, b| {
            b.measure
                .allocated_bytes
                .cmp(&a.measure.allocated_bytes)
                .then_with(|| a.shape.to_string().cmp(&b.shape.to_string()))
        });
        Grouped { groups, lone }
    }
}

/// Folds each group into a larger one whose shape covers it ([`Shape::covers`]): the hex names
/// of a leak that came out all digits (`lsp-<digits6>-<n>/` beside `lsp-<rand6>-<n>/`) are the
/// same leak, and a rule made from the larger shape claims them anyway. Largest first, so a
/// shape folds into the widest group that holds it; bounded by the groups (a few hundred).
fn merge_covered(groups: &mut Vec<ShapeGroup>) {
    groups.sort_by(|a, b| {
        b.items
            .cmp(&a.items)
            .then_with(|| a.shape.to_string().cmp(&b.shape.to_string()))
    });
    let mut out: Vec<ShapeGroup> = Vec::with_capacity(groups.len());
    for g in groups.drain(..) {
        match out.iter_mut().find(|o| o.shape.covers(&g.shape)) {
            Some(o) => o.merge(g),
            None => out.push(g),
        }
    }
    *groups = out;
}

/// The group of a shape: its number runs given the lengths its members had, a run that took one
/// value in all of them (two at least) given back as that literal, then the literal prefix its
/// members share at a leading random run.
fn make_group(key: &Shape, acc: &Acc) -> Option<ShapeGroup> {
    let mut stats = acc.nums.iter();
    let (mut ranged, mut shown) = (Vec::new(), Vec::new());
    for p in &key.parts {
        let st = match p {
            Part::Digits(..) => stats.next(),
            _ => None,
        };
        let (r, s) = match (p, st) {
            (Part::Digits(..), Some(st)) => {
                let r = Part::Digits(st.lo, st.hi);
                match &st.value {
                    Some(v) if acc.items >= 2 && !st.varied => (r, Part::Lit(v.to_vec())),
                    _ => (r.clone(), r),
                }
            }
            _ => (p.clone(), p.clone()),
        };
        ranged.push(r);
        shown.push(s);
    }
    let key = Shape {
        parts: ranged,
        dir: key.dir,
    };
    let shape = Shape {
        parts: merge_lits(shown),
        dir: key.dir,
    }
    .with_rand_prefix(acc.common.as_deref().unwrap_or_default());
    Some(ShapeGroup {
        shape,
        key,
        items: acc.items,
        measure: acc.measure,
        oldest_mtime: acc.oldest,
        newest_mtime: acc.newest,
        examples: acc.examples.clone(),
        within: None,
    })
}

impl Shape {
    /// The shortest and longest name of this shape, in bytes.
    fn len_range(&self) -> (usize, usize) {
        self.parts.iter().fold((0, 0), |(lo, hi), p| match p {
            Part::Lit(s) => (lo + s.len(), hi + s.len()),
            Part::Uuid => (lo + 36, hi + 36),
            Part::Ts => (lo + 10, hi + 13),
            Part::Digits(a, b) => (lo + a, hi + b),
            Part::Hex(n) | Part::Rand(n) => (lo + n, hi + n),
        })
    }
}

fn sort_largest_first(v: &mut [Lone]) {
    v.sort_by(|a, b| {
        b.measure
            .allocated_bytes
            .cmp(&a.measure.allocated_bytes)
            .then_with(|| a.name.cmp(&b.name))
    });
}
