//! Acting on a group of unattributed entries (an unknown producer): the rule it would make and
//! what that rule would claim ([`preview`]), writing that rule into the config ([`add_rule`]),
//! and hiding a group's shape ([`set_shape_ignored`], config `[groups] ignore`).
//!
//! The CLI (`rules suggest|add|ignore|unignore`, on a group it scanned) and the app (on a group
//! of the monitor's figures, [`preview_group_rule`], [`add_group_rule`], [`ignore_shape`]) call
//! the same functions: the rule is [`shapes::rule_for`]'s, the check [`shapes::check_rule`]'s,
//! against the catalogue the config file would give with the rule added.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use toml_edit::{Array, DocumentMut, Item, Table, Value};

use crate::catalogue::{Catalogue, ReclaimMode, Rule};
use crate::config;
use crate::monitor::{GroupFigures, MonitorHandle};
use crate::roots::RootKind;
use crate::shapes::{self, RuleCheck, RuleOptions, ShapeGroup};

use super::ApiError;

/// A group as a rule is made from it.
#[derive(Debug, Clone, Copy)]
pub struct GroupSource<'a> {
    /// The kind of its root.
    pub root_kind: RootKind,
    /// Its root's canonical path.
    pub root: &'a Path,
    /// The group.
    pub group: &'a ShapeGroup,
    /// The process seen writing into it, if any.
    pub writer: Option<&'a str>,
    /// The evidence naming its writer, strongest first: the rule's owner comes from it
    /// ([`shapes::owner_from`]).
    pub evidence: &'a [crate::monitor::provenance::Evidence],
    /// The other roots of its kind: a rule names a kind of root, so it claims in them too, and
    /// the check looks there as well.
    pub others: &'a [PathBuf],
}

impl<'a> GroupSource<'a> {
    /// The group of the monitor's figures `g`, with the first process seen writing into it.
    pub fn of(g: &'a GroupFigures) -> GroupSource<'a> {
        GroupSource {
            root_kind: g.root_kind,
            root: &g.root,
            group: &g.group,
            writer: g
                .writers
                .first()
                .map(|w| w.name.as_str())
                .filter(|n| !n.is_empty()),
            evidence: &g.evidence,
            others: &g.others,
        }
    }

    /// The options of a rule `id` made from this group.
    pub fn options(&self, id: String, name: Option<String>, reclaim: ReclaimMode) -> RuleOptions {
        RuleOptions {
            id,
            name,
            reclaim,
            writer: self.writer.map(str::to_owned),
            evidence: self.evidence.to_vec(),
        }
    }

    /// The group's rule `id` ([`shapes::rule_for`]).
    ///
    /// # Errors
    /// [`ApiError::GroupRule`] when the group cannot make a rule (names that are not text).
    pub fn rule(&self, opts: &RuleOptions) -> Result<Rule, ApiError> {
        Ok(shapes::rule_for(self.root_kind, self.group, opts)?)
    }
}

/// The id a rule made from `group` gets: [`shapes::suggested_id`], with `-2`, `-3`, ... when the
/// catalogue or `taken` has it already.
pub fn free_id(catalogue: &Catalogue, group: &ShapeGroup, taken: &[String]) -> String {
    let base = shapes::suggested_id(group);
    let mut id = base.clone();
    let mut n = 2;
    while catalogue.rule(&id).is_some() || taken.contains(&id) {
        id = format!("{base}-{n}");
        n += 1;
    }
    id
}

pub use cachewatch_core::shapes::escape_controls;

/// A member name as a group's examples show it: escaped as a label escapes literals
/// ([`shapes::push_escaped`]: a backslash `\\`, a byte that is not UTF-8 `\xNN`), so it reads as
/// the group's `shape` and `label` do and names the member's bytes.
pub fn example_shown(name: &std::ffi::OsStr) -> String {
    shapes::name_escaped(name)
}

/// The group's label ([`ShapeGroup::label`]) on one line ([`escape_controls`]). A label writes a
/// backslash `\\`, so an escape added here reads as no other group's label: what the CLI prints
/// to name a group, and takes back ([`pick_group`]).
pub fn one_line_label(group: &ShapeGroup) -> String {
    escape_controls(&group.label())
}

/// A shape argument that names more than one group.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AmbiguousShape {
    /// One group in each of several roots.
    #[error("{shape:?} is a group in {count} roots; pass the one with --root KIND=PATH")]
    InRoots {
        /// The argument.
        shape: String,
        /// In how many roots.
        count: usize,
    },
    /// Several groups of one root print as the same shape (names of different bytes, e.g. a
    /// backslash and a byte that is not UTF-8 shown as `\xNN`).
    #[error(
        "{shape:?} names {} different groups in the root {root:?} (their names print the same but \
         differ in bytes); pass one of them by its label: {}",
        labels.len(),
        labels.iter().map(|l| shell_quote(l)).collect::<Vec<_>>().join(", ")
    )]
    InOneRoot {
        /// The argument.
        shape: String,
        /// The root.
        root: PathBuf,
        /// The groups' labels, on one line ([`one_line_label`]).
        labels: Vec<String>,
    },
}

/// `text` quoted for a POSIX shell: in single quotes, a single quote written `'\''`.
pub fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The one of `items` (each holding the group `group(item)`) that the argument `shape` names:
/// the group whose label it is ([`ShapeGroup::label`] or [`one_line_label`]), else the group whose
/// shape, as shown ([`ShapeGroup::shown`], [`ShapeGroup::key_shown`], its key alone), it is. `None` when it
/// names none.
///
/// # Errors
/// [`AmbiguousShape`] when it names several: in several roots, or several groups of one root.
pub fn pick_group<'a, T>(
    items: &'a [T],
    group: impl Fn(&T) -> &crate::scan::UnattributedGroup,
    shape: &str,
) -> Result<Option<&'a T>, AmbiguousShape> {
    let by_label: Vec<&T> = items
        .iter()
        .filter(|t| {
            let g = &group(t).group;
            g.label() == shape || one_line_label(g) == shape
        })
        .collect();
    let matching = if by_label.is_empty() {
        items
            .iter()
            .filter(|t| {
                let g = &group(t).group;
                g.shown() == shape || g.key_shown() == shape || g.key.to_string() == shape
            })
            .collect()
    } else {
        by_label
    };
    match matching.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(*one)),
        many => {
            for (i, t) in many.iter().enumerate() {
                let root = &group(t).root;
                if many[..i].iter().any(|o| group(o).root == *root) {
                    continue;
                }
                let labels: Vec<String> = many
                    .iter()
                    .filter(|o| group(o).root == *root)
                    .map(|o| one_line_label(&group(o).group))
                    .collect();
                if labels.len() > 1 {
                    return Err(AmbiguousShape::InOneRoot {
                        shape: shape.to_owned(),
                        root: root.clone(),
                        labels,
                    });
                }
            }
            Err(AmbiguousShape::InRoots {
                shape: shape.to_owned(),
                count: many.len(),
            })
        }
    }
}

/// What the rule a group would make would claim: the window's "Make a rule…" dialog and
/// `rules suggest --json`.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupRulePreview {
    /// The group's root (canonical, as the snapshot shows it).
    pub root: String,
    /// The root's kind.
    pub root_kind: RootKind,
    /// The group's shape label ([`Shape::label`]).
    pub label: String,
    /// The group's shape as shown.
    pub shape: String,
    /// Members of the group.
    pub members: u64,
    /// Allocated bytes of the members.
    pub allocated_bytes: u64,
    /// Apparent bytes of the members.
    pub apparent_bytes: u64,
    /// The rule, `None` when the group cannot make one (`refused` says why).
    pub rule: Option<GroupRuleDto>,
    /// Why no rule can be made for the group, when so.
    pub refused: Option<String>,
    /// Members the rule claims, counted in the root now by the engine's check.
    pub claimed: u64,
    /// Top-level entries of the root the rule would claim that are not members (at most 20;
    /// names shown with `\xNN` for a byte that is not UTF-8).
    pub wrongly_claimed: Vec<String>,
    /// Members the rule would not claim (at most 20).
    pub missed: Vec<String>,
}

/// The rule of a [`GroupRulePreview`], as it would be written.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupRuleDto {
    /// Its id.
    pub id: String,
    /// Its human name.
    pub name: String,
    /// Its item glob.
    pub glob: String,
    /// Its anchored name regex: what [`add_group_rule`] is given back, so it writes the rule
    /// previewed or nothing.
    pub regex: String,
    /// The `[[producer]]` table as it would be appended to the config.
    pub toml: String,
}

impl GroupRulePreview {
    /// True when the rule can be written: made, claiming every member and nothing else.
    pub fn is_exact(&self) -> bool {
        self.rule.is_some() && self.wrongly_claimed.is_empty() && self.missed.is_empty()
    }
}

/// `names` shown, a byte that is not UTF-8 as `\xNN`.
fn shown(names: &[OsString]) -> Vec<String> {
    use std::os::unix::ffi::OsStrExt;
    names
        .iter()
        .map(|n| {
            let mut s = String::new();
            for chunk in n.as_bytes().utf8_chunks() {
                s.push_str(chunk.valid());
                for x in chunk.invalid() {
                    s.push_str(&format!("\\x{x:02x}"));
                }
            }
            s
        })
        .collect()
}

/// The rule `opts` makes of `src` and what it would claim in its root, checked with the
/// catalogue the config text `config_text` (of the file `config_path`) gives with the rule
/// appended. Blocking: lists the root.
///
/// # Errors
/// The root cannot be listed. A group that cannot make a rule (names that are not text, a rule
/// the config would not load with) is no error: `refused` says why.
pub fn preview(
    config_path: &Path,
    config_text: &str,
    src: &GroupSource<'_>,
    opts: &RuleOptions,
) -> Result<GroupRulePreview, ApiError> {
    let mut out = GroupRulePreview {
        root: src.root.to_string_lossy().into_owned(),
        root_kind: src.root_kind,
        label: src.group.label(),
        shape: src.group.shown(),
        members: src.group.items,
        allocated_bytes: src.group.measure.allocated_bytes,
        apparent_bytes: src.group.measure.apparent_bytes,
        rule: None,
        refused: None,
        claimed: 0,
        wrongly_claimed: Vec::new(),
        missed: Vec::new(),
    };
    let rule = match src.rule(opts) {
        Ok(rule) => rule,
        Err(e) => {
            out.refused = Some(e.to_string());
            return Ok(out);
        }
    };
    // A rule the config would not load with (its id taken, its examples claimed by another
    // rule) cannot be made either: said, like a refusal, so the other groups are still offered.
    let catalogue = match super::rules::with_rule_text(config_path, config_text, &rule) {
        Ok((_, catalogue)) => catalogue,
        Err(e) => {
            out.refused = Some(format!("the rule {:?} would not load: {e}", rule.id));
            return Ok(out);
        }
    };
    let before = super::rules::catalogue_of(config_path, config_text)?;
    let check = check(&before, &catalogue, src, &rule.id)?;
    out.claimed = check.claimed;
    out.wrongly_claimed = shown(&check.wrongly_claimed);
    out.missed = shown(&check.missed);
    let toml = super::rules::append_rule("", &rule).map_err(|message| ApiError::ConfigEdit {
        path: config_path.to_path_buf(),
        message,
    })?;
    out.rule = Some(GroupRuleDto {
        id: rule.id.clone(),
        name: rule.name.clone(),
        glob: rule.item.join(", "),
        regex: rule.name_regex.clone().unwrap_or_default(),
        toml,
    });
    Ok(out)
}

fn check(
    before: &Catalogue,
    catalogue: &Catalogue,
    src: &GroupSource<'_>,
    id: &str,
) -> Result<RuleCheck, ApiError> {
    shapes::check_rule(before, catalogue, id, src.root_kind, src.root, src.group).map_err(
        |source| ApiError::ListRoot {
            root: src.root.to_path_buf(),
            source,
        },
    )
}

/// Appends `rule` (made from `src`) to the config file `path` when it claims every member of the
/// group and nothing else in its root, checked under the config's lock on the file as it is then
/// ([`super::rules::add`]: comments and other rules kept). Returns the check and the catalogue
/// the file now gives. Blocking.
///
/// # Errors
/// [`ApiError::BadRuleId`], [`ApiError::RuleIdTaken`] (a built-in rule's id),
/// [`ApiError::RuleWouldClaim`],
/// [`ApiError::RuleWouldMiss`] (nothing written), the errors of [`super::rules::add`].
pub fn add_rule(
    path: &Path,
    src: &GroupSource<'_>,
    rule: &Rule,
) -> Result<(RuleCheck, Catalogue), ApiError> {
    if !crate::catalogue::is_slug(&rule.id) {
        return Err(ApiError::BadRuleId {
            id: rule.id.clone(),
        });
    }
    // A user rule with a built-in's id would replace that rule; one with another user rule's id
    // is refused when the config loads (under the lock, below).
    if Catalogue::builtin().rule(&rule.id).is_some() {
        return Err(ApiError::RuleIdTaken {
            id: rule.id.clone(),
        });
    }
    let label = src.group.label();
    let check = super::rules::add(path, rule, |before, catalogue| {
        let check = check(before, catalogue, src, &rule.id)?;
        if !check.wrongly_claimed.is_empty() {
            return Err(ApiError::RuleWouldClaim {
                label: label.clone(),
                root: src.root.to_path_buf(),
                names: shown(&check.wrongly_claimed),
            });
        }
        if !check.missed.is_empty() {
            return Err(ApiError::RuleWouldMiss {
                label: label.clone(),
                names: shown(&check.missed),
            });
        }
        Ok(check)
    })?;
    let catalogue = config::load(path)?.catalogue()?;
    Ok((check, catalogue))
}

/// What [`add_group_rule`] wrote.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupRuleAdded {
    /// The new producer's id.
    pub id: String,
    /// Members it claims.
    pub claimed: u64,
    /// The config file written.
    pub config: String,
}

fn config_file(path: Option<&Path>) -> Result<PathBuf, ApiError> {
    path.map(Path::to_path_buf).ok_or(ApiError::NoConfigFile)
}

pub(super) async fn group_of(
    monitor: &MonitorHandle,
    root: &str,
    label: &str,
) -> Result<GroupFigures, ApiError> {
    monitor
        .group(root.to_owned(), label.to_owned())
        .await?
        .ok_or_else(|| ApiError::NoGroup {
            root: root.to_owned(),
            label: label.to_owned(),
        })
}

pub(super) async fn blocking<T: Send + 'static>(
    job: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(job)
        .await
        .map_err(|e| ApiError::Job(e.to_string()))?
}

/// The rule the monitor's group `label` of root `root` would make (a free id from its shape) and
/// what it would claim now, checked against the config file `config_path` as it is.
///
/// # Errors
/// [`ApiError::NoConfigFile`], [`ApiError::NoGroup`], the errors of [`preview`].
pub async fn preview_group_rule(
    monitor: &MonitorHandle,
    config_path: Option<&Path>,
    root: &str,
    label: &str,
) -> Result<GroupRulePreview, ApiError> {
    let path = config_file(config_path)?;
    let g = group_of(monitor, root, label).await?;
    blocking(move || {
        let text = config::read_text(&path)?.unwrap_or_default();
        let catalogue = super::rules::catalogue_of(&path, &text)?;
        let src = GroupSource::of(&g);
        let id = free_id(&catalogue, &g.group, &[]);
        preview(
            &path,
            &text,
            &src,
            &src.options(id, None, ReclaimMode::Manual),
        )
    })
    .await
}

/// Writes the rule `rule_id` of the monitor's group `label` of root `root` into the config file
/// `config_path` (comments kept) when it is still the rule previewed (its name regex is
/// `regex`) and claims every member and nothing else; then the monitor takes the new catalogue
/// and rescans, so the group shows as the producer `rule_id`.
///
/// # Errors
/// [`ApiError::NoConfigFile`], [`ApiError::NoGroup`], [`ApiError::GroupChanged`] (the group's
/// shape moved since the preview), the errors of [`add_rule`]; nothing
/// is written then.
pub async fn add_group_rule(
    monitor: &MonitorHandle,
    config_path: Option<&Path>,
    root: &str,
    label: &str,
    rule_id: &str,
    regex: &str,
) -> Result<GroupRuleAdded, ApiError> {
    let path = config_file(config_path)?;
    let g = group_of(monitor, root, label).await?;
    let (id, regex, label) = (rule_id.to_owned(), regex.to_owned(), label.to_owned());
    let (added, catalogue) = blocking(move || {
        let src = GroupSource::of(&g);
        let rule = src.rule(&src.options(id.clone(), None, ReclaimMode::Manual))?;
        if rule.name_regex.as_deref() != Some(regex.as_str()) {
            return Err(ApiError::GroupChanged {
                label,
                regex: rule.name_regex.unwrap_or_default(),
            });
        }
        let (check, catalogue) = add_rule(&path, &src, &rule)?;
        Ok((
            GroupRuleAdded {
                id,
                claimed: check.claimed,
                config: path.to_string_lossy().into_owned(),
            },
            catalogue,
        ))
    })
    .await?;
    monitor.set_catalogue(Arc::new(catalogue)).await?;
    Ok(added)
}

/// Adds (`ignored`) or removes the shape label `label` in the config file `path`'s `[groups]
/// ignore` list (comments and other keys kept, under the config's lock) and returns the list.
/// Blocking.
///
/// # Errors
/// [`ApiError::EmptyLabel`]; [`ApiError::NotIgnored`] to remove a label the list does not hold;
/// the config cannot be read, edited or written.
pub fn set_shape_ignored(path: &Path, label: &str, ignored: bool) -> Result<Vec<String>, ApiError> {
    if label.is_empty() {
        return Err(ApiError::EmptyLabel);
    }
    let text = super::settings::edit_config(path, |text| {
        let new_text =
            edit_ignored(text, label, ignored).map_err(|message| ApiError::ConfigEdit {
                path: path.to_path_buf(),
                message,
            })?;
        let cfg = config::parse(&new_text, path)?;
        if !ignored && cfg.groups.ignore.len() == ignored_in(text, path)?.len() {
            return Err(ApiError::NotIgnored {
                label: label.to_owned(),
            });
        }
        Ok(new_text)
    })?;
    Ok(config::parse(&text, path)?.groups.ignore)
}

fn ignored_in(text: &str, path: &Path) -> Result<Vec<String>, ApiError> {
    Ok(config::parse(text, path)?.groups.ignore)
}

/// `text` with `label` added to (or removed from) `[groups] ignore`.
fn edit_ignored(text: &str, label: &str, ignored: bool) -> Result<String, String> {
    let mut doc: DocumentMut = text
        .parse()
        .map_err(|e: toml_edit::TomlError| e.to_string())?;
    let groups = doc.entry("groups").or_insert_with(|| {
        let mut t = Table::new();
        t.set_implicit(false);
        Item::Table(t)
    });
    let groups = groups
        .as_table_like_mut()
        .ok_or_else(|| "`groups` is not a table".to_owned())?;
    let list = groups
        .entry("ignore")
        .or_insert(Item::Value(Value::Array(Array::new())));
    let list = list
        .as_array_mut()
        .ok_or_else(|| "`groups.ignore` is not an array of strings".to_owned())?;
    let at = list.iter().position(|v| v.as_str() == Some(label));
    match (ignored, at) {
        (true, None) => list.push(label),
        (false, Some(i)) => {
            list.remove(i);
        }
        _ => {}
    }
    Ok(doc.to_string())
}

/// Hides (`ignored`) or shows again the groups of shape label `label`: written into the config
/// file `config_path` ([`set_shape_ignored`]), then given to the monitor, which publishes a
/// snapshot without (or with) them. Returns the labels ignored now.
///
/// # Errors
/// [`ApiError::NoConfigFile`], the errors of [`set_shape_ignored`], [`ApiError::Monitor`].
pub async fn ignore_shape(
    monitor: &MonitorHandle,
    config_path: Option<&Path>,
    label: &str,
    ignored: bool,
) -> Result<Vec<String>, ApiError> {
    let path = config_file(config_path)?;
    let label = label.to_owned();
    let list = blocking(move || set_shape_ignored(&path, &label, ignored)).await?;
    monitor.set_ignored_shapes(list.clone()).await?;
    Ok(list)
}

#[cfg(test)]
mod tests;
