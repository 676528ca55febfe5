//! What every subcommand needs: the loaded config, the roots, the catalogue, the data dir.

use std::path::PathBuf;

use anyhow::Context as _;
use cachewatch::catalogue::Catalogue;
use cachewatch::config::{self, LoadedConfig};
use cachewatch::roots::{self, Root};

use super::GlobalArgs;

/// `--root KIND=PATH`, for the subcommands that look at roots.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct RootArgs {
    /// A root to look at instead of the config's and the platform's (repeatable), e.g.
    /// `--root temp=/tmp`. KIND: temp, cache, library-caches, diagnostic-reports, container-temp
    /// (PATH: the containers dir, e.g. ~/Library/Containers: every <bundle-id>/Data/tmp in it)
    #[arg(long = "root", value_name = "KIND=PATH")]
    pub roots: Vec<String>,
}

/// The global options resolved: config loaded, data dir known.
#[derive(Debug)]
pub struct Context {
    /// The config file as loaded (defaults when the file does not exist).
    pub config: LoadedConfig,
    data_dir: Option<PathBuf>,
}

impl Context {
    /// Loads the config named by `--config` (or the platform's) and notes `--data-dir`.
    ///
    /// # Errors
    /// The config file cannot be read or is invalid (the message names the file and the line).
    pub fn load(global: &GlobalArgs) -> anyhow::Result<Context> {
        let path = match &global.config {
            Some(p) => Some(p.clone()),
            None => match config::default_config_path() {
                Ok(p) => Some(p),
                Err(e) => {
                    tracing::warn!("{e}; using the default configuration");
                    None
                }
            },
        };
        let config = match path {
            Some(p) => config::load(&p)?,
            None => LoadedConfig {
                config: config::Config::default(),
                path: PathBuf::from("<defaults>"),
                text: String::new(),
            },
        };
        tracing::debug!(path = %config.path.display(), "config loaded");
        Ok(Context {
            config,
            data_dir: global.data_dir.clone(),
        })
    }

    /// The built-in catalogue plus the config's `[[producer]]` rules.
    ///
    /// # Errors
    /// A user rule is invalid (the message names the config file and the line).
    pub fn catalogue(&self) -> anyhow::Result<Catalogue> {
        Ok(self.config.catalogue()?)
    }

    /// The roots to look at: `--root` arguments when given, else the config's `roots`, else the
    /// platform defaults that exist; with the config's `container_temp = true`, plus every
    /// sandboxed app's temp dir.
    ///
    /// # Errors
    /// A `--root` or config root that is malformed, missing or not a dir; no root at all.
    pub fn roots(&self, args: &RootArgs) -> anyhow::Result<Vec<Root>> {
        if !args.roots.is_empty() {
            let mut out = Vec::new();
            for a in &args.roots {
                let r = roots::Resolved::parse_arg(a).with_context(|| format!("--root {a}"))?;
                for skipped in &r.skipped {
                    tracing::warn!("--root {a}: {skipped}");
                }
                out.extend(r.roots);
            }
            return Ok(out);
        }
        let mut configured = self.config.roots()?;
        if !configured.is_empty() {
            configured.extend(self.config.container_temps());
            return Ok(configured);
        }
        let (mut found, missing) = roots::default_roots();
        for m in &missing {
            tracing::info!("default root skipped: {m}");
        }
        anyhow::ensure!(
            !found.is_empty(),
            "none of the default roots exists: pass --root KIND=PATH"
        );
        found.extend(self.config.container_temps());
        Ok(found)
    }

    /// The data dir: `--data-dir` (or `CACHEWATCH_DATA_DIR`), else the platform's.
    ///
    /// # Errors
    /// Neither given nor a home directory to find the platform's.
    pub fn data_dir(&self) -> anyhow::Result<PathBuf> {
        match &self.data_dir {
            Some(d) => Ok(d.clone()),
            None => Ok(config::default_data_dir()?),
        }
    }

    /// The history database: `<data dir>/cachewatch.db`.
    ///
    /// # Errors
    /// As [`Context::data_dir`].
    pub fn db_path(&self) -> anyhow::Result<PathBuf> {
        Ok(self.data_dir()?.join(config::DB_FILE_NAME))
    }
}
