//! [`Session`]: the config, data dir, roots and catalogue as both front ends resolve them.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::catalogue::Catalogue;
use crate::config::{self, ConfigError, LoadedConfig};
use crate::history::HistoryError;
use crate::monitor::MonitorOptions;
use crate::roots::{self, Root, RootError};

/// Where the front end was told the config and the data live (`--config` / `CACHEWATCH_CONFIG`,
/// `--data-dir` / `CACHEWATCH_DATA_DIR`); `None` means the platform's default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Locations {
    /// The config file, if given.
    pub config: Option<PathBuf>,
    /// The data dir (holds the history database), if given.
    pub data_dir: Option<PathBuf>,
}

/// Errors of the engine API.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// No config file to write into (no home dir and no `--config`).
    #[error("no config file to write into: start with --config PATH or set CACHEWATCH_CONFIG")]
    NoConfigFile,
    /// No group of that label in that root among the groups the monitor shows now.
    #[error("no group {label:?} in {root:?} now: it is gone, hidden, or no longer among the largest groups; look at the list again")]
    NoGroup {
        /// The root, as given.
        root: String,
        /// The shape label, as given.
        label: String,
    },
    /// The group cannot make a rule (names that are not text).
    #[error(transparent)]
    GroupRule(#[from] crate::shapes::RuleError),
    /// A rule id that is not lowercase words and dashes.
    #[error("{id:?} is not a producer id: use lowercase letters a-z, digits and single dashes between words, e.g. \"my-app-temp\"")]
    BadRuleId {
        /// The id given.
        id: String,
    },
    /// A rule id a built-in rule has (a user rule of that id would replace it).
    #[error("producer id {id:?} is a built-in rule's; choose another id")]
    RuleIdTaken {
        /// The id given.
        id: String,
    },
    /// The rule would claim entries of the root that are not in the group.
    #[error("the rule for {label:?} would also claim {names:?} in {root:?}, which are not in the group; nothing written (write the rule by hand with a narrower name_regex)")]
    RuleWouldClaim {
        /// The group's shape label.
        label: String,
        /// The root.
        root: PathBuf,
        /// What it would claim besides (at most 20).
        names: Vec<String>,
    },
    /// The rule would not claim every member of the group.
    #[error("the rule for {label:?} would miss the members {names:?}; nothing written")]
    RuleWouldMiss {
        /// The group's shape label.
        label: String,
        /// The members missed (at most 20).
        names: Vec<String>,
    },
    /// The group's rule is no longer the one previewed (its members changed shape).
    #[error("the group {label:?} changed since its preview (its rule would now match {regex:?}); nothing written: make the rule again")]
    GroupChanged {
        /// The group's shape label.
        label: String,
        /// The regex its rule has now.
        regex: String,
    },
    /// A root cannot be listed (to check a rule).
    #[error("cannot list {root:?} to check the rule: {source}")]
    ListRoot {
        /// The root.
        root: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// An empty shape label.
    #[error(
        "no shape given: pass the group's shape as `cachewatch scan` prints it, e.g. 'tmp<rand8>/'"
    )]
    EmptyLabel,
    /// A shape label to show again that is not ignored.
    #[error("shape {label:?} is not ignored ([groups] ignore does not list it); nothing changed")]
    NotIgnored {
        /// The label given.
        label: String,
    },
    /// The monitor could not do what was asked.
    #[error(transparent)]
    Monitor(#[from] crate::monitor::MonitorError),
    /// A blocking job failed (a panic).
    #[error("a background job failed: {0}")]
    Job(String),
    /// The config file cannot be read or is invalid (names the file and the line).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A `--root KIND=PATH` argument cannot be used.
    #[error("--root {arg}: {source}")]
    RootArg {
        /// The argument as given.
        arg: String,
        /// Why it cannot be used.
        source: RootError,
    },
    /// No root given, none configured, and none of the platform's default dirs exists.
    #[error("none of the default roots exists: pass --root KIND=PATH")]
    NoRoots,
    /// The data dir cannot be created.
    #[error("cannot create the data dir {path:?}: {source}; set --data-dir or CACHEWATCH_DATA_DIR to a writable dir")]
    DataDir {
        /// The dir.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The data dir is there but is no directory.
    #[error(
        "--data-dir {path:?} is not a directory (it is {kind}): give the directory that holds the \
         history database cachewatch.db, or a new path; nothing was read or written"
    )]
    DataDirNotADir {
        /// The data dir.
        path: PathBuf,
        /// What it is instead (`a regular file`, ...).
        kind: &'static str,
    },
    /// The history database's path is there but is no regular file.
    #[error(
        "cannot read the history database {path:?}: it is {kind}, not a regular file; move it \
         away or give another --data-dir; nothing was read or written"
    )]
    HistoryNotAFile {
        /// The database's path.
        path: PathBuf,
        /// What it is instead (`a directory`, ...).
        kind: &'static str,
    },
    /// The audit rows could not be written before deleting, so nothing was deleted (rule 7).
    #[error("nothing deleted: the audit rows could not be written to the history database {path:?}: {source}")]
    AuditNotWritten {
        /// The database file.
        path: PathBuf,
        /// Why (boxed: the history's errors are large).
        source: Box<HistoryError>,
    },
    /// The history database cannot be read (the window's charts and reclaim history).
    #[error("cannot read the history: {0}")]
    History(Box<HistoryError>),
    /// A group key that is not the hex the snapshot gives (`history_key`).
    #[error("group key {key:?} is not hex: pass the history_key the snapshot gives for the group")]
    GroupKey {
        /// The key given.
        key: String,
    },
    /// A producer id the catalogue does not know.
    #[error("unknown producer {id:?}: `cachewatch producers` lists the ids")]
    UnknownProducer {
        /// The id given.
        id: String,
    },
    /// The config file cannot be written (settings).
    #[error("cannot {op} the config file {path:?}: {source}")]
    ConfigWrite {
        /// `read`, `write` or `create the dir of`.
        op: &'static str,
        /// The config file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The config file cannot be replaced: a refused link or special file, or a failed write
    /// (the message names the file and the rule).
    #[error("cannot save the config file: {0}")]
    ConfigSave(#[source] crate::safe_file::WriteError),
    /// The config file is not valid TOML, so the settings cannot be written into it.
    #[error(
        "cannot save settings into {path:?}: it is not valid TOML ({message}); fix the file first"
    )]
    ConfigEdit {
        /// The config file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A size setting typed as text that is not a size (`50 MB`), or that cannot be left empty.
    #[error("{message}")]
    BadSize {
        /// The setting, as its path in the settings (`alerts.total_limit_bytes`).
        field: String,
        /// What is wrong and what to write.
        message: String,
    },
}

/// The config, data dir and catalogue of one run of CacheWatch (a CLI command or the app).
#[derive(Debug)]
pub struct Session {
    /// The config file as loaded (defaults when the file does not exist).
    pub config: LoadedConfig,
    /// Where the config file is (or would be): settings are written there.
    pub config_path: Option<PathBuf>,
    data_dir: Option<PathBuf>,
}

impl Session {
    /// Loads the config named by `loc.config` (else the platform's; without a home dir, the
    /// defaults with a warning) and notes the data dir.
    ///
    /// # Errors
    /// [`ApiError::Config`] when the config file cannot be read or is invalid.
    pub fn load(loc: &Locations) -> Result<Session, ApiError> {
        let path = match &loc.config {
            Some(p) => Some(p.clone()),
            None => match config::default_config_path() {
                Ok(p) => Some(p),
                Err(e) => {
                    tracing::warn!("{e}; using the default configuration");
                    None
                }
            },
        };
        let config = match &path {
            Some(p) => config::load(p)?,
            None => LoadedConfig {
                config: config::Config::default(),
                path: PathBuf::from("<defaults>"),
                text: String::new(),
            },
        };
        tracing::debug!(path = %config.path.display(), "config loaded");
        Ok(Session {
            config,
            config_path: path,
            data_dir: loc.data_dir.clone(),
        })
    }

    /// A session with the default configuration in place of the config file `loc.config` names
    /// (settings are still written to that file), for a front end that runs despite a config it
    /// cannot load.
    pub fn with_defaults(loc: &Locations, config_path: Option<PathBuf>) -> Session {
        Session {
            config: LoadedConfig {
                config: config::Config::default(),
                path: PathBuf::from("<defaults>"),
                text: String::new(),
            },
            config_path,
            data_dir: loc.data_dir.clone(),
        }
    }

    /// The built-in catalogue plus the config's `[[producer]]` rules.
    ///
    /// # Errors
    /// A user rule is invalid (the message names the config file and the line).
    pub fn catalogue(&self) -> Result<Catalogue, ApiError> {
        Ok(self.config.catalogue()?)
    }

    /// Checks that every id in `producers` names a rule of `catalogue`.
    ///
    /// # Errors
    /// [`ApiError::UnknownProducer`] naming the first unknown id.
    pub fn check_producers(catalogue: &Catalogue, producers: &[String]) -> Result<(), ApiError> {
        match producers.iter().find(|id| catalogue.rule(id).is_none()) {
            Some(id) => Err(ApiError::UnknownProducer { id: id.clone() }),
            None => Ok(()),
        }
    }

    /// Parses `--root KIND=PATH` arguments; `container-temp=DIR` gives one root per sandboxed
    /// app's temp dir in DIR (containers that cannot be read are logged as warnings and left out).
    ///
    /// # Errors
    /// [`ApiError::RootArg`] naming the first argument that is malformed or names a missing dir.
    pub fn parse_root_args(args: &[String]) -> Result<Vec<Root>, ApiError> {
        let mut out = Vec::new();
        for a in args {
            let r = roots::Resolved::parse_arg(a).map_err(|source| ApiError::RootArg {
                arg: a.clone(),
                source,
            })?;
            for skipped in &r.skipped {
                tracing::warn!("--root {a}: {skipped}");
            }
            out.extend(r.roots);
        }
        Ok(out)
    }

    /// The roots to look at: `given` when not empty, else the config's `roots`, else the
    /// platform's default dirs that exist; with the config's `container_temp = true`, plus every
    /// sandboxed app's temp dir.
    ///
    /// # Errors
    /// A config root that is missing or not a dir; [`ApiError::NoRoots`] when none is left.
    pub fn roots(&self, given: Vec<Root>) -> Result<Vec<Root>, ApiError> {
        if !given.is_empty() {
            return Ok(Self::dedupe(given));
        }
        let configured = self.config.roots()?;
        let mut roots = if !configured.is_empty() {
            configured
        } else {
            let (found, missing) = roots::default_roots();
            for m in &missing {
                // The temp and cache dirs always exist on a sane system: a missing one (a TMPDIR
                // naming nothing) is worth a warning; the macOS-only dirs off macOS are not.
                match m {
                    roots::RootError::Missing {
                        kind: roots::RootKind::Temp | roots::RootKind::Cache,
                        ..
                    } => tracing::warn!("default root left out: {m}"),
                    _ => tracing::info!("default root skipped: {m}"),
                }
            }
            found
        };
        if roots.is_empty() {
            return Err(ApiError::NoRoots);
        }
        roots.extend(self.config.container_temps());
        Ok(Self::dedupe(roots))
    }

    /// `roots` without a second root of the same canonical path (given twice, or once more
    /// through a symlink: every item would be listed, planned and audited twice), with a warning
    /// naming each dropped one, and each root's nested roots marked ([`roots::mark_nested`]: an
    /// item is attributed in the innermost root holding it only).
    fn dedupe(roots: Vec<Root>) -> Vec<Root> {
        let (mut kept, dropped) = roots::dedupe(roots);
        roots::mark_nested(&mut kept);
        for d in dropped {
            tracing::warn!(
                "root {}={} left out: the same dir as another root ({})",
                d.kind,
                d.path.display(),
                d.canonical.display()
            );
        }
        kept
    }

    /// The data dir: as given, else the platform's.
    ///
    /// # Errors
    /// Neither given nor a home directory to find the platform's.
    pub fn data_dir(&self) -> Result<PathBuf, ApiError> {
        match &self.data_dir {
            Some(d) => Ok(d.clone()),
            None => Ok(config::default_data_dir()?),
        }
    }

    /// The data dir, created when missing.
    ///
    /// # Errors
    /// As [`Session::data_dir`]; [`ApiError::DataDir`] when it cannot be created.
    pub fn ensure_data_dir(&self) -> Result<PathBuf, ApiError> {
        let dir = self.data_dir()?;
        std::fs::create_dir_all(&dir).map_err(|source| ApiError::DataDir {
            path: dir.clone(),
            source,
        })?;
        Ok(dir)
    }

    /// The history database: `<data dir>/cachewatch.db`.
    ///
    /// # Errors
    /// As [`Session::data_dir`].
    pub fn db_path(&self) -> Result<PathBuf, ApiError> {
        Ok(self.data_dir()?.join(config::DB_FILE_NAME))
    }

    /// The history database to read: `None` when there is none yet (no data dir, no file
    /// there). Looked at through links (a data dir that is a link to a dir is one).
    ///
    /// # Errors
    /// As [`Session::data_dir`]; [`ApiError::DataDirNotADir`] when the data dir is something else
    /// than a directory, [`ApiError::HistoryNotAFile`] when the database is something else than a
    /// regular file.
    pub fn history_to_read(&self) -> Result<Option<PathBuf>, ApiError> {
        let dir = self.data_dir()?;
        match std::fs::metadata(&dir) {
            Ok(md) if !md.is_dir() => {
                return Err(ApiError::DataDirNotADir {
                    path: dir,
                    kind: kind_of(&md),
                })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            _ => {}
        }
        let db = dir.join(config::DB_FILE_NAME);
        match std::fs::metadata(&db) {
            Ok(md) if !md.is_file() => Err(ApiError::HistoryNotAFile {
                path: db,
                kind: kind_of(&md),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            _ => Ok(Some(db)),
        }
    }

    /// The dirs no reclaim may reach besides the home dir (which the engine always adds): the data
    /// dir (the history database) and the config file's dir, made absolute (safety rule 1).
    pub fn protected_paths(&self) -> Vec<PathBuf> {
        let config_dir = self
            .config_path
            .as_deref()
            .and_then(Path::parent)
            .filter(|d| !d.as_os_str().is_empty())
            .map(Path::to_path_buf);
        self.data_dir()
            .ok()
            .into_iter()
            .chain(config_dir)
            .filter_map(|p| std::path::absolute(p).ok())
            .collect()
    }

    /// The default reclaim age threshold: the config's `[reclaim] older_than` (default 3 days).
    pub fn default_threshold(&self) -> Duration {
        self.config.config.reclaim.older_than
    }

    /// The monitor's options for `roots` from the config: debounce, sample interval, threshold,
    /// alerts, process watch, auto-reclaim rules, the history database in the data dir (when the data dir is known)
    /// and the protected paths.
    ///
    /// # Errors
    /// A user catalogue rule is invalid; an `[[auto_reclaim]]` rule names an unknown producer or
    /// has no trigger (the message names the config file and the line).
    pub fn monitor_options(&self, roots: Vec<Root>) -> Result<MonitorOptions, ApiError> {
        let cfg = &self.config.config;
        let mut opts = MonitorOptions::new(roots, Arc::new(self.catalogue()?));
        opts.debounce = Duration::from_millis(cfg.watch.debounce_ms);
        opts.threshold = cfg.reclaim.older_than;
        opts.alerts = cfg.alerts.clone();
        opts.sample_interval = Duration::from_secs(cfg.monitor.sample_interval_secs.max(1));
        opts.process_watch = cfg.process_watch.clone();
        opts.protected = self.protected_paths();
        opts.auto_reclaim = self.config.auto_reclaim(&opts.catalogue)?;
        opts.ignored_shapes = cfg.groups.ignore.clone();
        match self.db_path() {
            Ok(p) => opts.db_path = Some(p),
            Err(e) => tracing::warn!("running without history: {e}"),
        }
        Ok(opts)
    }
}

impl From<crate::audit::AuditNotWritten> for ApiError {
    fn from(e: crate::audit::AuditNotWritten) -> ApiError {
        ApiError::AuditNotWritten {
            path: e.path,
            source: e.source,
        }
    }
}

/// What `md` is, as an error says it: `a directory`, `a regular file`, ...
fn kind_of(md: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = md.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_file() {
        "a regular file"
    } else if t.is_fifo() {
        "a named pipe"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_block_device() || t.is_char_device() {
        "a device"
    } else {
        "not a regular file"
    }
}
