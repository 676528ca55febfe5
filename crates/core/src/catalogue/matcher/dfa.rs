//! Lazy DFAs that resume after a dir's path prefix: the scan asks about `<dir>/<name>` for every
//! name of a dir, so each thread remembers the DFA state the recent prefixes lead to and walks
//! only the name. [`Resumable::globs`] decides which of a depth's item globs match (as the
//! `GlobSet` does, from the globs' own regexes); [`Resumable::regex`] whether a rule regex
//! matches (its ASCII twin, for ASCII text). Both answer `None` when the DFA gives up (then the
//! caller asks the regex engine as before).

use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};

use regex_automata::hybrid::dfa::{Cache, DFA};
use regex_automata::hybrid::LazyStateID;
use regex_automata::nfa::thompson;
use regex_automata::util::syntax;
use regex_automata::{Anchored, Input, MatchKind};

/// Prefixes remembered per thread.
const PREFIXES_KEPT: usize = 8;

/// Caches kept per thread (one per DFA recently used on it).
const CACHES_KEPT: usize = 32;

/// Ids of built DFAs (clones share one: same automaton).
static NEXT_ID: AtomicUsize = AtomicUsize::new(0);

/// Where a prefix leads: the DFA state after it, whether a match was seen on the way, and the
/// cache's clear count then (a cleared cache invalidates its state ids).
#[derive(Clone, Copy)]
struct After {
    state: LazyStateID,
    matched: bool,
    clears: usize,
}

thread_local! {
    static CACHES: RefCell<Vec<(usize, Cache)>> = const { RefCell::new(Vec::new()) };
    static PREFIXES: RefCell<Vec<(usize, Vec<u8>, After)>> = const { RefCell::new(Vec::new()) };
}

/// A lazy DFA whose runs resume after remembered prefixes.
#[derive(Debug, Clone)]
pub(super) struct Resumable {
    dfa: DFA,
    anchored: Anchored,
    id: usize,
}

impl Resumable {
    /// The globs' regexes (`Glob::regex`, compiled as `globset` compiles them) as one anchored
    /// DFA reporting every pattern that matches; `None` when it cannot be built.
    pub(super) fn globs(regexes: &[&str]) -> Option<Resumable> {
        let dfa = DFA::builder()
            .syntax(syntax::Config::new().utf8(false).dot_matches_new_line(true))
            .thompson(thompson::Config::new().utf8(false))
            .configure(DFA::config().match_kind(MatchKind::All))
            .build_many(regexes)
            .ok()?;
        Some(Resumable::of(dfa, Anchored::Yes))
    }

    /// A rule regex compiled as its ASCII twin (Unicode off, bytes); `None` when it cannot be.
    pub(super) fn regex(pattern: &str) -> Option<Resumable> {
        let dfa = DFA::builder()
            .syntax(syntax::Config::new().unicode(false).utf8(false))
            .thompson(thompson::Config::new().utf8(false))
            .build(pattern)
            .ok()?;
        Some(Resumable::of(dfa, Anchored::No))
    }

    fn of(dfa: DFA, anchored: Anchored) -> Resumable {
        Resumable {
            dfa,
            anchored,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// The patterns matching all of `text` (anchored DFAs: the globs), pushed into `out`
    /// (cleared first), in no particular order. `text[..cut]` is the prefix to remember.
    pub(super) fn matches_at_end(
        &self,
        text: &[u8],
        cut: usize,
        out: &mut Vec<usize>,
    ) -> Option<()> {
        out.clear();
        self.run(text, cut, |dfa, cache, after| {
            let end = dfa.next_eoi_state(cache, after.state).ok()?;
            if end.is_match() {
                for i in 0..dfa.match_len(cache, end) {
                    out.push(dfa.match_pattern(cache, end, i).as_usize());
                }
            }
            Some(())
        })
    }

    /// True when the regex matches somewhere in `text`. `text[..cut]` is the prefix to remember.
    pub(super) fn is_match(&self, text: &[u8], cut: usize) -> Option<bool> {
        self.run(text, cut, |dfa, cache, after| {
            if after.matched {
                return Some(true);
            }
            Some(dfa.next_eoi_state(cache, after.state).ok()?.is_match())
        })
    }

    /// Walks `text` (its prefix `text[..cut]` from this thread's memory when it is there) and
    /// hands `end` the state before the end of input.
    fn run<R>(
        &self,
        text: &[u8],
        cut: usize,
        end: impl FnOnce(&DFA, &mut Cache, After) -> Option<R>,
    ) -> Option<R> {
        let (prefix, name) = (text.get(..cut)?, text.get(cut..)?);
        CACHES.with(|caches| {
            let mut caches = caches.borrow_mut();
            let at = match caches.iter().position(|(id, _)| *id == self.id) {
                Some(at) => at,
                None => {
                    if caches.len() >= CACHES_KEPT {
                        caches.clear();
                    }
                    caches.push((self.id, self.dfa.create_cache()));
                    caches.len() - 1
                }
            };
            let cache = &mut caches[at].1;
            let after = self.after_prefix(cache, text, prefix)?;
            let after = self.walk(cache, after, name)?;
            end(&self.dfa, cache, after)
        })
    }

    /// The state after `prefix` (the start of `text`), remembered per thread.
    fn after_prefix(&self, cache: &mut Cache, text: &[u8], prefix: &[u8]) -> Option<After> {
        let clears = cache.clear_count();
        if !prefix.is_empty() {
            let known = PREFIXES.with(|p| {
                p.borrow()
                    .iter()
                    .find(|(id, p, a)| *id == self.id && a.clears == clears && p == prefix)
                    .map(|(_, _, a)| *a)
            });
            if known.is_some() {
                return known;
            }
        }
        let input = Input::new(text).anchored(self.anchored);
        let start = self.dfa.start_state_forward(cache, &input).ok()?;
        let start = After {
            state: start,
            matched: false,
            clears,
        };
        let after = self.walk(cache, start, prefix)?;
        if !prefix.is_empty() {
            PREFIXES.with(|p| {
                let mut p = p.borrow_mut();
                if p.len() >= PREFIXES_KEPT {
                    p.remove(0);
                }
                p.push((self.id, prefix.to_vec(), after));
            });
        }
        Some(after)
    }

    /// The state after `bytes` from `from`; `None` when the DFA gives up. An unanchored DFA (a
    /// regex asked whether it matches) stops at its first match.
    fn walk(&self, cache: &mut Cache, from: After, bytes: &[u8]) -> Option<After> {
        let mut after = from;
        if after.matched || after.state.is_dead() {
            return Some(after);
        }
        let stop_at_match = self.anchored == Anchored::No;
        for &b in bytes {
            let next = self.dfa.next_state(cache, after.state, b).ok()?;
            after.state = next;
            if next.is_tagged() {
                if next.is_quit() {
                    return None;
                }
                if next.is_dead() {
                    break;
                }
                if next.is_match() {
                    after.matched = true;
                    if stop_at_match {
                        break;
                    }
                }
            }
        }
        // A cache cleared meanwhile kept the current state valid, not the remembered ones.
        after.clears = cache.clear_count();
        Some(after)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::catalogue::Catalogue;
    use globset::{Candidate, GlobSetBuilder};
    use std::collections::BTreeSet;

    /// Every builtin item glob of each depth, as one `GlobSet` and one DFA: both find the same
    /// globs for the rules' examples and counter-examples, their components recombined, and
    /// their names with a prefix remembered.
    #[test]
    fn the_glob_dfa_matches_what_the_glob_set_does() {
        let cat = Catalogue::builtin();
        let mut by_depth: Vec<Vec<String>> = Vec::new();
        let mut paths: BTreeSet<String> = BTreeSet::new();
        for rule in cat.rules() {
            for g in &rule.item {
                let depth = super::super::glob_depth(g).unwrap_or(1);
                if by_depth.len() < depth {
                    by_depth.resize(depth, Vec::new());
                }
                by_depth[depth - 1].push(g.clone());
            }
            paths.extend(rule.examples.iter().cloned());
            paths.extend(rule.counter_examples.iter().cloned());
        }
        let parts: BTreeSet<String> = paths
            .iter()
            .flat_map(|p| p.split('/').map(str::to_owned).collect::<Vec<_>>())
            .collect();
        let parts: Vec<&String> = parts.iter().collect();
        for (i, a) in parts.iter().enumerate() {
            for b in parts.iter().skip(i % 7).step_by(7) {
                paths.insert(format!("{a}/{b}"));
                paths.insert(format!("{b}/{a}/{b}"));
            }
        }
        let mut checked = 0;
        for globs in &by_depth {
            if globs.is_empty() {
                continue;
            }
            let mut set = GlobSetBuilder::new();
            let mut regexes = Vec::new();
            for g in globs {
                let glob = super::super::compile_glob(g).unwrap();
                regexes.push(glob.regex().to_owned());
                set.add(glob);
            }
            let set = set.build().unwrap();
            let regexes: Vec<&str> = regexes.iter().map(String::as_str).collect();
            let dfa = Resumable::globs(&regexes).unwrap();
            for round in 0..2 {
                for p in &paths {
                    let bytes = p.as_bytes();
                    let cut = bytes.iter().rposition(|&b| b == b'/').map_or(0, |i| i + 1);
                    let mut got = Vec::new();
                    dfa.matches_at_end(bytes, cut, &mut got).unwrap();
                    got.sort_unstable();
                    let mut want = Vec::new();
                    set.matches_candidate_into(&Candidate::new(p), &mut want);
                    assert_eq!(got, want, "{p} (round {round})");
                    checked += usize::from(!want.is_empty());
                }
            }
        }
        assert!(checked > 50, "only {checked} matches checked");
    }

    #[test]
    fn a_regex_dfa_says_whether_it_matches_after_a_remembered_prefix() {
        let rx = regex::bytes::Regex::new(r"(?-u)(?:^|/)x(?P<ts>\d+)?/b$").unwrap();
        let dfa = Resumable::regex(rx.as_str()).unwrap();
        for text in [
            "a/x1/b", "a/x1/c", "x/b", "ax/b", "a/x/b/", "q/x12/b", "q/x12/bb",
        ] {
            let cut = text.rfind('/').map_or(0, |i| i + 1);
            for _ in 0..2 {
                assert_eq!(
                    dfa.is_match(text.as_bytes(), cut),
                    Some(rx.is_match(text.as_bytes())),
                    "{text}"
                );
            }
        }
    }
}
