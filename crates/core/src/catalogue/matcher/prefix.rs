//! Captures of a `path_regex` shared by every entry of one dir, found once per dir.
//!
//! The scan asks about `<dir>/<name>` for every name of a dir, so the text before the name (the
//! prefix, up to and with the last `/`) repeats. [`Plan::settle`] runs the regex's automaton
//! (Thompson NFA, the ASCII twin's) over the prefix once, keeping every configuration a match
//! could pass through at the prefix's end (NFA state and the `pid`/`ts`/`bundle` slots so far),
//! then drops those that cannot end in a match on a name (a name holds no `/`). When what is left
//! agrees on the slots and none of its states can reach one of those groups' capture states
//! again, every match on `<prefix><name>`, whatever the name, captures exactly those slots:
//! the match that the regex engine picks passes through one of these configurations. Then a
//! plain match (no capture search) decides each entry. Otherwise ([`Settled::Open`]) each entry
//! runs the capture search as before. Exact for any regex: this only skips work whose outcome is
//! known.

use regex_automata::nfa::thompson::{self, State, WhichCaptures, NFA};
use regex_automata::util::primitives::StateID;
use regex_automata::util::syntax;
use regex_automata::PatternID;

/// Slot values (byte offsets into the text) of the wanted groups, in [`Plan::slots`] order.
pub(super) type Slots = Vec<Option<usize>>;

/// What the prefix settles for every name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Settled {
    /// No name can make the regex match.
    Never,
    /// Any match captures these slots (the name decides only whether it matches).
    Fixed(Slots),
    /// The name may change what is captured.
    Open,
}

/// The automaton of one regex and what each of its states can still do.
#[derive(Debug, Clone)]
pub(super) struct Plan {
    nfa: NFA,
    /// NFA slot indices of the wanted groups (start, end of each), in order.
    slots: Vec<usize>,
    /// Per state: a path from it passes a wanted group's capture state.
    touches: Vec<bool>,
    /// Per state: a path from it reaches a match consuming no `/`.
    may_finish: Vec<bool>,
}

/// The most configurations followed over a prefix; past this it is [`Settled::Open`].
const MAX_CONFIGS: usize = 256;

impl Plan {
    /// The plan of `pattern` compiled as the ASCII twin is (Unicode off, bytes), for the groups
    /// `groups` (indices as the regex numbers them); `None` when it does not compile.
    pub(super) fn new(pattern: &str, groups: &[usize]) -> Option<Plan> {
        let nfa = NFA::compiler()
            .syntax(syntax::Config::new().unicode(false).utf8(false))
            .configure(
                thompson::Config::new()
                    .utf8(false)
                    .which_captures(WhichCaptures::All),
            )
            .build(pattern)
            .ok()?;
        let info = nfa.group_info();
        let mut slots = Vec::new();
        for &g in groups {
            let (s, e) = info.slots(PatternID::ZERO, g)?;
            slots.extend([s, e]);
        }
        let touches = fixpoint(&nfa, |st, known| match st {
            State::Capture { slot, next, .. } => {
                slots.contains(&slot.as_usize()) || known[next.as_usize()]
            }
            _ => successors(st, |_| true).any(|s| known[s.as_usize()]),
        });
        let may_finish = fixpoint(&nfa, |st, known| match st {
            State::Match { .. } => true,
            _ => successors(st, |b| b != b'/').any(|s| known[s.as_usize()]),
        });
        Some(Plan {
            nfa,
            slots,
            touches,
            may_finish,
        })
    }

    /// Where NFA slot `slot` sits among the wanted slots.
    fn slot_of(&self, slot: usize) -> Option<usize> {
        self.slots.iter().position(|&s| s == slot)
    }

    /// Runs the automaton over `prefix` (ASCII, ending in `/`).
    pub(super) fn settle(&self, prefix: &[u8]) -> Settled {
        let nfa = &self.nfa;
        let looks = nfa.look_matcher();
        let mut now: Vec<(StateID, Slots)> =
            vec![(nfa.start_unanchored(), vec![None; self.slots.len()])];
        let mut stack: Vec<(StateID, Slots)> = Vec::new();
        let mut seen: Vec<(StateID, Slots)> = Vec::new();
        for (at, &byte) in prefix.iter().enumerate() {
            // Epsilon closure at `at` (the byte there is known: it is in the prefix).
            seen.clear();
            stack.clear();
            stack.append(&mut now);
            while let Some((id, slots)) = stack.pop() {
                if seen.iter().any(|(s, v)| *s == id && *v == slots) {
                    continue;
                }
                if seen.len() >= MAX_CONFIGS {
                    return Settled::Open;
                }
                seen.push((id, slots.clone()));
                match nfa.state(id) {
                    State::Union { alternates } => {
                        stack.extend(alternates.iter().map(|&a| (a, slots.clone())));
                    }
                    State::BinaryUnion { alt1, alt2 } => {
                        stack.push((*alt1, slots.clone()));
                        stack.push((*alt2, slots));
                    }
                    State::Capture { next, slot, .. } => {
                        let mut slots = slots;
                        if let Some(k) = self.slot_of(slot.as_usize()) {
                            slots[k] = Some(at);
                        }
                        stack.push((*next, slots));
                    }
                    State::Look { look, next } => {
                        if looks.matches(*look, prefix, at) {
                            stack.push((*next, slots));
                        }
                    }
                    // A match ending inside the prefix: the engine may pick it; give up.
                    State::Match { .. } => return Settled::Open,
                    State::ByteRange { .. } | State::Sparse(_) | State::Dense(_) | State::Fail => {}
                }
            }
            // The byte at `at`.
            for (id, slots) in seen.drain(..) {
                let next = match nfa.state(id) {
                    State::ByteRange { trans } => trans.matches_byte(byte).then_some(trans.next),
                    State::Sparse(t) => t.matches_byte(byte),
                    State::Dense(t) => t.matches_byte(byte),
                    _ => None,
                };
                if let Some(next) = next {
                    if !now.iter().any(|(s, v)| *s == next && *v == slots) {
                        now.push((next, slots));
                    }
                }
            }
            if now.is_empty() {
                return Settled::Never;
            }
        }
        now.retain(|(id, _)| self.may_finish[id.as_usize()]);
        if now.iter().any(|(id, _)| self.touches[id.as_usize()]) {
            return Settled::Open;
        }
        match now.split_first() {
            None => Settled::Never,
            Some(((_, first), rest)) if rest.iter().all(|(_, v)| v == first) => {
                Settled::Fixed(first.clone())
            }
            Some(_) => Settled::Open,
        }
    }
}

/// The states of `st`'s transitions on bytes `byte_ok` accepts, and its epsilon successors.
fn successors(st: &State, byte_ok: impl Fn(u8) -> bool) -> impl Iterator<Item = StateID> + '_ {
    let range_ok = move |start: u8, end: u8| (start..=end).any(&byte_ok);
    let mut out: Vec<StateID> = Vec::new();
    match st {
        State::ByteRange { trans } => {
            if range_ok(trans.start, trans.end) {
                out.push(trans.next);
            }
        }
        State::Sparse(t) => out.extend(
            t.transitions
                .iter()
                .filter(|tr| range_ok(tr.start, tr.end))
                .map(|tr| tr.next),
        ),
        State::Dense(t) => out.extend(
            t.transitions
                .iter()
                .enumerate()
                .filter(|&(b, &next)| {
                    next != StateID::ZERO && u8::try_from(b).is_ok_and(|b| range_ok(b, b))
                })
                .map(|(_, &next)| next),
        ),
        State::Look { next, .. } | State::Capture { next, .. } => out.push(*next),
        State::Union { alternates } => out.extend(alternates.iter().copied()),
        State::BinaryUnion { alt1, alt2 } => out.extend([*alt1, *alt2]),
        State::Fail | State::Match { .. } => {}
    }
    out.into_iter()
}

/// The least per-state property `holds(state, known)` closed under `known` (iterated to a fixed
/// point: the NFAs of rule regexes have a few hundred states at most).
fn fixpoint(nfa: &NFA, holds: impl Fn(&State, &[bool]) -> bool) -> Vec<bool> {
    let mut known = vec![false; nfa.states().len()];
    loop {
        let mut changed = false;
        for (i, st) in nfa.states().iter().enumerate() {
            if !known[i] && holds(st, &known) {
                known[i] = true;
                changed = true;
            }
        }
        if !changed {
            return known;
        }
    }
}
