//! From a group to a `[[producer]]` rule: the rule a group suggests ([`rule_for`]) and the check
//! that it claims every member and nothing else in the root ([`check_rule`]).

use std::ffi::OsString;
use std::path::Path;

use super::{ShapeGroup, GROUP_MIN_ITEMS};
use crate::catalogue::{Catalogue, Owner, ProducerKind, ReclaimMode, Rule};
use crate::provenance::{Evidence, EvidenceKind};
use crate::roots::{Root, RootKind};
use crate::units::format_bytes;

/// The age floor of a rule made from a group: an hour (a writer may still be filling the newest
/// members).
pub const MIN_AGE_FLOOR_SECS: u64 = 3600;

/// What a rule made from a group is called, and how it may reclaim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleOptions {
    /// Rule id.
    pub id: String,
    /// Human name; `None`: derived from the shape (and the writer, when one was seen).
    pub name: Option<String>,
    /// `manual` unless asked (`auto` puts it in a default reclaim).
    pub reclaim: ReclaimMode,
    /// The process seen writing into the group, if any.
    pub writer: Option<String>,
    /// The evidence naming the group's writer, strongest first ([`crate::provenance`]): the
    /// first that gives an owner makes the rule's `owner` (see [`owner_from`]).
    pub evidence: Vec<Evidence>,
}

/// The owner a rule made from `group` (of a root of `kind`) takes from the evidence `evidence`
/// (strongest first), with the part of the shape that carries the pid, if any; the first piece
/// that gives one wins:
///
/// - "pid in the name" ([`EvidenceKind::PidInName`]) whose digit run is a `<digits>` placeholder
///   in every example: `owner.pid_in_name`, and that placeholder becomes the regex's `pid`
///   capture (a run that took one value in all members is literal: one process, no capture);
/// - "created at launch" ([`EvidenceKind::CreatedAtLaunch`]): `owner.processes = [name]`, the
///   executable whose starts the members' births follow;
/// - "in the path" ([`EvidenceKind::InPath`]) in a `container-temp` root: the root's bundle id is
///   the items' `bundle` capture already, and `owner.app_in_path` (on by default) keeps them
///   while that app runs; in any other root the bundle id lies above the root, where a rule's
///   regexes cannot capture it, so it gives no owner.
///
/// Held files give none: the process holding a member is checked by reclaim anyway.
pub fn owner_from(
    kind: RootKind,
    group: &ShapeGroup,
    evidence: &[Evidence],
) -> Option<(Owner, Option<usize>, String)> {
    use std::os::unix::ffi::OsStrExt;
    let names: Vec<&[u8]> = group.examples.iter().map(|e| e.as_bytes()).collect();
    for e in evidence {
        match e.kind {
            EvidenceKind::PidInName => {
                let Some(k) = e.pid_run else { continue };
                let Some(part) = group.shape.digit_run_part(&names, k) else {
                    continue;
                };
                let owner = Owner {
                    pid_in_name: true,
                    ..Owner::default()
                };
                let why = format!(
                    "Owner: the pid in the name ({}, {} of {} members).",
                    e.name, e.agree, e.total
                );
                return Some((owner, Some(part), why));
            }
            EvidenceKind::CreatedAtLaunch if !e.name.is_empty() => {
                let owner = Owner {
                    processes: vec![e.name.clone()],
                    ..Owner::default()
                };
                let why = format!(
                    "Owner: {} (members born right after its launches, {} of {}).",
                    e.name, e.agree, e.total
                );
                return Some((owner, None, why));
            }
            EvidenceKind::InPath if kind == RootKind::ContainerTemp => {
                let why = format!(
                    "Owner: the app {} (its container holds the members).",
                    e.name
                );
                return Some((Owner::default(), None, why));
            }
            _ => {}
        }
    }
    None
}

/// A rule id made from the shape's literal words (`tmp<rand8>/` gives `local-tmp`), for
/// suggestions; `local-unknown` when it has none.
pub fn suggested_id(group: &ShapeGroup) -> String {
    let within = group
        .within
        .as_ref()
        .map(|w| w.to_string_lossy().to_ascii_lowercase());
    let words: Vec<String> = within
        .into_iter()
        .chain(group.shape.parts.iter().filter_map(|p| match p {
            super::Part::Lit(s) => Some(String::from_utf8_lossy(s).to_ascii_lowercase()),
            _ => None,
        }))
        .flat_map(|s| {
            s.split(|c: char| !c.is_ascii_alphanumeric())
                .filter(|w| !w.is_empty())
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect();
    if words.is_empty() {
        "local-unknown".to_owned()
    } else {
        format!("local-{}", words.join("-"))
    }
}

/// Why a group cannot be made a rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    /// The names hold bytes that are not UTF-8 (or U+FFFD): a rule's regex and globs match
    /// names as text, where every such byte reads as U+FFFD, so a rule could not tell the members
    /// from names that really hold U+FFFD (nor those from names with other bytes).
    #[error(
        "the names of group {shape:?} are not UTF-8 text (or hold U+FFFD, which stands for such \
         bytes): a rule matches names as text and could not tell them from other names; no rule \
         is made for it (remove or rename its members by hand)"
    )]
    NotText {
        /// The group's shape, as shown (`\xff` for such a byte).
        shape: String,
    },
    /// The rule made would not load (a glob or regex that does not compile).
    #[error("the rule made for group {shape:?} would not load: {message}; no rule is made for it")]
    Invalid {
        /// The group's shape.
        shape: String,
        /// What does not compile.
        message: String,
    },
}

/// The `[[producer]]` rule for `group` (of a root of `kind`): the shape's glob and anchored regex,
/// `kind = "leak"`, an age floor of [`MIN_AGE_FLOOR_SECS`], the group's examples, and the owner
/// the evidence gives ([`owner_from`]; with a `pid` capture in the regex for a pid in the name).
///
/// # Errors
/// [`RuleError::NotText`] when a literal of the shape is not UTF-8 text or holds U+FFFD (the
/// catalogue matches such names on a lossy rendering); [`RuleError::Invalid`] when the glob or
/// regex made would not compile.
pub fn rule_for(kind: RootKind, group: &ShapeGroup, opts: &RuleOptions) -> Result<Rule, RuleError> {
    let shape = group.shown();
    // The dir a group one level down lies in is part of the rule's glob: it must be text too.
    let within = match &group.within {
        Some(w) => match w.to_str().filter(|t| !t.contains('\u{FFFD}')) {
            Some(t) => Some(t),
            None => return Err(RuleError::NotText { shape }),
        },
        None => None,
    };
    if !group.shape.is_text() {
        return Err(RuleError::NotText { shape });
    }
    // One or two levels down: `<dir>/<glob>` (`<top>/<subdir>/<glob>`), each name escaped; the
    // catalogue's globs are of fixed depth with `*` never crossing a `/`, so this claims that
    // dir's children of the shape only (the regex is matched on the last component, the
    // member's name).
    let mut glob = String::new();
    if let Some(w) = within {
        super::glob_escape(w, &mut glob);
        // A plain first component would make that top-level dir an implicit structure dir of
        // the rule (the catalogue attributes such a dir, with whatever else it holds, to the
        // rule): its first character is written as a class, so the rule claims its members
        // only and the rest of the dir stays unattributed.
        if !glob
            .split('/')
            .next()
            .is_some_and(|f| f.contains(['*', '?', '[', ']', '{', '}', '\\']))
        {
            if let Some(c) = w.chars().next() {
                let class = if c == '^' {
                    "\\^".to_owned()
                } else {
                    format!("[{c}]")
                };
                glob.replace_range(..c.len_utf8(), &class);
            }
        }
        glob.push('/');
    }
    glob.push_str(&group.shape.glob());
    let owner = owner_from(kind, group, &opts.evidence);
    let regex = group
        .shape
        .regex_with_pid(owner.as_ref().and_then(|(_, part, _)| *part));
    let invalid = |message: String| RuleError::Invalid {
        shape: shape.clone(),
        message,
    };
    globset::GlobBuilder::new(&glob)
        .literal_separator(true)
        .build()
        .map_err(|e| invalid(format!("glob {glob:?}: {e}")))?;
    regex::Regex::new(&regex).map_err(|e| invalid(format!("regex {regex:?}: {e}")))?;
    let name = opts.name.clone().unwrap_or_else(|| match &opts.writer {
        Some(w) => format!("{w}: {shape} leftovers"),
        None => format!("Unknown producer of {shape}"),
    });
    let mut notes = format!(
        "Made from {} unattributed {} of shape {shape} in the {kind} root ({}).",
        group.items,
        if group.shape.dir { "dirs" } else { "files" },
        format_bytes(i128::from(group.measure.allocated_bytes)),
    );
    let example = |e: &std::ffi::OsString| match within {
        Some(w) => format!("{w}/{}", e.to_string_lossy()),
        None => e.to_string_lossy().into_owned(),
    };
    if let Some(w) = &opts.writer {
        notes.push_str(&format!(" Seen written by {w}."));
    }
    let owner = match owner {
        Some((owner, _, why)) => {
            notes.push(' ');
            notes.push_str(&why);
            owner
        }
        None => Owner::default(),
    };
    Ok(Rule {
        id: opts.id.clone(),
        name,
        root: kind,
        item: vec![glob],
        name_regex: Some(regex),
        path_regex: None,
        kind: ProducerKind::Leak,
        reclaim: opts.reclaim,
        min_age_secs: MIN_AGE_FLOOR_SECS,
        owner,
        evidence: Vec::new(),
        notes,
        examples: group.examples.iter().map(example).collect(),
        counter_examples: Vec::new(),
        structure: Vec::new(),
        versioned: false,
        contains: Vec::new(),
        lacks: Vec::new(),
        managed_by: None,
    })
}

/// What a rule would get wrong in a root.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuleCheck {
    /// Entries the rule would claim that are not members of the group (top-level names; for a
    /// group one or two levels down, `<dir>/<name>`).
    pub wrongly_claimed: Vec<OsString>,
    /// Members the rule would not claim.
    pub missed: Vec<OsString>,
    /// Members the rule claims.
    pub claimed: u64,
}

impl RuleCheck {
    /// True when the rule claims every member and nothing else.
    pub fn is_exact(&self) -> bool {
        self.wrongly_claimed.is_empty() && self.missed.is_empty()
    }
}

/// Lists the top-level entries of `root` (canonical path, a root of `kind`) and checks that the
/// rule `id` of `catalogue` (which holds it) claims exactly the members of `group`. For a group
/// one or two levels down ([`ShapeGroup::within`]) the entries of each dir down to the group's
/// are checked too (as `<dir>/<name>`). At most `GROUP_MIN_ITEMS` names of each list are kept.
///
/// What another producer holds is judged by `before`, the catalogue without the rule, as the
/// scan judges it (`contains` read on disk): an entry that `before` claims, or that holds an
/// item `before` claims anywhere under it, is no member, and the rule claiming it is wrongly
/// claiming it (the rule would take that producer's items, and reclaim them as its own).
///
/// # Errors
/// The root (or the group's dir) cannot be listed.
pub fn check_rule(
    before: &Catalogue,
    catalogue: &Catalogue,
    id: &str,
    kind: RootKind,
    root: &Path,
    group: &ShapeGroup,
) -> std::io::Result<RuleCheck> {
    check_rule_in(before, catalogue, id, kind, root, &[], group)
}

/// [`check_rule`], and the rule claims nothing in `others`, the other roots of the same kind (a
/// rule names a kind of root, not one root, so it claims in each of them): what it would claim
/// there is wrongly claimed (shown as full paths). An other root, or the group's dir in it, that
/// does not exist holds nothing.
///
/// # Errors
/// The root (or the group's dir) cannot be listed; an other root that exists cannot be.
pub fn check_rule_in(
    before: &Catalogue,
    catalogue: &Catalogue,
    id: &str,
    kind: RootKind,
    root: &Path,
    others: &[std::path::PathBuf],
    group: &ShapeGroup,
) -> std::io::Result<RuleCheck> {
    let mut out = RuleCheck::default();
    let judge = Judge {
        before,
        catalogue,
        id,
        kind,
        group,
    };
    judge.levels(root, true, &mut out)?;
    for other in others.iter().filter(|o| o.as_path() != root) {
        match judge.levels(other, false, &mut out) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            r => r?,
        }
    }
    out.wrongly_claimed.sort();
    out.missed.sort();
    Ok(out)
}

/// What [`check_rule_in`] judges entries with.
struct Judge<'a> {
    before: &'a Catalogue,
    catalogue: &'a Catalogue,
    id: &'a str,
    kind: RootKind,
    group: &'a ShapeGroup,
}

impl Judge<'_> {
    /// Judges the entries of `root` at the rule's level: its top level, then the group's dir
    /// (no member at the top level of a group one level down). In the group's own root
    /// (`members`) an entry of the group's shape that no other producer holds is a member; in
    /// another root there is none, and what the rule claims is shown as a full path.
    fn levels(&self, root: &Path, members: bool, out: &mut RuleCheck) -> std::io::Result<()> {
        let held_root = Root {
            kind: self.kind,
            path: root.to_path_buf(),
            canonical: root.to_path_buf(),
            nested: Vec::new(),
        };
        let keep = GROUP_MIN_ITEMS as usize;
        // The top level, then each dir down to the group's: `<top>` and `<top>/<subdir>` for a
        // group two levels down (members in the last only).
        let within = self.group.within.as_deref().map(Path::new);
        let mut levels: Vec<(std::path::PathBuf, Option<&Path>, bool)> =
            vec![(root.to_path_buf(), None, within.is_none())];
        if let Some(w) = within {
            let mut downs: Vec<&Path> = w
                .ancestors()
                .filter(|a| !a.as_os_str().is_empty())
                .collect();
            downs.reverse();
            for d in downs {
                levels.push((root.join(d), Some(d), d == w));
            }
        }
        for (dir_path, prefix, has_members) in levels {
            let entries = match std::fs::read_dir(&dir_path) {
                // The group's dir missing in another root: nothing there.
                Err(e)
                    if prefix.is_some() && !members && e.kind() == std::io::ErrorKind::NotFound =>
                {
                    continue
                }
                r => r?,
            };
            for entry in entries {
                let entry = entry?;
                let name = entry.file_name();
                let rel = match prefix {
                    Some(p) => Path::new(p).join(&name),
                    None => Path::new(&name).to_path_buf(),
                };
                let claim = self.catalogue.item_of_in(&held_root, &rel);
                let ours = claim
                    .as_ref()
                    .is_some_and(|m| m.rule.id == self.id && m.item == rel);
                if claim.is_some() && !ours {
                    continue;
                }
                let dir = entry.file_type().is_ok_and(|t| t.is_dir());
                // Held by another producer now (here or under it): never a member.
                let held = self.before.claim_at_or_under(&held_root, &rel).is_some();
                let member = members && has_members && !held && self.group.contains(&name, dir);
                let shown = if members {
                    rel.into_os_string()
                } else {
                    root.join(rel).into_os_string()
                };
                match (ours, member) {
                    (true, true) => out.claimed += 1,
                    (true, false) if out.wrongly_claimed.len() < keep => {
                        out.wrongly_claimed.push(shown)
                    }
                    (false, true) if out.missed.len() < keep => out.missed.push(shown),
                    _ => {}
                }
            }
        }
        Ok(())
    }
}
