//! The user's configuration: one TOML file, every section optional.
//!
//! Where: `--config PATH`, else the platform config dir
//! (`~/.config/cachewatch/config.toml` on Linux,
//! `~/Library/Application Support/dev.cachewatch.cachewatch/config.toml` on macOS).
//! A missing file means the defaults; an invalid one is an error naming the file and the line.
//! Only a regular file of at most [`MAX_CONFIG_BYTES`] (1 MiB) is read: a FIFO, a device
//! (`/dev/zero`) or a socket is refused without waiting on it or reading it.
//!
//! ```toml
//! roots = [{ kind = "temp", path = "/tmp" }]
//! container_temp = false # true: also every ~/Library/Containers/*/Data/tmp
//!
//! [reclaim]
//! older_than = "3d"      # humantime: 5m, 12h, 3d
//!
//! [watch]
//! debounce_ms = 500
//!
//! [[producer]]           # user rules, same schema as the built-in catalogue
//! id = "my-tool"
//! name = "My tool's scratch dirs"
//! root = "temp"
//! item = "my-tool-*"
//! kind = "leak"
//! reclaim = "auto"
//!
//! [[auto_reclaim]]       # rules that reclaim on their own (see crate::autoreclaim); none by default
//! producers = ["my-tool"]
//! older_than = "1h"
//! every = "10m"
//! ```

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::alerts::AlertsConfig;
use crate::catalogue::{Catalogue, CatalogueError};
use crate::roots::{Root, RootError, RootKind};
use crate::toml_lines::error_line;

/// The config file's name inside the config dir.
pub const CONFIG_FILE_NAME: &str = "config.toml";

/// The most bytes of a config file that are read; a larger file is refused. 1 MiB, far more than
/// any hand-written config.
pub const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// The history database's file name inside the data dir.
pub const DB_FILE_NAME: &str = "cachewatch.db";

/// Errors loading the configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but could not be read.
    #[error("cannot read config {path:?}: {source}")]
    Read {
        /// The config file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The path is not a regular file (a FIFO, a device, a socket, a directory).
    #[error(
        "config {path:?} is a {file_type}, not a regular file: pass --config with a TOML file"
    )]
    NotAFile {
        /// The config path.
        path: PathBuf,
        /// What it is (`FIFO`, `character device`, ...).
        file_type: &'static str,
    },
    /// The file is larger than [`MAX_CONFIG_BYTES`].
    #[error("config {path:?} is larger than {max_bytes} bytes: not read; pass --config with a TOML file")]
    TooLarge {
        /// The config file.
        path: PathBuf,
        /// The cap, bytes.
        max_bytes: u64,
    },
    /// The file holds a byte that is not UTF-8.
    #[error(
        "config {path:?} is not UTF-8 text: byte 0x{byte:02x} at line {line}, column {column}; \
         save it as UTF-8"
    )]
    NotUtf8 {
        /// The config file.
        path: PathBuf,
        /// 1-based line of the first bad byte.
        line: usize,
        /// 1-based column (in characters) of the first bad byte.
        column: usize,
        /// The byte.
        byte: u8,
    },
    /// The lock file beside the config (`<config>.lock`) is not a regular file.
    #[error(
        "refusing to edit config {path:?}: its lock file {lock:?} is a {kind}, not a regular \
         file; remove it (cachewatch creates it as an empty file)"
    )]
    LockFile {
        /// The config file.
        path: PathBuf,
        /// The lock file.
        lock: PathBuf,
        /// What is there instead (`symlink`, `FIFO`, ...).
        kind: &'static str,
    },
    /// The lock file cannot be created or locked.
    #[error("cannot lock config {path:?} with {lock:?}: {source}")]
    Lock {
        /// The config file.
        path: PathBuf,
        /// The lock file.
        lock: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Another process held the config's lock for longer than the wait.
    #[error(
        "config {path:?} is being edited by another process (it held {lock:?} for more than \
         {waited_secs} s); nothing written: try again when it is done"
    )]
    Locked {
        /// The config file.
        path: PathBuf,
        /// The lock file.
        lock: PathBuf,
        /// How long this edit waited, seconds.
        waited_secs: u64,
    },
    /// The file changed every time an edit was about to replace it.
    #[error(
        "config {path:?} changed under each of {tries} attempts to edit it (is a program \
         rewriting it?); nothing written: try again"
    )]
    KeptChanging {
        /// The config file.
        path: PathBuf,
        /// How many attempts were made.
        tries: usize,
    },
    /// The file is not valid TOML or does not fit the schema.
    #[error("invalid config {path:?}, line {line}: {message}")]
    Invalid {
        /// The config file.
        path: PathBuf,
        /// 1-based line of the error (1 when the parser gives no position).
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A `roots` entry names a dir that cannot be used.
    #[error("config {path:?}: {source}")]
    Root {
        /// The config file.
        path: PathBuf,
        /// Why the root cannot be used.
        source: RootError,
    },
    /// A `[[producer]]` rule is invalid (the error names the file and the line).
    #[error(transparent)]
    Catalogue(#[from] CatalogueError),
    /// Neither `--config` nor a home directory to find the platform config dir.
    #[error("no home directory to find the config and data dirs: pass --config and --data-dir")]
    NoHome,
}

/// The whole configuration file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Roots to watch instead of the platform defaults (`roots = [{ kind, path }]`); empty = defaults.
    pub roots: Vec<RootConfig>,
    /// `container_temp = true`: also watch every sandboxed app's temp dir
    /// (`~/Library/Containers/*/Data/tmp`, kind `container-temp`) besides the roots above or the
    /// defaults. Off by default: on macOS reading other apps' containers asks the user first.
    pub container_temp: bool,
    /// `[reclaim]`: reclaim defaults.
    pub reclaim: ReclaimConfig,
    /// `[watch]`: the file-system watcher.
    pub watch: WatchConfig,
    /// `[monitor]`: the background monitor.
    pub monitor: MonitorConfig,
    /// `[alerts]`: alert rules (see [`crate::alerts`]).
    pub alerts: AlertsConfig,
    /// `[[producer]]`: user catalogue rules. Kept raw here; validated by [`Config::catalogue`].
    #[serde(rename = "producer")]
    pub producers: Vec<toml::Table>,
    /// `[[process_watch]]`: processes whose thread count is watched for a steady climb (opt-in;
    /// see [`crate::process_leaks`]).
    #[serde(rename = "process_watch")]
    pub process_watch: Vec<crate::process_leaks::ProcessWatchConfig>,
    /// `[[auto_reclaim]]`: rules that reclaim without anyone asking (default none; checked
    /// against the catalogue by [`LoadedConfig::auto_reclaim`]).
    pub auto_reclaim: Vec<crate::autoreclaim::config::RuleConfig>,
    /// `[groups]`: groups of unattributed entries left out of the snapshot.
    pub groups: GroupsConfig,
}

/// The `[groups]` section.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GroupsConfig {
    /// Groups hidden from the snapshot and the window, by their shape label
    /// ([`crate::shapes::Shape::label`]: a byte that is not UTF-8 as `\xNN`, a backslash as
    /// `\\`), in every root. Their entries stay unattributed; removing a label shows the group
    /// again.
    pub ignore: Vec<String>,
}

/// One `roots` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RootConfig {
    /// `temp`, `cache`, `library-caches`, `diagnostic-reports` or `container-temp`.
    pub kind: RootKind,
    /// The directory; for `container-temp`, the containers dir (`~/Library/Containers`), whose
    /// every `<bundle-id>/Data/tmp` becomes a root.
    pub path: PathBuf,
}

/// The `[reclaim]` section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReclaimConfig {
    /// Default age threshold (`older_than = "3d"`, humantime); items younger are kept.
    #[serde(with = "crate::bounds::older_than")]
    pub older_than: Duration,
}

impl Default for ReclaimConfig {
    fn default() -> Self {
        ReclaimConfig {
            older_than: Duration::from_secs(3 * 24 * 3600),
        }
    }
}

/// The `[watch]` section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WatchConfig {
    /// Quiet time after the last event before an item is re-measured, milliseconds.
    #[serde(with = "crate::bounds::debounce_ms")]
    pub debounce_ms: u64,
}

impl Default for WatchConfig {
    fn default() -> Self {
        WatchConfig { debounce_ms: 500 }
    }
}

/// The `[monitor]` section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MonitorConfig {
    /// Interval between history samples, seconds.
    #[serde(with = "crate::bounds::sample_interval_secs")]
    pub sample_interval_secs: u64,
}

impl Default for MonitorConfig {
    fn default() -> Self {
        MonitorConfig {
            sample_interval_secs: 300,
        }
    }
}

/// A loaded configuration with where it came from, so later errors can name the file.
#[derive(Debug, Clone)]
pub struct LoadedConfig {
    /// The parsed configuration.
    pub config: Config,
    /// The file it was read from (it may not exist: then `config` is the defaults).
    pub path: PathBuf,
    /// The file's text (empty when it does not exist); user rules are compiled from it so their
    /// errors carry the file's own line numbers.
    pub text: String,
}

impl LoadedConfig {
    /// Checks what parsing alone cannot: the `[[producer]]` rules compile with the built-in
    /// catalogue and every `[[auto_reclaim]]` rule names producers it knows and may reclaim.
    /// [`load`] calls it, so every command refuses an invalid file the same way (a `scan` used to
    /// accept an `[[auto_reclaim]]` that `reclaim --rules` refused).
    ///
    /// # Errors
    /// [`ConfigError::Catalogue`] or [`ConfigError::Invalid`], naming this file and the line.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let catalogue = self.catalogue()?;
        self.auto_reclaim(&catalogue).map(|_| ())
    }
}

impl LoadedConfig {
    /// The built-in catalogue plus the file's `[[producer]]` rules.
    ///
    /// # Errors
    /// [`ConfigError::Catalogue`] naming this file and the line of the bad rule.
    pub fn catalogue(&self) -> Result<Catalogue, ConfigError> {
        if self.config.producers.is_empty() {
            Ok(Catalogue::builtin())
        } else {
            Ok(Catalogue::with_extra(&self.text, &self.path)?)
        }
    }

    /// With `container_temp = true`, every container's temp dir under `~/Library/Containers`
    /// ([`crate::roots::default_container_temps`]); containers that cannot be read are logged
    /// (warning) and left out. Empty when the switch is off.
    pub fn container_temps(&self) -> Vec<Root> {
        if !self.config.container_temp {
            return Vec::new();
        }
        let found = crate::roots::default_container_temps();
        for skipped in &found.skipped {
            tracing::warn!(config = %self.path.display(), "{skipped}");
        }
        found.roots
    }

    /// The configured roots (`roots = [...]`), resolved; empty when the file names none. A
    /// `container-temp` entry gives one root per container; containers that cannot be read are
    /// logged (warning) and left out.
    ///
    /// # Errors
    /// [`ConfigError::Root`] naming this file and the root that cannot be used.
    pub fn roots(&self) -> Result<Vec<Root>, ConfigError> {
        let mut out = Vec::new();
        for r in &self.config.roots {
            let path = self.config_relative(&r.path);
            let resolved =
                crate::roots::resolve(r.kind, &path).map_err(|source| ConfigError::Root {
                    path: self.path.clone(),
                    source,
                })?;
            for skipped in &resolved.skipped {
                tracing::warn!(config = %self.path.display(), "{skipped}");
            }
            out.extend(resolved.roots);
        }
        Ok(out)
    }
}

impl LoadedConfig {
    /// A path written in the config file as the user means it: `~/x` under the home dir, a
    /// relative path against the config file's own dir (not the current dir, which is `/` for
    /// launchd and cron), an absolute one as it is.
    pub fn config_relative(&self, path: &Path) -> PathBuf {
        if let Ok(rest) = path.strip_prefix("~") {
            if let Some(home) = directories::BaseDirs::new().map(|d| d.home_dir().to_path_buf()) {
                return home.join(rest);
            }
        }
        if path.is_relative() {
            if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
                return dir.join(path);
            }
        }
        path.to_path_buf()
    }
}

/// The platform's config file path: `<config dir>/config.toml`.
///
/// # Errors
/// [`ConfigError::NoHome`] when no home directory is known.
pub fn default_config_path() -> Result<PathBuf, ConfigError> {
    project_dirs().map(|d| d.config_dir().join(CONFIG_FILE_NAME))
}

/// The platform's data dir (`~/.local/share/cachewatch` on Linux,
/// `~/Library/Application Support/dev.cachewatch.cachewatch` on macOS).
///
/// # Errors
/// [`ConfigError::NoHome`] when no home directory is known.
pub fn default_data_dir() -> Result<PathBuf, ConfigError> {
    project_dirs().map(|d| d.data_dir().to_path_buf())
}

fn project_dirs() -> Result<directories::ProjectDirs, ConfigError> {
    directories::ProjectDirs::from("dev", "cachewatch", "cachewatch").ok_or(ConfigError::NoHome)
}

/// Reads the config at `path`; a missing file gives the defaults. The file is opened with
/// `O_NONBLOCK` and checked on the opened descriptor, and at most [`MAX_CONFIG_BYTES`] are read.
///
/// # Errors
/// [`ConfigError::Read`] when the file exists but cannot be read, [`ConfigError::NotUtf8`] with
/// the line and column of a byte that is not UTF-8, [`ConfigError::NotAFile`] when it is not a regular file, [`ConfigError::TooLarge`] past the
/// cap, [`ConfigError::Invalid`] with the line when it is not valid, including what only the
/// catalogue can check ([`LoadedConfig::validate`]).
pub fn load(path: &Path) -> Result<LoadedConfig, ConfigError> {
    let text = read_text(path)?.unwrap_or_default();
    let config = parse(&text, path)?;
    let loaded = LoadedConfig {
        config,
        path: path.to_owned(),
        text,
    };
    loaded.validate()?;
    Ok(loaded)
}

/// Parses config text; `origin` names the file in errors.
///
/// # Errors
/// [`ConfigError::Invalid`] with the 1-based line of the problem.
pub fn parse(text: &str, origin: &Path) -> Result<Config, ConfigError> {
    toml::from_str(text).map_err(|e| ConfigError::Invalid {
        path: origin.to_owned(),
        line: error_line(text, &e),
        message: e.message().trim().to_owned(),
    })
}
mod autoreclaim;
mod file;

pub use file::{edit_file, lock_path, read_text, EditError, LOCK_WAIT, MAX_TRIES};

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
