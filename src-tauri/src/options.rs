//! Launch options of the app: which roots, where the data and the config live, and two switches
//! for testing. Command-line arguments win over the environment, which wins over the config file.
//!
//! - `--root KIND=PATH` (repeatable) or `CACHEWATCH_ROOTS="temp=/x,cache=/y"`: the roots to watch
//!   instead of the config's or the platform's defaults.
//! - `CACHEWATCH_DATA_DIR`: where the history DB and the app settings live.
//! - `CACHEWATCH_CONFIG`: the config file (TOML, see `cachewatch::config`).
//! - `--show`: show the window at start (Linux indicators report no clicks on the icon; the
//!   end-to-end test uses it too). `--no-hide-on-blur`: keep the window when it loses focus.

use std::path::PathBuf;

use cachewatch::roots::{Root, RootError};

/// Errors reading the launch options.
#[derive(Debug, thiserror::Error)]
pub enum OptionsError {
    /// A `--root` or `CACHEWATCH_ROOTS` entry is not a usable `KIND=PATH`.
    #[error("bad root {arg:?} (from {from}): {source}")]
    Root {
        /// The entry as given.
        arg: String,
        /// `--root` or `CACHEWATCH_ROOTS`.
        from: &'static str,
        /// Why it cannot be used.
        source: RootError,
    },
    /// `--root` without a value.
    #[error("--root needs a value: --root KIND=PATH, e.g. --root temp=/tmp")]
    RootMissingValue,
    /// An argument the app does not know.
    #[error("unknown argument {0:?}: expected --root KIND=PATH, --show or --no-hide-on-blur")]
    Unknown(String),
}

/// The app's launch options.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LaunchOptions {
    /// Roots given on the command line or in `CACHEWATCH_ROOTS`; empty = config or defaults.
    pub roots: Vec<Root>,
    /// `CACHEWATCH_DATA_DIR`, if set.
    pub data_dir: Option<PathBuf>,
    /// `CACHEWATCH_CONFIG`, if set.
    pub config: Option<PathBuf>,
    /// Show the window at start.
    pub show: bool,
    /// Hide the window when it loses focus (default on).
    pub hide_on_blur: bool,
}

impl LaunchOptions {
    /// Reads the options from `args` (without the program name) and an environment lookup.
    ///
    /// # Errors
    /// [`OptionsError`] naming the bad argument or entry.
    pub fn parse<I, F>(args: I, env: F) -> Result<LaunchOptions, OptionsError>
    where
        I: IntoIterator<Item = String>,
        F: Fn(&str) -> Option<String>,
    {
        let mut o = LaunchOptions {
            hide_on_blur: true,
            data_dir: env("CACHEWATCH_DATA_DIR")
                .filter(|s| !s.is_empty())
                .map(PathBuf::from),
            config: env("CACHEWATCH_CONFIG")
                .filter(|s| !s.is_empty())
                .map(PathBuf::from),
            ..LaunchOptions::default()
        };
        let mut args = args.into_iter();
        while let Some(a) = args.next() {
            let root_arg = match a.as_str() {
                "--show" => {
                    o.show = true;
                    continue;
                }
                "--no-hide-on-blur" => {
                    o.hide_on_blur = false;
                    continue;
                }
                "--root" => args.next().ok_or(OptionsError::RootMissingValue)?,
                _ => match a.strip_prefix("--root=") {
                    Some(v) => v.to_owned(),
                    // macOS adds -psn_... when launched from Finder; ignore it
                    None if a.starts_with("-psn_") => continue,
                    None => return Err(OptionsError::Unknown(a)),
                },
            };
            o.roots.push(parse_root(&root_arg, "--root")?);
        }
        if o.roots.is_empty() {
            if let Some(list) = env("CACHEWATCH_ROOTS") {
                for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
                    o.roots.push(parse_root(entry, "CACHEWATCH_ROOTS")?);
                }
            }
        }
        Ok(o)
    }
}

fn parse_root(arg: &str, from: &'static str) -> Result<Root, OptionsError> {
    Root::parse_arg(arg).map_err(|source| OptionsError::Root {
        arg: arg.to_owned(),
        from,
        source,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use cachewatch::RootKind;

    fn env_of(pairs: &[(&str, String)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        move |k| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn args_win_over_env_roots() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let args = vec![
            "--root".into(),
            format!("cache={}", a.path().display()),
            "--show".into(),
        ];
        let env = env_of(&[("CACHEWATCH_ROOTS", format!("temp={}", b.path().display()))]);
        let o = LaunchOptions::parse(args, env).unwrap();
        assert_eq!(o.roots.len(), 1);
        assert_eq!(o.roots[0].kind, RootKind::Cache);
        assert_eq!(o.roots[0].path, a.path());
        assert!(o.show);
        assert!(o.hide_on_blur);
    }

    #[test]
    fn env_roots_are_comma_separated() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let env = env_of(&[
            (
                "CACHEWATCH_ROOTS",
                format!("temp={}, cache={}", a.path().display(), b.path().display()),
            ),
            ("CACHEWATCH_DATA_DIR", "/data/x".into()),
        ]);
        let o = LaunchOptions::parse(vec!["--no-hide-on-blur".into()], env).unwrap();
        let kinds: Vec<RootKind> = o.roots.iter().map(|r| r.kind).collect();
        assert_eq!(kinds, vec![RootKind::Temp, RootKind::Cache]);
        assert_eq!(o.roots[1].path, b.path());
        assert_eq!(o.data_dir, Some(PathBuf::from("/data/x")));
        assert!(!o.hide_on_blur);
    }

    #[test]
    fn bad_arguments_are_named() {
        let none = |_: &str| None;
        let e = LaunchOptions::parse(vec!["--frobnicate".into()], none).unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown argument \"--frobnicate\": expected --root KIND=PATH, --show or --no-hide-on-blur"
        );
        let e = LaunchOptions::parse(vec!["--root".into()], none).unwrap_err();
        assert!(matches!(e, OptionsError::RootMissingValue));
        let e = LaunchOptions::parse(vec!["--root=tmp=/tmp".into()], none).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("bad root \"tmp=/tmp\" (from --root)"),
            "{e}"
        );
    }
}
