//! Launch options of the app (clap): which roots, where the data and the config live, and two
//! switches for testing. Command-line arguments win over the environment, which wins over the
//! config file; the engine API ([`cachewatch::api::Session`]) resolves them as it does for the CLI.
//!
//! - `--root KIND=PATH` (repeatable) or `CACHEWATCH_ROOTS="temp=/x,cache=/y"`: the roots to watch
//!   instead of the config's or the platform's defaults.
//! - `--data-dir` / `CACHEWATCH_DATA_DIR`: where the history DB lives.
//! - `--config` / `CACHEWATCH_CONFIG`: the config file (TOML, see `cachewatch::config`); the
//!   settings panel writes there.
//! - `--show`: show the window at start (Linux indicators report no clicks on the icon; the
//!   end-to-end test uses it too). `--no-hide-on-blur`: keep the window when it loses focus.
//! - `--window-grace-secs` / `CACHEWATCH_WINDOW_GRACE_SECS`: how long a closed window (and its web
//!   engine) is kept for a quick reopen before it is destroyed (30 s; tests use less).

use std::path::PathBuf;

use clap::Parser;

/// The app's launch options.
#[derive(Debug, Clone, Default, PartialEq, Eq, Parser)]
#[command(name = "cachewatch-app", version, about = "CacheWatch menu-bar app")]
pub struct LaunchOptions {
    /// A root to watch instead of the config's and the platform's (repeatable), e.g.
    /// `--root temp=/tmp`.
    #[arg(
        long = "root",
        value_name = "KIND=PATH",
        env = "CACHEWATCH_ROOTS",
        value_delimiter = ','
    )]
    pub roots: Vec<String>,
    /// The config file [default: the platform config dir's cachewatch/config.toml].
    #[arg(long, env = "CACHEWATCH_CONFIG", value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// The data dir holding the history database [default: the platform data dir].
    #[arg(long, env = "CACHEWATCH_DATA_DIR", value_name = "PATH")]
    pub data_dir: Option<PathBuf>,
    /// Show the window at start.
    #[arg(long)]
    pub show: bool,
    /// Keep the window when it loses focus (it hides by default).
    #[arg(long)]
    pub no_hide_on_blur: bool,
    /// How long a closed window is kept before its webview is destroyed, seconds [default: 30].
    #[arg(long, env = "CACHEWATCH_WINDOW_GRACE_SECS", value_name = "SECS")]
    pub window_grace_secs: Option<u64>,
}

impl LaunchOptions {
    /// Reads the options from `args` (with the program name first). The `-psn_…` argument macOS
    /// adds when the app is opened from the Finder is dropped.
    ///
    /// # Errors
    /// A clap error naming the bad argument (its `exit()` prints it with the usage).
    pub fn from_args<I>(args: I) -> Result<LaunchOptions, clap::Error>
    where
        I: IntoIterator<Item = String>,
    {
        LaunchOptions::try_parse_from(args.into_iter().filter(|a| !a.starts_with("-psn_")))
    }

    /// Whether the window hides when it loses focus.
    pub fn hide_on_blur(&self) -> bool {
        !self.no_hide_on_blur
    }

    /// How long a closed window is kept before it is destroyed.
    pub fn window_grace(&self) -> std::time::Duration {
        self.window_grace_secs
            .map_or(crate::window::DEFAULT_GRACE, std::time::Duration::from_secs)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<LaunchOptions, clap::Error> {
        LaunchOptions::from_args(
            std::iter::once("cachewatch-app")
                .chain(args.iter().copied())
                .map(String::from),
        )
    }

    #[test]
    fn roots_switches_and_the_finder_argument() {
        let o = parse(&[
            "--root",
            "cache=/a",
            "--root=temp=/b",
            "-psn_0_12345",
            "--show",
        ])
        .unwrap();
        assert_eq!(o.roots, vec!["cache=/a".to_owned(), "temp=/b".to_owned()]);
        assert!(o.show);
        assert!(o.hide_on_blur());
        assert_eq!(o.window_grace(), crate::window::DEFAULT_GRACE);
        let o = parse(&["--no-hide-on-blur", "--window-grace-secs", "2"]).unwrap();
        assert!(!o.hide_on_blur());
        assert_eq!(o.window_grace(), std::time::Duration::from_secs(2));
    }

    #[test]
    fn bad_arguments_are_named() {
        let e = parse(&["--frobnicate"]).unwrap_err();
        assert!(e.to_string().contains("--frobnicate"), "{e}");
        let e = parse(&["--root"]).unwrap_err();
        assert!(e.to_string().contains("--root"), "{e}");
    }
}
