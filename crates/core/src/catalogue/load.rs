//! Parsing `[[producer]]` tables and validating them into a [`Catalogue`].

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use regex::Regex;
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;
use toml::Spanned;

use super::matcher::{self, Compiled, RuleRegex};
use super::{Catalogue, CatalogueError, Owner, ProducerKind, ReclaimMode, Rule, BUILTIN_ORIGIN};
use crate::roots::RootKind;
use crate::toml_lines::{error_line, line_at};

/// A parsed rule with where each part of it was written.
#[derive(Debug, Clone)]
pub(super) struct Loaded {
    pub(super) rule: Rule,
    origin: PathBuf,
    id_line: usize,
    glob_lines: Vec<usize>,
    name_regex_line: usize,
    path_regex_line: usize,
    example_lines: Vec<usize>,
    counter_example_lines: Vec<usize>,
    structure_lines: Vec<usize>,
}

/// The file: only `[[producer]]` matters; other tables (a user config's) are ignored.
#[derive(Deserialize)]
struct RawFile {
    #[serde(default)]
    producer: Vec<RawRule>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    id: Spanned<String>,
    name: String,
    root: RootKind,
    item: Spanned<OneOrMany>,
    #[serde(default)]
    name_regex: Option<Spanned<String>>,
    #[serde(default)]
    path_regex: Option<Spanned<String>>,
    kind: ProducerKind,
    reclaim: ReclaimMode,
    #[serde(default)]
    min_age_secs: u64,
    #[serde(default)]
    owner: Owner,
    #[serde(default)]
    evidence: Vec<String>,
    #[serde(default)]
    notes: String,
    #[serde(default)]
    examples: Vec<Spanned<String>>,
    #[serde(default)]
    counter_examples: Vec<Spanned<String>>,
    #[serde(default)]
    structure: Option<Spanned<OneOrMany>>,
    #[serde(default)]
    versioned: bool,
    #[serde(default)]
    contains: Vec<String>,
    #[serde(default)]
    lacks: Vec<String>,
    #[serde(default)]
    managed_by: Option<String>,
}

/// One string or an array of strings.
struct OneOrMany(Vec<String>);

impl<'de> Deserialize<'de> for OneOrMany {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        one_or_many(d).map(OneOrMany)
    }
}

/// Deserializes one string or an array of strings into a `Vec<String>` (the `item` field).
///
/// # Errors
/// A serde error when the value is neither.
pub(super) fn one_or_many<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Vec<String>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a glob string or an array of glob strings")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(vec![v.to_owned()])
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(s) = seq.next_element::<String>()? {
                out.push(s);
            }
            Ok(out)
        }
    }
    d.deserialize_any(V)
}

/// Line of `needle` written inside `span` of `text` (for one entry of a multi-line array), falling
/// back to the span's first line.
fn line_within(text: &str, span: Range<usize>, needle: &str) -> usize {
    let at = text
        .get(span.clone())
        .and_then(|s| s.find(needle))
        .map_or(span.start, |i| span.start + i);
    line_at(text, at)
}

/// Parses the `[[producer]]` tables of `text` (nothing validated beyond types).
///
/// # Errors
/// [`CatalogueError::Toml`] with the line of the parser's span.
pub(super) fn parse(text: &str, origin: &Path) -> Result<Vec<Loaded>, CatalogueError> {
    let raw: RawFile = toml::from_str(text).map_err(|e| CatalogueError::Toml {
        origin: origin.to_path_buf(),
        line: error_line(text, &e),
        message: e.message().trim().to_owned(),
    })?;
    Ok(raw
        .producer
        .into_iter()
        .map(|r| loaded(text, origin, r))
        .collect())
}

fn loaded(text: &str, origin: &Path, r: RawRule) -> Loaded {
    let item_span = r.item.span();
    let globs = r.item.into_inner().0;
    let glob_lines = globs
        .iter()
        .map(|g| line_within(text, item_span.clone(), g))
        .collect();
    let spanned_line = |s: &Spanned<String>| line_at(text, s.span().start);
    let id_line = spanned_line(&r.id);
    let name_regex_line = r.name_regex.as_ref().map_or(id_line, spanned_line);
    let path_regex_line = r.path_regex.as_ref().map_or(id_line, spanned_line);
    let example_lines = r.examples.iter().map(spanned_line).collect();
    let counter_example_lines = r.counter_examples.iter().map(spanned_line).collect();
    let strings = |v: Vec<Spanned<String>>| v.into_iter().map(Spanned::into_inner).collect();
    let (structure, structure_lines) = match r.structure {
        None => (Vec::new(), Vec::new()),
        Some(s) => {
            let span = s.span();
            let globs = s.into_inner().0;
            let lines = globs
                .iter()
                .map(|g| line_within(text, span.clone(), g))
                .collect();
            (globs, lines)
        }
    };
    Loaded {
        rule: Rule {
            id: r.id.into_inner(),
            name: r.name,
            root: r.root,
            item: globs,
            name_regex: r.name_regex.map(Spanned::into_inner),
            path_regex: r.path_regex.map(Spanned::into_inner),
            kind: r.kind,
            reclaim: r.reclaim,
            min_age_secs: r.min_age_secs,
            owner: r.owner,
            evidence: r.evidence,
            notes: r.notes,
            examples: strings(r.examples),
            counter_examples: strings(r.counter_examples),
            structure,
            versioned: r.versioned,
            contains: r.contains,
            lacks: r.lacks,
            managed_by: r.managed_by,
        },
        origin: origin.to_path_buf(),
        id_line,
        glob_lines,
        name_regex_line,
        path_regex_line,
        example_lines,
        counter_example_lines,
        structure_lines,
    }
}

/// Validates and compiles loaded rules (ids unique per origin, globs and regexes compile, examples
/// match their own rule only and lie in no other rule's item, counter-examples do not match).
///
/// # Errors
/// The first [`CatalogueError`] found, in file order.
pub(super) fn build(mut all: Vec<Loaded>) -> Result<Catalogue, CatalogueError> {
    check_ids(&all)?;
    let mut regexes = Vec::with_capacity(all.len());
    for l in &all {
        check_globs(l)?;
        check_contains(l)?;
    }
    all.sort_by(|a, b| a.rule.id.cmp(&b.rule.id));
    let mut versions = Vec::with_capacity(all.len());
    for l in &all {
        let name = compile_regex(l, l.rule.name_regex.as_deref(), l.name_regex_line)?;
        versions.push(version_regex(l, name.as_ref())?);
        regexes.push(RuleRegex {
            name,
            path: compile_regex(l, l.rule.path_regex.as_deref(), l.path_regex_line)?,
        });
    }
    let rules: Vec<Rule> = all.iter().map(|l| l.rule.clone()).collect();
    let compiled = Compiled::new(&rules, regexes).map_err(|(ri, gi, e)| {
        let l = &all[ri];
        CatalogueError::BadGlob {
            origin: l.origin.clone(),
            line: l.glob_lines.get(gi).copied().unwrap_or(l.id_line),
            id: l.rule.id.clone(),
            glob: l.rule.item.get(gi).cloned().unwrap_or_default(),
            problem: format!("does not compile: {e}"),
        }
    })?;
    check_examples(&all, &compiled)?;
    Ok(Catalogue {
        rules,
        compiled,
        versions,
    })
}

/// The name regex of a `versioned` rule, which must capture `version`; `None` for other rules.
fn version_regex(l: &Loaded, name: Option<&Regex>) -> Result<Option<Regex>, CatalogueError> {
    if !l.rule.versioned {
        return Ok(None);
    }
    match name {
        Some(rx) if rx.capture_names().flatten().any(|n| n == "version") => Ok(Some(rx.clone())),
        _ => Err(CatalogueError::Invalid {
            origin: l.origin.clone(),
            line: l.name_regex_line,
            message: format!(
                "producer {:?} is versioned but has no name_regex capturing `version`: add \
                 (?P<version>...) to its name_regex",
                l.rule.id
            ),
        }),
    }
}

fn check_ids(all: &[Loaded]) -> Result<(), CatalogueError> {
    let mut seen: HashMap<(&Path, &str), usize> = HashMap::new();
    for l in all {
        if l.rule.id.is_empty() {
            return Err(CatalogueError::Invalid {
                origin: l.origin.clone(),
                line: l.id_line,
                message: "producer id is empty: give a slug such as \"my-app-temp\"".into(),
            });
        }
        if !is_slug(&l.rule.id) {
            return Err(CatalogueError::Invalid {
                origin: l.origin.clone(),
                line: l.id_line,
                message: format!(
                    "producer id {:?} is not a slug: use lowercase letters a-z, digits and single \
                     dashes between words, e.g. \"my-app-temp\"",
                    l.rule.id
                ),
            });
        }
        if let Some(&first_line) = seen.get(&(l.origin.as_path(), l.rule.id.as_str())) {
            return Err(CatalogueError::DuplicateId {
                origin: l.origin.clone(),
                line: l.id_line,
                id: l.rule.id.clone(),
                first_line,
            });
        }
        seen.insert((l.origin.as_path(), l.rule.id.as_str()), l.id_line);
    }
    Ok(())
}

/// A producer id: lowercase ASCII words of letters and digits joined by single dashes
/// (`my-app-temp`), the form messages, metric labels and `--producer` expect.
pub(crate) fn is_slug(id: &str) -> bool {
    !id.is_empty()
        && id.split('-').all(|w| {
            !w.is_empty()
                && w.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
}

/// Every `contains` and `lacks` entry is a relative path of plain names (not empty, no leading
/// `/`, no empty, `.` or `..` component), maybe with one trailing `/` (the entry is a dir);
/// `lacks` only beside `contains`.
fn check_contains(l: &Loaded) -> Result<(), CatalogueError> {
    let plain = |n: &String| {
        let n = n.strip_suffix('/').unwrap_or(n);
        !n.is_empty() && n.split('/').all(|c| !c.is_empty() && c != "." && c != "..")
    };
    let invalid = |message: String| CatalogueError::Invalid {
        origin: l.origin.clone(),
        line: l.id_line,
        message,
    };
    let entries = l.rule.contains.iter().map(|n| ("contains", n));
    let absent = l.rule.lacks.iter().map(|n| ("lacks", n));
    if let Some((field, bad)) = entries.chain(absent).find(|(_, n)| !plain(n)) {
        return Err(invalid(format!(
            "producer {:?}: {field} entry {bad:?} is not a relative path of plain names; write \
             entries inside the item such as \"header.pb\", \"model/done\" or a dir \"objects/\"",
            l.rule.id
        )));
    }
    if !l.rule.lacks.is_empty() && l.rule.contains.is_empty() {
        return Err(invalid(format!(
            "producer {:?}: lacks needs contains: a signature must name at least one entry the \
             item holds, e.g. contains = [\"index\"]",
            l.rule.id
        )));
    }
    Ok(())
}

fn check_globs(l: &Loaded) -> Result<(), CatalogueError> {
    if l.rule.item.is_empty() {
        return Err(CatalogueError::Invalid {
            origin: l.origin.clone(),
            line: l.id_line,
            message: format!("producer {:?} has no item glob", l.rule.id),
        });
    }
    let items = l.rule.item.iter().zip(&l.glob_lines);
    let structure = l.rule.structure.iter().zip(&l.structure_lines);
    for (glob, &line) in items.chain(structure) {
        if let Some(problem) = glob_problem(glob) {
            return Err(CatalogueError::BadGlob {
                origin: l.origin.clone(),
                line,
                id: l.rule.id.clone(),
                glob: glob.clone(),
                problem,
            });
        }
    }
    Ok(())
}

/// What is wrong with an item or structure glob, if anything.
fn glob_problem(glob: &str) -> Option<String> {
    if glob.is_empty() {
        Some("is empty".to_owned())
    } else if glob.contains("**") {
        Some("uses `**`: item globs are fixed depth, write one `*` per level".to_owned())
    } else if glob.starts_with('/') || glob.ends_with('/') {
        Some("must be relative to the root, without a leading or trailing `/`".to_owned())
    } else if glob
        .split('/')
        .any(|c| c.is_empty() || c == "." || c == "..")
    {
        Some("has an empty, `.` or `..` component".to_owned())
    } else if matcher::glob_depth(glob).is_none() {
        Some("has a `/` inside `{...}` or `[...]`: the depth must be fixed".to_owned())
    } else {
        matcher::compile_glob(glob)
            .err()
            .map(|e| format!("does not compile: {e}"))
    }
}

fn compile_regex(
    l: &Loaded,
    rx: Option<&str>,
    line: usize,
) -> Result<Option<Regex>, CatalogueError> {
    let Some(rx) = rx else { return Ok(None) };
    Regex::new(rx)
        .map(Some)
        .map_err(|e| CatalogueError::BadRegex {
            origin: l.origin.clone(),
            line,
            id: l.rule.id.clone(),
            regex: rx.to_owned(),
            message: e.to_string(),
        })
}

/// Every example is claimed by its own rule and no other, and lies inside no other rule's item;
/// no counter-example is claimed by its rule.
fn check_examples(all: &[Loaded], compiled: &Compiled) -> Result<(), CatalogueError> {
    for (ri, l) in all.iter().enumerate() {
        let kind = l.rule.root;
        for (ex, &line) in l.rule.examples.iter().zip(&l.example_lines) {
            let path = Path::new(ex);
            let err = |message: String| CatalogueError::Example {
                origin: l.origin.clone(),
                line,
                id: l.rule.id.clone(),
                message,
            };
            if matcher::depth_of(path).is_none() {
                return Err(err(format!("example {ex:?} is not a plain relative path")));
            }
            let claimants = compiled.claimants(kind, path);
            if !claimants.contains(&ri) {
                return Err(err(format!(
                    "example {ex:?} is not matched by its own item globs and regexes"
                )));
            }
            // A rule with a content signature and one without may share names: the signature
            // decides (a generic `tmp*` name is the signature rule's only with its entries inside).
            let signed = |o: usize| !all[o].rule.contains.is_empty();
            if let Some(&other) = claimants
                .iter()
                .find(|&&o| o != ri && signed(o) == signed(ri))
            {
                return Err(overlap(l, line, path, &all[other]));
            }
            // Nor inside another rule's item, unless that rule is signed: a dir it accepts by
            // name is its item only with its entries inside (`mktemp -d`'s `tmp.*` dirs are
            // Codex's git stores only with an index and objects), else this rule's items show.
            for prefix in path.ancestors().skip(1) {
                if prefix.as_os_str().is_empty() {
                    break;
                }
                let claimants = compiled.claimants(kind, prefix);
                if let Some(&outer) = claimants.iter().find(|&&o| !signed(o)) {
                    return Err(overlap(l, line, path, &all[outer]));
                }
            }
        }
        for (ex, &line) in l.rule.counter_examples.iter().zip(&l.counter_example_lines) {
            if compiled.claimants(kind, Path::new(ex)).contains(&ri) {
                return Err(CatalogueError::Example {
                    origin: l.origin.clone(),
                    line,
                    id: l.rule.id.clone(),
                    message: format!("counter-example {ex:?} is matched by the rule"),
                });
            }
        }
    }
    Ok(())
}

/// The overlap of `l` (at its example on `line`) with `other`, reported in the user's file when
/// one of the two rules is built in and the other is not (the user's rule is the one to fix: its
/// first item glob's line).
fn overlap(l: &Loaded, line: usize, path: &Path, other: &Loaded) -> CatalogueError {
    let builtin = Path::new(BUILTIN_ORIGIN);
    let (origin, line) = if l.origin == builtin && other.origin != builtin {
        (
            other.origin.clone(),
            other.glob_lines.first().copied().unwrap_or(other.id_line),
        )
    } else {
        (l.origin.clone(), line)
    };
    let (first, second) = if other.rule.id < l.rule.id {
        (other.rule.id.clone(), l.rule.id.clone())
    } else {
        (l.rule.id.clone(), other.rule.id.clone())
    };
    CatalogueError::Overlap {
        origin,
        line,
        path: path.to_path_buf(),
        first,
        second,
    }
}
