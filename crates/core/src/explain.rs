//! `cachewatch explain PATH`: which rule claims a path, or why none does.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::catalogue::{Catalogue, ProducerKind, ReclaimMode};
use crate::inventory::Captures;
use crate::owner::OwnerCheck;
use crate::roots::{Root, RootKind};

/// What the catalogue says about one absolute path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Explanation {
    /// The path asked about, as given.
    #[serde(serialize_with = "crate::reclaim::path_text::serialize")]
    pub path: PathBuf,
    /// The root it lies in (the innermost one when roots nest); `None` when outside all roots.
    pub root: Option<Root>,
    /// The path relative to that root.
    #[serde(serialize_with = "crate::reclaim::path_text::serialize_opt")]
    pub relative: Option<PathBuf>,
    /// The answer.
    pub verdict: Verdict,
}

/// The answer of [`Catalogue::explain`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum Verdict {
    /// The path lies in none of the roots given.
    OutsideRoots,
    /// The path is a root itself (never an item).
    RootItself,
    /// A rule claims the path or one of its ancestors inside the root.
    Claimed {
        /// Rule id.
        producer: String,
        /// Rule's human name.
        name: String,
        /// Rule's producer kind.
        kind: ProducerKind,
        /// Rule's reclaim mode.
        reclaim: ReclaimMode,
        /// Rule's age floor, seconds.
        min_age_secs: u64,
        /// The item's absolute path (under the root's canonical path).
        #[serde(serialize_with = "crate::reclaim::path_text::serialize")]
        item: PathBuf,
        /// The item's path relative to the root.
        #[serde(serialize_with = "crate::reclaim::path_text::serialize")]
        item_relative: PathBuf,
        /// True when the path is the item itself, false when it lies inside the item.
        is_item: bool,
        /// What the rule captured from the item's name.
        captures: Captures,
        /// Which owner check applies to the item: its name's pid alone, the rule's processes, or
        /// none (see [`crate::owner`]).
        owner_check: OwnerCheck,
        /// The tool's own clean-up command, to run before deleting by hand (`brew cleanup`).
        #[serde(skip_serializing_if = "Option::is_none")]
        managed_by: Option<String>,
        /// A version-keyed cache: reclaim keeps the newest version of each series.
        versioned: bool,
    },
    /// The path is a dir a rule's items live in (its `structure` globs, e.g.
    /// `com.apple.gpuarchiver`), or lies in such a top-level dir outside any item: attributed to the
    /// rule, never reclaimed.
    Structure {
        /// Rule id.
        producer: String,
        /// Rule's human name.
        name: String,
        /// The structure dir's absolute path (under the root's canonical path): the path itself, or
        /// the top-level structure dir it lies in.
        #[serde(serialize_with = "crate::reclaim::path_text::serialize")]
        dir: PathBuf,
        /// True when the path is the structure dir itself.
        is_dir: bool,
    },
    /// No rule claims the path or any ancestor: it counts under its root's top-level entry.
    Unattributed {
        /// The unattributed top-level entry's absolute path (under the root's canonical path).
        #[serde(serialize_with = "crate::reclaim::path_text::serialize")]
        top_level: PathBuf,
        /// Rules whose glob matched a prefix of the path but whose regex did not.
        near_misses: Vec<NearMiss>,
    },
}

/// A rule that almost claimed a path: its glob matched, a regex did not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NearMiss {
    /// Rule id.
    pub producer: String,
    /// The prefix (relative to the root) the glob matched.
    #[serde(serialize_with = "crate::reclaim::path_text::serialize")]
    pub relative: PathBuf,
    /// Why the rule did not claim it.
    pub reason: String,
}

impl Catalogue {
    /// Says which rule claims absolute `path` and its item, or that none does and why (outside all
    /// `roots`, the root itself, or unattributed with the rules that nearly matched). The path is
    /// not touched on disk.
    pub fn explain(&self, roots: &[Root], path: &Path) -> Explanation {
        let found = roots
            .iter()
            .filter_map(|r| r.relative(path).map(|rel| (r, rel)))
            .min_by_key(|(_, rel)| rel.components().count());
        let Some((root, rel)) = found else {
            return Explanation {
                path: path.to_path_buf(),
                root: None,
                relative: None,
                verdict: Verdict::OutsideRoots,
            };
        };
        let verdict = match rel.components().next() {
            None => Verdict::RootItself,
            Some(first) => match self.item_of_in(root, rel) {
                Some(m) => {
                    // As the scan sets it: a container's bundle id wins over the rule's capture.
                    let captures = Captures {
                        bundle: root.container_bundle().or(m.captures.bundle),
                        ..m.captures
                    };
                    let owner_check = match OwnerCheck::of(m.rule, &captures) {
                        OwnerCheck::None if root.kind == RootKind::CodeSignClones => captures
                            .bundle
                            .clone()
                            .map_or(OwnerCheck::None, |app| OwnerCheck::NewestClone { app }),
                        check => check,
                    };
                    Verdict::Claimed {
                        producer: m.rule.id.clone(),
                        name: m.rule.name.clone(),
                        kind: m.rule.kind,
                        reclaim: m.rule.reclaim,
                        min_age_secs: m.rule.min_age_secs,
                        item: root.canonical.join(&m.item),
                        is_item: m.item == rel,
                        item_relative: m.item,
                        owner_check,
                        captures,
                        managed_by: m.rule.managed_by.clone(),
                        versioned: m.rule.versioned,
                    }
                }
                None => self.unclaimed(root, rel, Path::new(first.as_os_str())),
            },
        };
        Explanation {
            path: path.to_path_buf(),
            root: Some(root.clone()),
            relative: Some(rel.to_path_buf()),
            verdict,
        }
    }

    /// The verdict for `rel`, which no rule claims: a structure dir (itself, or the top-level one
    /// it lies in), else unattributed under its top-level entry `first`.
    fn unclaimed(&self, root: &Root, rel: &Path, first: &Path) -> Verdict {
        let own = self.structure_of(root.kind, rel).map(|r| (r, rel));
        match own.or_else(|| self.structure_of(root.kind, first).map(|r| (r, first))) {
            Some((rule, dir)) => Verdict::Structure {
                producer: rule.id.clone(),
                name: rule.name.clone(),
                dir: root.canonical.join(dir),
                is_dir: dir == rel,
            },
            None => Verdict::Unattributed {
                top_level: root.canonical.join(first),
                near_misses: self.near_misses(root, rel),
            },
        }
    }

    fn near_misses(&self, root: &Root, rel: &Path) -> Vec<NearMiss> {
        let mut prefixes: Vec<&Path> = rel
            .ancestors()
            .filter(|p| !p.as_os_str().is_empty())
            .collect();
        prefixes.reverse();
        let mut out = Vec::new();
        for prefix in prefixes.into_iter().take(self.max_depth(root.kind)) {
            for rule in self.glob_claimants(root.kind, prefix) {
                let regexes: Vec<&str> = [rule.name_regex.as_deref(), rule.path_regex.as_deref()]
                    .into_iter()
                    .flatten()
                    .collect();
                out.push(NearMiss {
                    producer: rule.id.clone(),
                    relative: prefix.to_path_buf(),
                    reason: format!(
                        "an item glob matches but the regex {} does not",
                        regexes.join(" / ")
                    ),
                });
            }
        }
        out
    }
}
