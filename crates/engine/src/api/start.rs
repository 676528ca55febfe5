//! Starting a monitor that runs despite what is wrong: a front end started at login has nobody to
//! read a stderr line, so every problem found before the monitor starts becomes a notice in the
//! snapshot's `errors`, and the monitor starts with what can run.

use std::path::PathBuf;
use std::sync::Arc;

use crate::catalogue::Catalogue;
use crate::monitor::MonitorOptions;

use super::{Locations, Session};

/// What [`lenient_monitor_options`] made of the launch: the monitor's options (the problems in
/// [`MonitorOptions::notices`]) and where settings are written.
#[derive(Debug)]
pub struct Start {
    /// The monitor's options; `notices` lists what was left out and why.
    pub options: MonitorOptions,
    /// The config file settings are written to (the one named, even if it could not be loaded).
    pub config_path: Option<PathBuf>,
}

/// The monitor's options for `loc` and the `--root KIND=PATH` arguments `root_args`, never
/// failing: a config that cannot be read or is invalid gives the defaults, a root argument that
/// is malformed or names a missing dir is left out (the other roots are watched), missing
/// configured roots leave none, a data dir that cannot be created leaves the monitor without
/// history until it can be made (the monitor retries the database with backoff and says so in its
/// snapshot), an invalid user producer rule gives the built-in catalogue. Each other problem is a
/// notice line that says what to fix.
pub fn lenient_monitor_options(loc: &Locations, root_args: &[String]) -> Start {
    let mut notices = Vec::new();
    let session = match Session::load(loc) {
        Ok(s) => s,
        Err(e) => {
            notices.push(format!(
                "{e}; running with the default settings until it is fixed"
            ));
            let path = loc
                .config
                .clone()
                .or_else(|| crate::config::default_config_path().ok());
            Session::with_defaults(loc, path)
        }
    };
    let mut given = Vec::new();
    for arg in root_args {
        match Session::parse_root_args(std::slice::from_ref(arg)) {
            Ok(r) => given.extend(r),
            Err(e) => notices.push(format!("{e}; that root is not watched")),
        }
    }
    let roots = if root_args.is_empty() || !given.is_empty() {
        match session.roots(given) {
            Ok(r) => r,
            Err(e) => {
                notices.push(format!("{e}; no root is watched"));
                Vec::new()
            }
        }
    } else {
        Vec::new()
    };
    // A data dir that cannot be made now (a full disk) is not given up: the monitor tries to open
    // the history database again with backoff, and its snapshot says so meanwhile.
    if let Err(e) = session.ensure_data_dir() {
        tracing::warn!("{e}; history waits until the database can be opened");
    }
    let mut options = match session.monitor_options(roots.clone()) {
        Ok(o) => o,
        Err(e) => {
            notices.push(format!("{e}; using the built-in producer rules only"));
            let mut o = MonitorOptions::new(roots, Arc::new(Catalogue::builtin()));
            o.db_path = session.db_path().ok();
            o.protected = session.protected_paths();
            o
        }
    };
    for n in &notices {
        tracing::error!("{n}");
    }
    options.notices = notices;
    Start {
        options,
        config_path: session.config_path,
    }
}
