//! The compiled form of the rules: one `GlobSet` per (root kind, depth), plus the rules' regexes.

mod dfa;
mod prefix;
mod rx;

use std::cell::RefCell;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use globset::{Candidate, GlobBuilder, GlobSet, GlobSetBuilder};
use regex::Regex;

use self::dfa::Resumable;
use self::rx::Rx;
use super::{Catalogue, Rule};
use crate::inventory::Captures;
use crate::roots::RootKind;

/// Above this a `ts` capture is read as milliseconds (10^11 s is the year 5138).
const TS_MILLIS_ABOVE: u64 = 100_000_000_000;

/// The globs of one depth of one root kind.
#[derive(Debug, Clone)]
struct DepthSet {
    set: GlobSet,
    /// The same globs as one DFA resuming after a dir's prefix (glob index = pattern id).
    dfa: Option<Resumable>,
    /// Glob index in `set` → rule index.
    rule_of: Vec<usize>,
}

/// Everything compiled for one root kind.
#[derive(Debug, Clone, Default)]
struct KindSet {
    /// `depths[d - 1]` holds the globs of `d` components.
    depths: Vec<Option<DepthSet>>,
}

/// A rule's compiled regexes.
#[derive(Debug, Clone, Default)]
pub(super) struct RuleRegex {
    pub(super) name: Option<Regex>,
    pub(super) path: Option<Regex>,
}

/// A rule's regexes as [`Compiled`] runs them.
#[derive(Debug, Clone, Default)]
struct RuleRx {
    name: Option<Rx>,
    path: Option<Rx>,
}

/// A depth's glob set being built, with the rule index and the regex of each glob.
type Pending = (GlobSetBuilder, Vec<usize>, Vec<String>);

/// The matcher for all rules.
#[derive(Debug, Clone)]
pub(super) struct Compiled {
    kinds: Vec<KindSet>,
    regexes: Vec<RuleRx>,
    /// Structure globs: (root kind index, matcher, rule index). Few, so matched one by one.
    structure: Vec<(usize, globset::GlobMatcher, usize)>,
}

/// The rule set of a root kind, by [`RootKind::index`].
fn kind_index(kind: RootKind) -> usize {
    kind.index()
}

/// The root kinds whose rule sets a rule written for `root` joins: a `temp` rule also serves
/// `container-temp` roots (a sandboxed app's temp dir fills with what the temp dir does), besides
/// the rules written for `container-temp` itself.
fn serves(root: RootKind) -> &'static [RootKind] {
    match root {
        RootKind::Temp => &[RootKind::Temp, RootKind::ContainerTemp],
        RootKind::Cache => &[RootKind::Cache],
        RootKind::LibraryCaches => &[RootKind::LibraryCaches],
        RootKind::DiagnosticReports => &[RootKind::DiagnosticReports],
        RootKind::ContainerTemp => &[RootKind::ContainerTemp],
        RootKind::CodeSignClones => &[RootKind::CodeSignClones],
        RootKind::Other => &[RootKind::Other],
    }
}

/// Number of components of `rel` when it is a plain relative path (only normal components), else
/// `None` (empty, absolute, `.` or `..`).
pub(super) fn depth_of(rel: &Path) -> Option<usize> {
    let mut depth = 0;
    for c in rel.components() {
        match c {
            Component::Normal(_) => depth += 1,
            _ => return None,
        }
    }
    (depth > 0).then_some(depth)
}

/// Number of components of a glob: `/` outside `[...]` plus one. `None` when a `/` sits inside
/// `{...}` or `[...]`, which would make the depth vary.
pub(super) fn glob_depth(glob: &str) -> Option<usize> {
    let mut depth = 1;
    let (mut braces, mut brackets, mut escaped) = (0usize, false, false);
    for ch in glob.chars() {
        if escaped {
            escaped = false;
            continue;
        }
        match ch {
            '\\' => escaped = true,
            '[' if !brackets => brackets = true,
            ']' if brackets => brackets = false,
            '{' if !brackets => braces += 1,
            '}' if !brackets => braces = braces.saturating_sub(1),
            '/' if brackets || braces > 0 => return None,
            '/' => depth += 1,
            _ => {}
        }
    }
    Some(depth)
}

/// The implicit structure dirs of `rule`, as globs matching only themselves: the first component
/// of each item glob that is at least two levels deep and whose first component is a plain name
/// (no glob syntax), e.g. `Homebrew` for `Homebrew/downloads/*`. The tool that owns such a dir made
/// it for its items; it is attributed to the rule and never reclaimed, like a written `structure`
/// glob.
fn implicit_structure(rule: &Rule) -> impl Iterator<Item = String> + '_ {
    rule.item.iter().filter_map(|glob| {
        let (first, rest) = glob.split_once('/')?;
        let plain = !first.contains(['*', '?', '[', ']', '{', '}', '\\']);
        (plain && !rest.is_empty()).then(|| globset::escape(first))
    })
}

/// Compiles one glob the way the catalogue matches: `*` never crosses `/`.
pub(super) fn compile_glob(glob: &str) -> Result<globset::Glob, globset::Error> {
    GlobBuilder::new(glob).literal_separator(true).build()
}

impl Compiled {
    /// Compiles validated rules (globs known to compile, with their depth) and their regexes.
    pub(super) fn new(
        rules: &[Rule],
        regexes: Vec<RuleRegex>,
    ) -> Result<Compiled, (usize, usize, globset::Error)> {
        let mut builders: Vec<Vec<Option<Pending>>> =
            (0..RootKind::ALL.len()).map(|_| Vec::new()).collect();
        for (ri, rule) in rules.iter().enumerate() {
            for &kind in serves(rule.root) {
                let per_kind = &mut builders[kind_index(kind)];
                for (gi, glob) in rule.item.iter().enumerate() {
                    let depth = glob_depth(glob).unwrap_or(1);
                    if per_kind.len() < depth {
                        per_kind.resize_with(depth, || None);
                    }
                    let slot = per_kind[depth - 1]
                        .get_or_insert_with(|| (GlobSetBuilder::new(), vec![], vec![]));
                    let glob = compile_glob(glob).map_err(|e| (ri, gi, e))?;
                    slot.2.push(glob.regex().to_owned());
                    slot.0.add(glob);
                    slot.1.push(ri);
                }
            }
        }
        let mut kinds = Vec::with_capacity(builders.len());
        for per_kind in builders {
            let mut depths = Vec::with_capacity(per_kind.len());
            for slot in per_kind {
                depths.push(match slot {
                    None => None,
                    Some((builder, rule_of, regexes)) => {
                        let first = rule_of.first().copied().unwrap_or(0);
                        let set = builder.build().map_err(|e| (first, 0, e))?;
                        let regexes: Vec<&str> = regexes.iter().map(String::as_str).collect();
                        let dfa = Resumable::globs(&regexes);
                        Some(DepthSet { set, dfa, rule_of })
                    }
                });
            }
            kinds.push(KindSet { depths });
        }
        // Structure globs were checked to compile by the loader. The implicit ones (the literal
        // top-level dir of a deeper item glob) follow every rule's written ones, so a written
        // glob wins.
        let written = rules
            .iter()
            .enumerate()
            .flat_map(|(ri, rule)| rule.structure.iter().map(move |g| (ri, rule, g.clone())));
        let implicit = rules
            .iter()
            .enumerate()
            .flat_map(|(ri, rule)| implicit_structure(rule).map(move |g| (ri, rule, g)));
        let structure = written
            .chain(implicit)
            .flat_map(|(ri, rule, g)| {
                serves(rule.root).iter().filter_map(move |&kind| {
                    let m = compile_glob(&g).ok()?.compile_matcher();
                    Some((kind_index(kind), m, ri))
                })
            })
            .collect();
        let regexes = regexes
            .into_iter()
            .map(|r| RuleRx {
                name: r.name.map(Rx::new),
                path: r.path.map(Rx::new),
            })
            .collect();
        Ok(Compiled {
            kinds,
            regexes,
            structure,
        })
    }

    /// The first rule (lowest index) one of whose structure globs matches `rel` in a root of `kind`.
    pub(super) fn structure_of(&self, kind: RootKind, rel: &Path) -> Option<usize> {
        depth_of(rel)?;
        let k = kind_index(kind);
        self.structure
            .iter()
            .find(|(sk, m, _)| *sk == k && m.is_match(rel))
            .map(|(_, _, ri)| *ri)
    }

    /// The deepest glob of `kind`, 0 when none.
    pub(super) fn max_depth(&self, kind: RootKind) -> usize {
        self.kinds[kind_index(kind)].depths.len()
    }

    /// The first rule (lowest index) claiming `rel` exactly, with its captures. One glob-set pass
    /// into a per-thread buffer: no allocation on a miss.
    pub(super) fn classify(&self, kind: RootKind, rel: &Path) -> Option<(usize, Captures)> {
        thread_local! {
            static HITS: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
        }
        let ds = self.depth_set(kind, rel)?;
        HITS.with(|hits| {
            let mut hits = hits.borrow_mut();
            let bytes = rel.as_os_str().as_bytes();
            let cut = bytes.iter().rposition(|&b| b == b'/').map_or(0, |i| i + 1);
            let by_dfa = ds
                .dfa
                .as_ref()
                .and_then(|d| d.matches_at_end(bytes, cut, &mut hits));
            if by_dfa.is_some() {
                hits.sort_unstable();
                hits.dedup();
            } else {
                ds.set
                    .matches_candidate_into(&Candidate::new(rel), &mut hits);
            }
            hits.iter()
                .map(|&g| ds.rule_of[g])
                .find_map(|ri| self.captures(ri, rel).map(|c| (ri, c)))
        })
    }

    /// Every rule claiming `rel` exactly (glob and regexes), in rule order, deduplicated.
    pub(super) fn claimants(&self, kind: RootKind, rel: &Path) -> Vec<usize> {
        let mut out = self.glob_claimants(kind, rel);
        out.retain(|&ri| self.captures(ri, rel).is_some());
        out
    }

    /// Every rule one of whose globs matches `rel` (regexes not checked), deduplicated.
    pub(super) fn glob_claimants(&self, kind: RootKind, rel: &Path) -> Vec<usize> {
        let Some(ds) = self.depth_set(kind, rel) else {
            return Vec::new();
        };
        let mut out: Vec<usize> = ds
            .set
            .matches(rel)
            .into_iter()
            .map(|g| ds.rule_of[g])
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    fn depth_set(&self, kind: RootKind, rel: &Path) -> Option<&DepthSet> {
        let depth = match plain_parts(rel) {
            Some((depth, _)) => depth,
            None => depth_of(rel)?,
        };
        self.kinds[kind_index(kind)].depths.get(depth - 1)?.as_ref()
    }

    /// Applies rule `ri`'s regexes to `rel`: `None` when one does not match, else the captures.
    pub(super) fn captures(&self, ri: usize, rel: &Path) -> Option<Captures> {
        let rx = &self.regexes[ri];
        let mut out = Captures::default();
        if let Some(name_rx) = &rx.name {
            let name = match plain_parts(rel) {
                Some((_, name)) => name,
                None => rel.file_name()?.as_bytes(),
            };
            name_rx.apply(&mut out, name)?;
        }
        if let Some(path_rx) = &rx.path {
            path_rx.apply_path(&mut out, rel.as_os_str().as_bytes())?;
        }
        Some(out)
    }
}

/// The depth and last component of `rel` when it is written plainly (as the scan builds paths:
/// `/`-separated names, none empty, `.` or `..`), read off its bytes; `None` for any other
/// spelling, which then goes through [`Path::components`].
fn plain_parts(rel: &Path) -> Option<(usize, &[u8])> {
    let bytes = rel.as_os_str().as_bytes();
    let mut depth = 1;
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'/' {
            if !plain_name(&bytes[start..i]) {
                return None;
            }
            depth += 1;
            start = i + 1;
        }
    }
    let last = &bytes[start..];
    plain_name(last).then_some((depth, last))
}

/// Not empty, `.` or `..`.
fn plain_name(name: &[u8]) -> bool {
    !matches!(name, b"" | b"." | b"..")
}

impl Catalogue {
    /// The rule claiming `rel` itself (as [`Catalogue::classify_with`]) and its captures, without
    /// the [`super::Match`]'s copy of `rel`: the scan asks this of every entry a glob may claim.
    /// `has` is asked only for a rule with `contains`.
    pub(crate) fn claim_with(
        &self,
        kind: RootKind,
        rel: &Path,
        has: &dyn Fn(&str) -> bool,
    ) -> Option<(&Rule, Captures)> {
        let (index, captures) = self.compiled.classify(kind, rel)?;
        let rule = &self.rules[index];
        if rule.contains.iter().all(|name| has(name)) && !rule.lacks.iter().any(|name| has(name)) {
            return Some((rule, captures));
        }
        // Its signature is not there: a rule claiming by name alone (a user's rule for the same
        // generic name, `tmp<rand8>`) may still claim it.
        self.compiled
            .claimants(kind, rel)
            .into_iter()
            .filter(|&ri| ri != index && self.rules[ri].contains.is_empty())
            .find_map(|ri| Some((&self.rules[ri], self.compiled.captures(ri, rel)?)))
    }
}

/// A `ts` capture: decimal epoch seconds, or milliseconds when above 10^11.
pub(super) fn parse_ts(digits: &str) -> Option<SystemTime> {
    let n: u64 = digits.parse().ok()?;
    let since_epoch = if n > TS_MILLIS_ABOVE {
        Duration::from_millis(n)
    } else {
        Duration::from_secs(n)
    };
    UNIX_EPOCH.checked_add(since_epoch)
}
