//! The producer catalogue: rules that name who leaves what where.
//!
//! SKELETON — owned by the catalogue helper; the signatures below are the agreed interface.
//! Data file: `catalogue/producers.toml`, compiled into the binary with `include_str!`, extendable by
//! `[[producer]]` tables in the user's config. Schema: see `../shared/DESIGN.md` ("Catalogue schema").

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::inventory::Captures;
use crate::roots::RootKind;

/// What kind of thing a producer leaves behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProducerKind {
    /// Leftovers nobody cleans up.
    Leak,
    /// A cache that manages itself (a control: attributed, not a leak).
    Cache,
    /// Reports (crash reports, diagnostics).
    Report,
    /// System-owned: reported, never deleted.
    System,
}

/// Whether reclaim may delete a producer's items.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReclaimMode {
    /// Included in a default reclaim.
    Auto,
    /// Only when the producer is named explicitly.
    Manual,
    /// Never deleted.
    Never,
}

/// Owner rules: what keeps a producer's items alive.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Owner {
    /// The name carries the owner pid (`pid` capture): alive and started before the item's birth
    /// keeps it.
    pub pid_in_name: bool,
    /// Process names that, while any is running, keep every item of the rule.
    pub processes: Vec<String>,
}

/// One `[[producer]]` rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Unique slug, e.g. `metal-gpuarchiver`.
    pub id: String,
    /// Human name.
    pub name: String,
    /// The root kind the globs are relative to.
    pub root: RootKind,
    /// Item globs relative to the root, fixed depth (no `**`), e.g. `com.apple.gpuarchiver/gpuarchiver-*`.
    pub item: Vec<String>,
    /// Optional regex on the item's file name with named captures `pid`, `ts`, `bundle`.
    #[serde(default)]
    pub name_regex: Option<String>,
    /// What kind of producer it is.
    pub kind: ProducerKind,
    /// Whether reclaim may delete its items.
    pub reclaim: ReclaimMode,
    /// Age floor under the user's threshold, seconds.
    #[serde(default)]
    pub min_age_secs: u64,
    /// What keeps items alive.
    #[serde(default)]
    pub owner: Owner,
    /// Upstream report URLs.
    #[serde(default)]
    pub evidence: Vec<String>,
    /// Free text.
    #[serde(default)]
    pub notes: String,
    /// Paths relative to the root that must match (tests).
    #[serde(default)]
    pub examples: Vec<String>,
    /// Paths relative to the root that must not match (tests).
    #[serde(default)]
    pub counter_examples: Vec<String>,
}

/// A rule claiming a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Match<'a> {
    /// The rule.
    pub rule: &'a Rule,
    /// The item's path relative to the root (a prefix of the path asked about, or the path itself).
    pub item: PathBuf,
    /// What the rule's regex captured from the item's name.
    pub captures: Captures,
}

/// Errors loading a catalogue.
#[derive(Debug, thiserror::Error)]
pub enum CatalogueError {
    /// Placeholder until the catalogue helper lands its errors.
    #[error("{origin}:{line}: {message}")]
    Invalid {
        /// File the rule came from (`<builtin>` for the compiled-in one).
        origin: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// The compiled set of rules.
#[derive(Debug, Clone)]
pub struct Catalogue {
    rules: Vec<Rule>,
}

impl Catalogue {
    /// The catalogue compiled into the binary.
    pub fn builtin() -> Catalogue {
        todo!("catalogue helper")
    }

    /// The built-in rules plus `[[producer]]` tables parsed from `extra` (read from `origin`).
    ///
    /// # Errors
    /// [`CatalogueError`] naming `origin`, the line and what is wrong.
    pub fn with_extra(extra: &str, origin: &Path) -> Result<Catalogue, CatalogueError> {
        let _ = (extra, origin);
        todo!("catalogue helper")
    }

    /// All rules, sorted by id.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The rule with this id.
    pub fn rule(&self, id: &str) -> Option<&Rule> {
        self.rules.iter().find(|r| r.id == id)
    }

    /// The rule whose item glob matches `rel` itself (a path relative to a root of `kind`), if any.
    pub fn classify(&self, kind: RootKind, rel: &Path) -> Option<Match<'_>> {
        let _ = (kind, rel);
        todo!("catalogue helper")
    }

    /// The item that `rel` (any path inside a root of `kind`) belongs to: the shortest prefix of `rel`
    /// that a rule claims. `None` when no prefix is claimed (then the item is the unattributed
    /// top-level entry, `rel`'s first component).
    pub fn item_of(&self, kind: RootKind, rel: &Path) -> Option<Match<'_>> {
        let _ = (kind, rel);
        todo!("catalogue helper")
    }

    /// The deepest item glob for roots of `kind` (number of path components); 0 when no rule applies.
    pub fn max_depth(&self, kind: RootKind) -> usize {
        let _ = kind;
        todo!("catalogue helper")
    }
}
