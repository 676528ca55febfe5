//! User rules written into the config file: a `[[producer]]` table appended with `toml_edit`, so
//! the user's comments, key order and other sections survive (the way [`super::settings`] edits).

use std::path::Path;
use std::time::SystemTime;

use toml_edit::{Array, ArrayOfTables, DocumentMut, InlineTable, Item, Table, Value};

use crate::catalogue::{Catalogue, Owner, Rule};
use crate::config;
/// The evidence naming a group's writer ([`writers_now`]), as [`crate::shapes::RuleOptions`]
/// takes it.
pub use crate::monitor::provenance::Evidence;
use crate::monitor::provenance::{self, EvidenceKind, ProcessHistory};
use crate::process::{ProcessProbe, SystemProbe};
use crate::scan::UnattributedGroup;
use crate::shapes::{self, ShapeGroup};
use crate::watch::live::GroupMember;

use super::ApiError;

/// The config text `text` with `rule` appended as a `[[producer]]` table (only the keys the rule
/// sets: id, name, root, item, name_regex, kind, reclaim, min_age_secs, owner (its keys that
/// are not the default), notes, examples).
///
/// # Errors
/// `text` is not valid TOML, or `producer` is there but not an array of tables.
pub fn append_rule(text: &str, rule: &Rule) -> Result<String, String> {
    let mut doc: DocumentMut = text
        .parse()
        .map_err(|e: toml_edit::TomlError| e.to_string())?;
    let mut t = Table::new();
    t.insert("id", toml_edit::value(rule.id.as_str()));
    t.insert("name", toml_edit::value(rule.name.as_str()));
    t.insert("root", toml_edit::value(rule.root.to_string()));
    let item = match rule.item.as_slice() {
        [one] => Value::from(one.as_str()),
        many => Value::Array(many.iter().map(String::as_str).collect::<Array>()),
    };
    t.insert("item", Item::Value(item));
    if let Some(rx) = &rule.name_regex {
        t.insert("name_regex", toml_edit::value(rx.as_str()));
    }
    if let Some(rx) = &rule.path_regex {
        t.insert("path_regex", toml_edit::value(rx.as_str()));
    }
    t.insert("kind", toml_edit::value(word(&rule.kind)));
    t.insert("reclaim", toml_edit::value(word(&rule.reclaim)));
    t.insert(
        "min_age_secs",
        toml_edit::value(i64::try_from(rule.min_age_secs).unwrap_or(i64::MAX)),
    );
    let owner = owner_table(&rule.owner);
    if !owner.is_empty() {
        t.insert("owner", Item::Value(Value::InlineTable(owner)));
    }
    if !rule.notes.is_empty() {
        t.insert("notes", toml_edit::value(rule.notes.as_str()));
    }
    if !rule.examples.is_empty() {
        let ex: Array = rule.examples.iter().map(String::as_str).collect();
        t.insert("examples", Item::Value(Value::Array(ex)));
    }
    match doc
        .entry("producer")
        .or_insert_with(|| Item::ArrayOfTables(ArrayOfTables::new()))
    {
        Item::ArrayOfTables(a) => a.push(t),
        _ => return Err("`producer` is not an array of tables ([[producer]])".to_owned()),
    }
    Ok(doc.to_string())
}

/// The keys of `owner` that differ from the default, as an inline table (`{ pid_in_name = true }`).
fn owner_table(owner: &Owner) -> InlineTable {
    let default = Owner::default();
    let mut t = InlineTable::new();
    if owner.pid_in_name != default.pid_in_name {
        t.insert("pid_in_name", Value::from(owner.pid_in_name));
    }
    if owner.processes != default.processes {
        let list: Array = owner.processes.iter().map(String::as_str).collect();
        t.insert("processes", Value::Array(list));
    }
    if owner.app_in_path != default.app_in_path {
        t.insert("app_in_path", Value::from(owner.app_in_path));
    }
    if owner.app_in_item != default.app_in_item {
        t.insert("app_in_item", Value::from(owner.app_in_item));
    }
    t
}

fn word<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

/// The config text of `path` with `rule` appended, and the catalogue it gives (the built-in rules
/// plus the file's), checked: the rule compiles, its id is new, its examples match. Only reads
/// (through [`config::read_text`]); [`add`] writes.
///
/// # Errors
/// [`ApiError::Config`] when the file cannot be read; [`ApiError::ConfigEdit`] when it is not
/// valid TOML, or when the result would not load.
pub fn with_rule(path: &Path, rule: &Rule) -> Result<(String, Catalogue), ApiError> {
    let text = config::read_text(path)?.unwrap_or_default();
    with_rule_text(path, &text, rule)
}

/// `text` (the config file `path`) with `rule` appended, and the catalogue it gives.
pub(crate) fn with_rule_text(
    path: &Path,
    text: &str,
    rule: &Rule,
) -> Result<(String, Catalogue), ApiError> {
    let new_text = append_rule(text, rule).map_err(|message| ApiError::ConfigEdit {
        path: path.to_path_buf(),
        message,
    })?;
    let catalogue = catalogue_of(path, &new_text)?;
    Ok((new_text, catalogue))
}

/// The catalogue the config text `text` (of the file `path`) gives: the built-in rules and its
/// own.
pub(crate) fn catalogue_of(path: &Path, text: &str) -> Result<Catalogue, ApiError> {
    let loaded = config::LoadedConfig {
        config: config::parse(text, path)?,
        path: path.to_path_buf(),
        text: text.to_owned(),
    };
    Ok(loaded.catalogue()?)
}

/// Appends `rule` to the config file `path` (created with its dir when missing) when `check`
/// accepts the catalogues before and after (the file as it is, then with the rule), and returns
/// what `check` returned. The edit goes through
/// [`config::edit_file`]: under the config's lock, on the file as it is then, so a rule another
/// writer added meanwhile is kept; `check` runs again on each text the rule is applied to.
///
/// # Errors
/// What `check` returns (nothing written); the errors of [`with_rule`], and
/// [`ApiError::ConfigSave`] when the file cannot be replaced.
pub fn add<T, E: From<ApiError>>(
    path: &Path,
    rule: &Rule,
    mut check: impl FnMut(&Catalogue, &Catalogue) -> Result<T, E>,
) -> Result<T, E> {
    let mut checked = None;
    let edited = config::edit_file(path, |text| {
        let before = catalogue_of(path, text).map_err(E::from)?;
        let (new_text, catalogue) = with_rule_text(path, text, rule).map_err(E::from)?;
        checked = Some(check(&before, &catalogue)?);
        Ok(new_text)
    });
    match edited {
        Ok(_) => checked.ok_or_else(|| {
            E::from(ApiError::ConfigEdit {
                path: path.to_path_buf(),
                message: "the rule was never checked".to_owned(),
            })
        }),
        Err(config::EditError::Config(e)) => Err(E::from(ApiError::Config(e))),
        Err(config::EditError::Write(e)) => Err(E::from(ApiError::ConfigSave(e))),
        Err(config::EditError::Edit(e)) => Err(e),
    }
}

/// Who writes a group, from one sample of the process table taken now (and, from
/// [`writers_remembered`], what the history database remembers).
#[derive(Debug, Clone, Default)]
pub struct GroupWriters {
    /// The first process seen holding a file inside a member (its executable name).
    pub held: Option<String>,
    /// The evidence naming the writer, strongest first ([`provenance::group_evidence`]), without
    /// "created at launch" from the sample (one cannot tell a launch from a busy program), with
    /// the remembered writers the sample does not name.
    pub evidence: Vec<Evidence>,
}

/// [`GroupWriters`] of each of `groups`: one refresh of the open files under their roots, one
/// sample of the process table, one listing of each group's root (taken only when there is a
/// group).
pub fn writers_now(groups: &[UnattributedGroup]) -> Vec<GroupWriters> {
    writers_remembered(groups, &[])
}

/// The writers the history database at `db` remembers for every group, for
/// [`writers_remembered`]: none when there is no database yet.
///
/// # Errors
/// The database cannot be read (locked, damaged, a schema this cachewatch does not read).
pub fn stored_writers(
    db: &Path,
) -> Result<Vec<crate::history::StoredWriter>, crate::history::HistoryError> {
    if !db.exists() {
        return Ok(Vec::new());
    }
    crate::history::History::open_read_only(db)?.group_writers()
}

/// [`writers_now`], with the writers the history database remembers (`stored`, any groups'; each
/// group takes those of its key, [`crate::history::group_key`]) that the sample does not name,
/// added as the monitor's figures add them ([`provenance::add_remembered`]): a writer the monitor
/// saw launch or hold the members, exited since, still names the group's writer and a rule's
/// owner, as in the monitor.
pub fn writers_remembered(
    groups: &[UnattributedGroup],
    stored: &[crate::history::StoredWriter],
) -> Vec<GroupWriters> {
    if groups.is_empty() {
        return Vec::new();
    }
    let probe = SystemProbe::under(groups.iter().map(|g| g.root.clone()));
    probe.refresh();
    let mut history = ProcessHistory::new(provenance::HISTORY_CAP);
    history.observe(SystemTime::now(), provenance::sample_processes());
    groups
        .iter()
        .map(|g| {
            let held = shapes::writers(&probe as &dyn ProcessProbe, &g.root, &[&g.group], 3)
                .into_iter()
                .next()
                .unwrap_or_default();
            let (members, _) = members_of(&g.root, &g.group);
            let mut evidence: Vec<Evidence> =
                provenance::group_evidence(&members, g.group.items, &held, &history)
                    .into_iter()
                    .filter(|e| e.kind != EvidenceKind::CreatedAtLaunch)
                    .collect();
            let key = crate::history::group_key(&g.root, g.group.within.as_deref(), &g.group.key);
            let mine: Vec<crate::history::StoredWriter> =
                stored.iter().filter(|w| w.key == key).cloned().collect();
            provenance::add_remembered(&mut evidence, &mine, &history);
            GroupWriters {
                held: held.into_iter().map(|w| w.name).find(|n| !n.is_empty()),
                evidence,
            }
        })
        .collect()
}

/// The members of `group` in `root` (at most [`provenance::MEMBERS_LOOKED_AT`], for the
/// evidence) and the oldest and newest birth of all of them: one listing of the root, one
/// `lstat` per member. Birth: the entry's own (`statx`, `st_birthtime`), else its mtime.
pub(super) fn members_of(
    root: &Path,
    group: &ShapeGroup,
) -> (Vec<GroupMember>, Option<(SystemTime, SystemTime)>) {
    let mut out = Vec::new();
    let mut births: Option<(SystemTime, SystemTime)> = None;
    // A group one level down lists its dir.
    let dir = group.within.as_ref().map(|w| root.join(w));
    let Ok(entries) = std::fs::read_dir(dir.as_deref().unwrap_or(root)) else {
        return (out, births);
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Ok(md) = entry.metadata() else {
            continue;
        };
        if !group.contains(&name, md.is_dir()) {
            continue;
        }
        let born = md.created().or_else(|_| md.modified()).ok();
        if let Some(t) = born {
            births = Some(match births {
                None => (t, t),
                Some((lo, hi)) => (lo.min(t), hi.max(t)),
            });
        }
        if out.len() < provenance::MEMBERS_LOOKED_AT {
            out.push(GroupMember {
                path: entry.path(),
                name,
                born,
            });
        }
    }
    (out, births)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::{ProducerKind, ReclaimMode};
    use crate::roots::RootKind;

    fn rule() -> Rule {
        Rule {
            id: "local-tmp".into(),
            name: "Unknown producer of tmp<rand8>/".into(),
            root: RootKind::Temp,
            item: vec!["tmp*".into()],
            name_regex: Some("^tmp[A-Za-z0-9]{8}$".into()),
            path_regex: None,
            kind: ProducerKind::Leak,
            reclaim: ReclaimMode::Manual,
            min_age_secs: 3600,
            owner: Default::default(),
            evidence: Vec::new(),
            notes: "made here".into(),
            examples: vec!["tmpAb3xYz12".into()],
            counter_examples: Vec::new(),
            structure: Vec::new(),
            versioned: false,
            contains: Vec::new(),
            lacks: Vec::new(),
            managed_by: None,
        }
    }

    #[test]
    fn appending_a_rule_keeps_the_users_comments_and_other_rules() {
        let text = "# my config\n[reclaim]\nolder_than = \"3d\" # three days\n\n[[producer]]\nid = \"zz-mine\" # mine\nname = \"Mine\"\nroot = \"temp\"\nitem = \"mine-*\"\nkind = \"leak\"\nreclaim = \"manual\"\n";
        let out = append_rule(text, &rule()).unwrap();
        assert!(out.starts_with(text), "{out}");
        let parsed: toml::Table = toml::from_str(&out).unwrap();
        let producers = parsed["producer"].as_array().unwrap();
        assert_eq!(producers.len(), 2);
        assert_eq!(producers[1]["id"].as_str(), Some("local-tmp"));
        assert_eq!(
            producers[1]["name_regex"].as_str(),
            Some("^tmp[A-Za-z0-9]{8}$")
        );
        assert_eq!(producers[1]["min_age_secs"].as_integer(), Some(3600));
        assert_eq!(producers[1]["reclaim"].as_str(), Some("manual"));
        let cat = Catalogue::with_extra(&out, Path::new("c.toml")).unwrap();
        assert!(cat.rule("local-tmp").is_some());
    }
}
