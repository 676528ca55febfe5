//! The app's settings: default reclaim threshold, alert limits, open at login.
//!
//! The engine's config (`cachewatch::config`) can be read but not yet written, so the settings
//! the window changes are kept as JSON in the data dir (`app-settings.json`), seeded from the
//! config file the first time. "Open at login" is not stored: the autostart plugin is its truth.

use std::path::{Path, PathBuf};
use std::time::Duration;

use cachewatch::alerts::AlertsConfig;
use cachewatch::config::Config;
use serde::{Deserialize, Serialize};

/// The settings file's name inside the data dir.
pub const SETTINGS_FILE_NAME: &str = "app-settings.json";

/// The settings the window shows and edits (`get_settings`, `set_settings`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// Default reclaim age threshold, seconds.
    pub default_threshold_secs: u64,
    /// Alert limits, the config's `[alerts]` section (applied at the next start of the monitor).
    pub alerts: AlertsConfig,
    /// Whether the app starts at login.
    pub open_at_login: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings::from_config(&Config::default())
    }
}

impl Settings {
    /// The settings a config file implies (open at login off).
    pub fn from_config(config: &Config) -> Settings {
        Settings {
            default_threshold_secs: config.reclaim.older_than.as_secs(),
            alerts: config.alerts.clone(),
            open_at_login: false,
        }
    }

    /// The default threshold as a `Duration`.
    pub fn default_threshold(&self) -> Duration {
        Duration::from_secs(self.default_threshold_secs)
    }
}

/// Errors reading or writing the settings file.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// The file exists but cannot be read or written.
    #[error("cannot {op} settings {path:?}: {source}")]
    Io {
        /// `read`, `write` or `create the dir of`.
        op: &'static str,
        /// The settings file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid settings JSON.
    #[error("invalid settings {path:?}: {source}; fix or delete the file")]
    Invalid {
        /// The settings file.
        path: PathBuf,
        /// The JSON error.
        source: serde_json::Error,
    },
}

/// Where the settings live.
#[derive(Debug, Clone)]
pub struct SettingsStore {
    path: PathBuf,
}

impl SettingsStore {
    /// The store at `<data_dir>/app-settings.json`.
    pub fn in_dir(data_dir: &Path) -> SettingsStore {
        SettingsStore {
            path: data_dir.join(SETTINGS_FILE_NAME),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The saved settings, or `seed` when none were saved yet.
    ///
    /// # Errors
    /// [`SettingsError::Io`] when the file exists but cannot be read, [`SettingsError::Invalid`]
    /// when it is not valid JSON.
    pub fn load_or(&self, seed: Settings) -> Result<Settings, SettingsError> {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|source| SettingsError::Invalid {
                path: self.path.clone(),
                source,
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(seed),
            Err(source) => Err(self.io("read", source)),
        }
    }

    /// Saves `settings` (written to a temp file, then renamed over the old one).
    ///
    /// # Errors
    /// [`SettingsError::Io`] when the dir cannot be created or the file written.
    pub fn save(&self, settings: &Settings) -> Result<(), SettingsError> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| self.io("create the dir of", e))?;
        }
        let json =
            serde_json::to_vec_pretty(settings).map_err(|source| SettingsError::Invalid {
                path: self.path.clone(),
                source,
            })?;
        let tmp = self.path.with_extension("json.tmp");
        std::fs::write(&tmp, json).map_err(|e| self.io("write", e))?;
        std::fs::rename(&tmp, &self.path).map_err(|e| self.io("write", e))
    }

    fn io(&self, op: &'static str, source: std::io::Error) -> SettingsError {
        SettingsError::Io {
            op,
            path: self.path.clone(),
            source,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn unsaved_settings_come_from_the_seed_then_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let store = SettingsStore::in_dir(&dir.path().join("data"));
        let seed = Settings::default();
        assert_eq!(seed.default_threshold_secs, 3 * 24 * 3600);
        assert_eq!(store.load_or(seed.clone()).unwrap(), seed);

        let s = Settings {
            default_threshold_secs: 3600,
            ..seed.clone()
        };
        store.save(&s).unwrap();
        let text = std::fs::read_to_string(store.path()).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["default_threshold_secs"], 3600);
        assert_eq!(store.load_or(seed).unwrap(), s);
    }

    #[test]
    fn a_corrupt_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = SettingsStore::in_dir(dir.path());
        std::fs::write(store.path(), "{not json").unwrap();
        let e = store.load_or(Settings::default()).unwrap_err();
        assert!(matches!(e, SettingsError::Invalid { .. }));
        assert!(e.to_string().contains(SETTINGS_FILE_NAME), "{e}");
    }
}
