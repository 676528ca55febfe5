//! What every subcommand needs, from the engine API: the session (config, data dir, catalogue,
//! protected paths) and the roots named by `--root`.

use cachewatch::api::roots::Root;
use cachewatch::api::{Locations, Session};

use super::GlobalArgs;

/// The resolved global options: the engine's [`Session`].
pub type Context = Session;

/// Loads the session named by `--config` and `--data-dir` (or their environment variables).
///
/// # Errors
/// The config file cannot be read or is invalid (the message names the file and the line).
pub fn load(global: &GlobalArgs) -> anyhow::Result<Context> {
    Ok(Session::load(&Locations {
        config: global.config.clone(),
        data_dir: global.data_dir.clone(),
    })?)
}

/// `--root KIND=PATH`, for the subcommands that look at roots.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct RootArgs {
    /// A root to look at instead of the config's and the platform's (repeatable), e.g.
    /// `--root temp=/tmp`. KIND: temp, cache, library-caches, diagnostic-reports, container-temp
    /// (PATH: the containers dir, e.g. ~/Library/Containers: every <bundle-id>/Data/tmp in it),
    /// code-sign-clones (macOS: the X dir beside $TMPDIR's T), other (any dir; the same catalogue)
    #[arg(long = "root", value_name = "KIND=PATH")]
    pub roots: Vec<String>,
}

impl RootArgs {
    /// The roots to look at: these arguments when given, else the config's, else the platform's.
    ///
    /// # Errors
    /// A malformed or missing root; no root at all.
    pub fn resolve(&self, ctx: &Context) -> anyhow::Result<Vec<Root>> {
        Ok(ctx.roots(Session::parse_root_args(&self.roots)?)?)
    }
}
