//! The settings the app's window edits: the default reclaim threshold and the alert limits. They
//! live in the config file only (`[reclaim] older_than`, `[alerts]`), edited in place with
//! `toml_edit` so the user's comments, key order and other sections survive.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use toml_edit::{DocumentMut, Item, Table};

use crate::alerts::AlertsConfig;
use crate::config::{self, Config};

use super::ApiError;

/// The editable settings (the UI's settings panel).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConfigSettings {
    /// Default reclaim age threshold, seconds (`[reclaim] older_than`).
    pub default_threshold_secs: u64,
    /// Alert limits (`[alerts]`).
    pub alerts: AlertsConfig,
}

impl Default for ConfigSettings {
    fn default() -> Self {
        ConfigSettings::from_config(&Config::default())
    }
}

impl ConfigSettings {
    /// The settings a config implies.
    pub fn from_config(config: &Config) -> ConfigSettings {
        ConfigSettings {
            default_threshold_secs: config.reclaim.older_than.as_secs(),
            alerts: config.alerts.clone(),
        }
    }

    /// The default threshold as a `Duration`.
    pub fn default_threshold(&self) -> Duration {
        Duration::from_secs(self.default_threshold_secs)
    }
}

/// The exact text of each size setting ([`crate::units::format_size`]: `50 MiB`; empty when
/// off), keyed by its path in the settings (`alerts.total_limit_bytes`): what the window shows
/// and lets the user edit, so a size reads back as the same number.
pub fn size_texts(settings: &ConfigSettings) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if let Ok(v) = serde_json::to_value(settings) {
        collect_sizes(&v, "", &mut out);
    }
    out
}

/// Every `*_bytes` value of `v` (a number or `null`) under `prefix`, as [`size_texts`] keys them.
fn collect_sizes(v: &serde_json::Value, prefix: &str, out: &mut BTreeMap<String, String>) {
    let Some(map) = v.as_object() else { return };
    for (k, v) in map {
        let path = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            serde_json::Value::Object(_) => collect_sizes(v, &path, out),
            serde_json::Value::Number(n) if k.ends_with("_bytes") => {
                let text = n
                    .as_u64()
                    .map(crate::units::format_size)
                    .unwrap_or_default();
                out.insert(path, text);
            }
            serde_json::Value::Null if k.ends_with("_bytes") => {
                out.insert(path, String::new());
            }
            _ => {}
        }
    }
}

/// `settings` with each size of `texts` (path as [`size_texts`] keys it → the text as typed:
/// `50 MiB`, `1.5 GiB`, a number of bytes; empty turns an optional size off) read by
/// [`crate::units::parse_size`]. The window sends the sizes as typed; the engine reads them, one
/// rule for the app and the config file.
///
/// # Errors
/// [`ApiError::BadSize`] naming the first field whose text is not a size, that cannot be left
/// empty, or that is no size setting.
pub fn with_size_texts(
    settings: &ConfigSettings,
    texts: &BTreeMap<String, String>,
) -> Result<ConfigSettings, ApiError> {
    let bad = |field: &str, message: String| ApiError::BadSize {
        field: field.to_owned(),
        message,
    };
    let mut v = serde_json::to_value(settings).map_err(|e| bad("", e.to_string()))?;
    for (field, text) in texts {
        let pointer = format!("/{}", field.replace('.', "/"));
        let slot = v
            .pointer_mut(&pointer)
            .filter(|_| field.ends_with("_bytes"))
            .ok_or_else(|| bad(field, format!("{field:?} is not a size setting")))?;
        let text = text.trim();
        *slot = if text.is_empty() {
            serde_json::Value::Null
        } else {
            let bytes = crate::units::parse_size(text).map_err(|e| bad(field, e.to_string()))?;
            serde_json::Value::from(bytes)
        };
        if serde_json::from_value::<ConfigSettings>(v.clone()).is_err() {
            return Err(bad(
                field,
                "it cannot be empty: write a size, e.g. \"20 GiB\" (0 turns it off)".to_owned(),
            ));
        }
    }
    serde_json::from_value(v).map_err(|e| bad("", e.to_string()))
}

/// The settings in the config file `path` as it is now (the defaults when it does not exist).
///
/// # Errors
/// [`ApiError::Config`] when the file cannot be read or is invalid.
pub fn load(path: &Path) -> Result<ConfigSettings, ApiError> {
    Ok(ConfigSettings::from_config(&config::load(path)?.config))
}

/// Writes `settings` into the config file `path` (created with its dir when missing): sets
/// `[reclaim] older_than` and the `[alerts]` keys, keeps every other line, comment and section as
/// it was. The edit goes through [`config::edit_file`]: under the config's lock, applied to the
/// file as it is then (another writer's change is kept, never overwritten), checked as a config,
/// written to a sibling temp file and renamed, so a failed save leaves the file as it was.
///
/// # Errors
/// [`ApiError::Config`] when the file cannot be read or locked, or the result would not load;
/// [`ApiError::ConfigSave`] when it cannot be replaced (a symlink another user could have planted,
/// not a regular file, or a failed write: see [`crate::safe_file`]); [`ApiError::ConfigEdit`] when
/// the file is not valid TOML.
pub fn save(path: &Path, settings: &ConfigSettings) -> Result<Config, ApiError> {
    let new_text = edit_config(path, |text| {
        let new_text = edit(text, settings).map_err(|message| ApiError::ConfigEdit {
            path: path.to_path_buf(),
            message,
        })?;
        config::parse(&new_text, path)?;
        Ok(new_text)
    })?;
    Ok(config::parse(&new_text, path)?)
}

/// [`config::edit_file`] with its errors as [`ApiError`]s.
pub(super) fn edit_config(
    path: &Path,
    apply: impl FnMut(&str) -> Result<String, ApiError>,
) -> Result<String, ApiError> {
    config::edit_file(path, apply).map_err(|e| match e {
        config::EditError::Config(e) => ApiError::Config(e),
        config::EditError::Write(e) => ApiError::ConfigSave(e),
        config::EditError::Edit(e) => e,
    })
}

/// The config text `text` with `settings` applied (comments and other keys kept).
///
/// # Errors
/// `text` is not valid TOML, or `[reclaim]`/`[alerts]` is not a table; the message says which.
pub fn edit(text: &str, settings: &ConfigSettings) -> Result<String, String> {
    let mut doc: DocumentMut = text
        .parse()
        .map_err(|e: toml_edit::TomlError| e.to_string())?;
    let threshold = humantime::format_duration(settings.default_threshold()).to_string();
    set_value(
        table_mut(doc.as_table_mut(), "reclaim")?,
        "older_than",
        toml_edit::Value::from(threshold),
    );
    let alerts_text = toml::to_string(&settings.alerts).map_err(|e| e.to_string())?;
    let alerts: DocumentMut = alerts_text
        .parse()
        .map_err(|e: toml_edit::TomlError| e.to_string())?;
    merge(table_mut(doc.as_table_mut(), "alerts")?, alerts.as_table());
    Ok(doc.to_string())
}

/// The table `key` of `parent`, created (as a `[key]` section) when absent.
fn table_mut<'a>(parent: &'a mut Table, key: &str) -> Result<&'a mut Table, String> {
    let item = parent.entry(key).or_insert_with(|| {
        let mut t = Table::new();
        t.set_implicit(false);
        Item::Table(t)
    });
    item.as_table_mut()
        .ok_or_else(|| format!("`{key}` is not a table"))
}

/// Sets every value of `new` in `into`, recursing into sub-tables, and removes keys of `into` that
/// `new` does not have (an optional setting turned off). Only `[alerts]` is merged this way, and
/// the config's schema refuses unknown keys there, so no key of the user's is lost.
fn merge(into: &mut Table, new: &Table) {
    let stale: Vec<String> = into
        .iter()
        .map(|(k, _)| k.to_owned())
        .filter(|k| !new.contains_key(k))
        .collect();
    for k in stale {
        into.remove(&k);
    }
    for (k, v) in new.iter() {
        match (v, into.get_mut(k).and_then(Item::as_table_mut)) {
            (Item::Table(sub), Some(existing)) => merge(existing, sub),
            (Item::Table(sub), None) => {
                let mut sub = sub.clone();
                // Placed after its parent section, not where it stood in the scratch document.
                sub.set_position(None);
                into.insert(k, Item::Table(sub));
            }
            (Item::Value(value), _) => set_value(into, k, value.clone()),
            _ => {
                into.insert(k, v.clone());
            }
        }
    }
}

/// Sets `key = value` in `table`, keeping the comments around an existing key and value.
fn set_value(table: &mut Table, key: &str, value: toml_edit::Value) {
    match table.get_mut(key).and_then(Item::as_value_mut) {
        Some(old) => {
            let decor = old.decor().clone();
            *old = value;
            *old.decor_mut() = decor;
        }
        None => {
            table.insert(key, Item::Value(value));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const USER_TEXT: &str = "\
# my cachewatch config
roots = [{ kind = \"temp\", path = \"/tmp\" }]

[reclaim]
# how old before it goes
older_than = \"3d\" # three days

[alerts]
free_disk_min_bytes = 1   # tiny on purpose
total_limit_bytes = 5

[[producer]]
id = \"zz-mine\" # my rule
";

    #[test]
    fn saving_settings_keeps_the_users_comments_other_keys_and_sections() {
        let mut s = ConfigSettings::from_config(&Config::default());
        s.default_threshold_secs = 90 * 60;
        s.alerts.free_disk_min_bytes = 2048;
        s.alerts.total_limit_bytes = None;
        let out = edit(USER_TEXT, &s).unwrap();
        for kept in [
            "# my cachewatch config",
            "roots = [{ kind = \"temp\", path = \"/tmp\" }]",
            "# how old before it goes",
            "# tiny on purpose",
            "[[producer]]",
            "id = \"zz-mine\" # my rule",
        ] {
            assert!(out.contains(kept), "lost {kept:?} in:\n{out}");
        }
        assert!(
            out.contains("older_than = \"1h 30m\" # three days"),
            "{out}"
        );
        let alerts_at = out.find("[alerts]").unwrap();
        assert!(
            out.find("[alerts.crash_loop]").unwrap() > alerts_at,
            "{out}"
        );
        assert!(out.find("[[producer]]").unwrap() > alerts_at, "{out}");
        assert!(out.contains("free_disk_min_bytes = 2048"), "{out}");
        assert!(!out.contains("total_limit_bytes"), "{out}");
        let parsed: toml::Table = out.parse().unwrap();
        assert_eq!(parsed["reclaim"]["older_than"].as_str(), Some("1h 30m"));
    }

    #[test]
    fn settings_written_into_an_empty_file_read_back_equal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/config.toml");
        let mut s = ConfigSettings {
            default_threshold_secs: 300,
            ..ConfigSettings::default()
        };
        s.alerts.producer_growth_items = 42;
        s.alerts.total_limit_bytes = Some(50 << 20);
        save(&path, &s).unwrap();
        let loaded = config::load(&path).unwrap();
        assert_eq!(ConfigSettings::from_config(&loaded.config), s);
    }

    #[test]
    fn a_config_that_is_not_toml_is_refused_and_left_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "[reclaim\nolder_than = 3").unwrap();
        let err = save(&path, &ConfigSettings::default()).unwrap_err();
        assert!(matches!(err, ApiError::ConfigEdit { .. }), "{err}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "[reclaim\nolder_than = 3"
        );
    }

    #[cfg(unix)]
    #[test]
    fn saving_through_a_symlinked_config_keeps_the_link_and_writes_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("dotfiles/cachewatch.toml");
        std::fs::create_dir_all(real.parent().unwrap()).unwrap();
        std::fs::write(&real, USER_TEXT).unwrap();
        let link = dir.path().join("config.toml");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let mut s = ConfigSettings::from_config(&Config::default());
        s.alerts.producer_growth_items = 42;
        save(&link, &s).unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        let text = std::fs::read_to_string(&real).unwrap();
        assert!(text.contains("producer_growth_items = 42"), "{text}");
        assert!(text.contains("# my cachewatch config"), "{text}");
    }

    /// Regression: the settings save and a `rules add` at once lost one of the two (a
    /// read-modify-write with no lock). Both go through the config's locked edit: 20 tries, both
    /// changes kept every time.
    #[test]
    fn a_settings_save_and_a_rule_added_at_once_both_stay() {
        use crate::catalogue::{ProducerKind, ReclaimMode, Rule};
        use crate::roots::RootKind;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        let rule = Rule {
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
            notes: String::new(),
            examples: Vec::new(),
            counter_examples: Vec::new(),
            structure: Vec::new(),
            versioned: false,
            contains: Vec::new(),
            lacks: Vec::new(),
            managed_by: None,
        };
        for attempt in 0..20 {
            let base = &USER_TEXT[..USER_TEXT.find("[[producer]]").unwrap()];
            std::fs::write(&path, base).unwrap();
            let mut s = ConfigSettings::from_config(&Config::default());
            s.alerts.producer_growth_items = 1000 + attempt;
            let barrier = std::sync::Barrier::new(2);
            std::thread::scope(|scope| {
                let saver = scope.spawn(|| {
                    barrier.wait();
                    save(&path, &s)
                });
                barrier.wait();
                super::super::rules::add(&path, &rule, |_, _| Ok::<(), ApiError>(())).unwrap();
                saver.join().unwrap().unwrap();
            });
            let loaded = config::load(&path).unwrap();
            assert_eq!(
                loaded.config.alerts.producer_growth_items,
                1000 + attempt,
                "try {attempt}: {}",
                loaded.text
            );
            assert!(
                loaded.catalogue().unwrap().rule("local-tmp").is_some(),
                "try {attempt}: {}",
                loaded.text
            );
            assert!(
                loaded.text.starts_with("# my cachewatch config\n"),
                "{}",
                loaded.text
            );
        }
    }

    /// The window shows each size as its exact text and sends back what was typed; the engine
    /// reads it (the window no longer asks once per field, nor formats sizes itself).
    #[test]
    fn sizes_go_to_the_window_as_text_and_come_back_read() {
        let s = ConfigSettings::default();
        let texts = size_texts(&s);
        assert_eq!(
            texts.get("alerts.free_disk_min_bytes").map(String::as_str),
            Some("10 GiB")
        );
        assert_eq!(
            texts.get("alerts.total_limit_bytes").map(String::as_str),
            Some("")
        );
        assert_eq!(with_size_texts(&s, &texts).expect("reads back"), s);
        let mut typed = texts.clone();
        typed.insert("alerts.total_limit_bytes".into(), "50 MiB".into());
        typed.insert("alerts.free_disk_min_bytes".into(), " 1.5 GiB ".into());
        let read = with_size_texts(&s, &typed).expect("reads");
        assert_eq!(read.alerts.total_limit_bytes, Some(50 << 20));
        assert_eq!(read.alerts.free_disk_min_bytes, 3 << 29);
        for (field, text, why) in [
            (
                "alerts.total_limit_bytes",
                "50 parsecs",
                "bad size \"50 parsecs\": unknown unit",
            ),
            ("alerts.free_disk_min_bytes", "", "it cannot be empty"),
            ("alerts.cooldown_bytes", "1 GiB", "is not a size setting"),
        ] {
            let mut typed = texts.clone();
            typed.insert(field.into(), text.into());
            match with_size_texts(&s, &typed) {
                Err(ApiError::BadSize { field: f, message }) => {
                    assert_eq!(f, field);
                    assert!(message.contains(why), "{message}");
                }
                other => panic!("{field} = {text:?}: {other:?}"),
            }
        }
    }
}
