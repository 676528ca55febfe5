//! A rule's `name_regex` or `path_regex` as the matcher runs it on every entry a glob selects.
//!
//! ASCII text (nearly every name) goes to an ASCII twin of the regex: the same pattern compiled
//! with Unicode off on bytes, which on ASCII text matches and captures exactly what the Unicode
//! regex does (a Unicode class, `\w`, `(?i)` or `.` differs from its ASCII form only on non-ASCII
//! characters) with a far smaller automaton, and needs no `to_string_lossy`. Its captures are read
//! into per-thread [`CaptureLocations`], so a match allocates only the captured `bundle`. Other
//! text, and patterns the twin cannot compile (`\p{..}`), use the Unicode regex on the lossy
//! text, as before.
//!
//! A `path_regex` with groups also remembers, per thread, what the recent dirs' path prefixes
//! settle ([`super::prefix`]): from the second entry of a dir on, an entry whose captures the
//! prefix fixes needs only a plain match.

use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};

use regex::bytes::{CaptureLocations, Regex as BytesRegex, RegexBuilder};
use regex::Regex;

use super::dfa::Resumable;
use super::parse_ts;
use super::prefix::{Plan, Settled, Slots};
use crate::inventory::Captures;

/// Capture locations kept per thread (one per regex recently used on it).
const LOCATIONS_KEPT: usize = 16;

/// Path prefixes remembered per thread.
const PREFIXES_KEPT: usize = 8;

/// What a thread knows of a path prefix for one regex.
enum Known {
    /// Seen once: settled when seen again (a dir of one entry is not worth it).
    Once,
    /// Settled.
    Settled(Settled),
}

thread_local! {
    /// `(Rx::id, locations)` of the regexes recently run on this thread.
    static LOCATIONS: RefCell<Vec<(usize, CaptureLocations)>> = const { RefCell::new(Vec::new()) };
    /// `(Rx::id, prefix, known)` of the path prefixes recently seen on this thread.
    static PREFIXES: RefCell<Vec<(usize, Vec<u8>, Known)>> = const { RefCell::new(Vec::new()) };
}

/// Ids of compiled regexes (clones share one: same pattern, same groups).
static NEXT_ID: AtomicUsize = AtomicUsize::new(0);

/// One compiled rule regex.
#[derive(Debug, Clone)]
pub(in crate::catalogue) struct Rx {
    unicode: Regex,
    ascii: Option<BytesRegex>,
    /// Group indices of `pid`, `ts` and `bundle`.
    pid: Option<usize>,
    ts: Option<usize>,
    bundle: Option<usize>,
    /// The automaton settling path prefixes (a regex with groups and an ASCII twin).
    plan: Option<Plan>,
    /// The ASCII twin as a DFA resuming after a path prefix (with `plan`).
    dfa: Option<Resumable>,
    id: usize,
}

impl Rx {
    /// `rx` and its ASCII twin.
    pub(in crate::catalogue) fn new(rx: Regex) -> Rx {
        let group = |want: &str| rx.capture_names().position(|n| n == Some(want));
        let ascii = RegexBuilder::new(rx.as_str()).unicode(false).build().ok();
        let (pid, ts, bundle) = (group("pid"), group("ts"), group("bundle"));
        let groups: Vec<usize> = [pid, ts, bundle].into_iter().flatten().collect();
        let plan = (ascii.is_some() && !groups.is_empty())
            .then(|| Plan::new(rx.as_str(), &groups))
            .flatten();
        let dfa = plan.as_ref().and_then(|_| Resumable::regex(rx.as_str()));
        Rx {
            ascii,
            pid,
            ts,
            bundle,
            plan,
            dfa,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            unicode: rx,
        }
    }

    /// [`Rx::apply`] on a path relative to a root, using what its dir's prefix settles.
    pub(in crate::catalogue) fn apply_path(&self, out: &mut Captures, text: &[u8]) -> Option<()> {
        let (Some(plan), Some(ascii)) = (&self.plan, &self.ascii) else {
            return self.apply(out, text);
        };
        let Some(cut) = text.iter().rposition(|&b| b == b'/').map(|i| i + 1) else {
            return self.apply(out, text);
        };
        if !text.is_ascii() {
            return self.apply(out, text);
        }
        self.settled(plan, &text[..cut], |settled| match settled {
            Some(Settled::Never) => None,
            Some(Settled::Fixed(slots)) => {
                let matched = self.dfa.as_ref().and_then(|d| d.is_match(text, cut));
                if !matched.unwrap_or_else(|| ascii.is_match(text)) {
                    return None;
                }
                self.fill_slots(out, text, slots);
                Some(())
            }
            Some(Settled::Open) | None => self.apply(out, text),
        })
    }

    /// Runs `f` with what `prefix` settles, once this thread has seen it twice (`None` before).
    fn settled<R>(&self, plan: &Plan, prefix: &[u8], f: impl FnOnce(Option<&Settled>) -> R) -> R {
        PREFIXES.with(|cell| {
            let mut kept = cell.borrow_mut();
            let at = kept
                .iter()
                .position(|(id, p, _)| *id == self.id && p.as_slice() == prefix);
            match at {
                Some(at) => {
                    let known = &mut kept[at].2;
                    if let Known::Once = known {
                        *known = Known::Settled(plan.settle(prefix));
                    }
                    match known {
                        Known::Settled(s) => f(Some(s)),
                        Known::Once => f(None),
                    }
                }
                None => {
                    if kept.len() >= PREFIXES_KEPT {
                        kept.remove(0);
                    }
                    kept.push((self.id, prefix.to_vec(), Known::Once));
                    drop(kept);
                    f(None)
                }
            }
        })
    }

    /// Fills `out` from wanted slots settled on `text` (pid, ts, bundle order, present groups only).
    fn fill_slots(&self, out: &mut Captures, text: &[u8], slots: &Slots) {
        let mut k = 0;
        let mut next = |present: bool| -> Option<&str> {
            if !present {
                return None;
            }
            let at = k;
            k += 2;
            let (s, e) = (slots.get(at).copied()??, slots.get(at + 1).copied()??);
            std::str::from_utf8(text.get(s..e)?).ok()
        };
        let pid = next(self.pid.is_some());
        let ts = next(self.ts.is_some());
        let bundle = next(self.bundle.is_some());
        self.fill(out, pid, ts, bundle);
    }

    /// True when the regex captures a `pid`, `ts` or `bundle`.
    fn captures_any(&self) -> bool {
        self.pid.is_some() || self.ts.is_some() || self.bundle.is_some()
    }

    /// Matches on `text`: `None` when it does not match, else fills `out` with the `pid`, `ts` and
    /// `bundle` groups that matched. A regex without such groups runs as a plain match.
    pub(in crate::catalogue) fn apply(&self, out: &mut Captures, text: &[u8]) -> Option<()> {
        match &self.ascii {
            Some(ascii) if text.is_ascii() => {
                if !self.captures_any() {
                    return ascii.is_match(text).then_some(());
                }
                self.with_locations(ascii, |locs| {
                    ascii.captures_read(locs, text)?;
                    let group = |i: Option<usize>| {
                        let (s, e) = locs.get(i?)?;
                        // ASCII, so UTF-8.
                        std::str::from_utf8(&text[s..e]).ok()
                    };
                    self.fill(out, group(self.pid), group(self.ts), group(self.bundle));
                    Some(())
                })
            }
            _ => {
                let text = String::from_utf8_lossy(text);
                if !self.captures_any() {
                    return self.unicode.is_match(&text).then_some(());
                }
                let caps = self.unicode.captures(&text)?;
                let group = |i: Option<usize>| Some(caps.get(i?)?.as_str());
                self.fill(out, group(self.pid), group(self.ts), group(self.bundle));
                Some(())
            }
        }
    }

    /// Copies the groups that matched into `out` (a later regex's match replaces an earlier one's).
    fn fill(&self, out: &mut Captures, pid: Option<&str>, ts: Option<&str>, bundle: Option<&str>) {
        if let Some(pid) = pid {
            out.pid = pid.parse().ok().or(out.pid);
        }
        if let Some(ts) = ts {
            out.ts = parse_ts(ts).or(out.ts);
        }
        if let Some(bundle) = bundle {
            out.bundle = Some(bundle.to_owned());
        }
    }

    /// Runs `f` with this thread's capture locations for `ascii` (this regex's twin).
    fn with_locations<R>(
        &self,
        ascii: &BytesRegex,
        f: impl FnOnce(&mut CaptureLocations) -> R,
    ) -> R {
        LOCATIONS.with(|cell| {
            let mut kept = cell.borrow_mut();
            let at = match kept.iter().position(|(id, _)| *id == self.id) {
                Some(at) => at,
                None => {
                    if kept.len() >= LOCATIONS_KEPT {
                        kept.clear();
                    }
                    kept.push((self.id, ascii.capture_locations()));
                    kept.len() - 1
                }
            };
            f(&mut kept[at].1)
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "rx_tests.rs"]
mod tests;
