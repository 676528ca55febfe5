//! Sparkle's staged updates (`sparkle-installation`): an extracted update under
//! `<bundle-id>/org.sparkle-project.Sparkle/Installation/<random>/` is stale once the installed app
//! is at least as new as the staged build; a staged build that is newer, or whose version (or the
//! installed app's) cannot be read, is an update that may still be installed and is kept.
//!
//! Versions are read from the `Info.plist` (XML or binary) of each bundle: `CFBundleVersion` (the
//! build, what Sparkle compares) when both bundles have it, else `CFBundleShortVersionString`.
//! The installed app is the one of the same bundle id in the application dirs
//! ([`ProcessProbe::application_dirs`]): first the bundle of the staged app's name, then any
//! `*.app` there whose identifier matches.

use std::cmp::Ordering;
use std::path::{Path, PathBuf};

use super::KeepReason;
use crate::catalogue::compare_versions;
use crate::process::ProcessProbe;

/// The rule whose items are staged Sparkle updates.
pub const SPARKLE_INSTALLATION: &str = "sparkle-installation";

/// The most of an `Info.plist` that is read; real ones are a few KiB.
const MAX_PLIST_BYTES: u64 = 1 << 20;
/// The most entries of an application dir looked at for a bundle id.
const MAX_APPS_LISTED: usize = 4096;

/// A bundle's identity and versions, from its `Contents/Info.plist`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BundleInfo {
    /// `CFBundleIdentifier`.
    pub id: Option<String>,
    /// `CFBundleShortVersionString` (`5.2`).
    pub short_version: Option<String>,
    /// `CFBundleVersion` (`520`).
    pub build: Option<String>,
}

impl BundleInfo {
    /// How a version reads in a keep reason: `5.2 (520)`, `5.2`, `(520)`.
    fn label(&self) -> Option<String> {
        match (&self.short_version, &self.build) {
            (Some(s), Some(b)) if s != b => Some(format!("{s} ({b})")),
            (Some(s), _) => Some(s.clone()),
            (None, Some(b)) => Some(format!("({b})")),
            (None, None) => None,
        }
    }
}

/// The identity and versions of the bundle at `bundle` (`X.app`), or `None` when its
/// `Contents/Info.plist` is not a regular file (a symlink is not followed), is too large or is
/// not a plist dictionary.
pub fn bundle_info(bundle: &Path) -> Option<BundleInfo> {
    let plist_path = bundle.join("Contents/Info.plist");
    let meta = std::fs::symlink_metadata(&plist_path).ok()?;
    if !meta.is_file() || meta.len() > MAX_PLIST_BYTES {
        return None;
    }
    let value = plist::Value::from_file(&plist_path).ok()?;
    let dict = value.as_dictionary()?;
    let text = |k: &str| {
        dict.get(k)
            .and_then(plist::Value::as_string)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    Some(BundleInfo {
        id: text("CFBundleIdentifier"),
        short_version: text("CFBundleShortVersionString"),
        build: text("CFBundleVersion"),
    })
}

/// The `*.app` bundles directly in `dir` (real dirs, not symlinks), sorted by name.
fn apps_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = rd
        .flatten()
        .take(MAX_APPS_LISTED)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "app"))
        .collect();
    out.sort();
    out
}

/// The staged app of the staged update `item`: a `*.app` in it, or in one of its dirs (an
/// archive that extracted into a folder).
fn staged_app(item: &Path) -> Option<PathBuf> {
    if let Some(app) = apps_in(item).into_iter().next() {
        return Some(app);
    }
    let Ok(rd) = std::fs::read_dir(item) else {
        return None;
    };
    let mut dirs: Vec<PathBuf> = rd
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    dirs.sort();
    dirs.iter().find_map(|d| apps_in(d).into_iter().next())
}

/// The installed app of bundle id `id`, in `dirs`: `<dir>/<name>` first (the staged app's name),
/// then any app there of that id (compared case-insensitively, as macOS does).
fn installed_app(id: &str, name: &std::ffi::OsStr, dirs: &[PathBuf]) -> Option<BundleInfo> {
    let same = |info: &BundleInfo| {
        info.id
            .as_deref()
            .is_some_and(|i| i.eq_ignore_ascii_case(id))
    };
    for d in dirs {
        if let Some(info) = bundle_info(&d.join(name)).filter(|i| same(i)) {
            return Some(info);
        }
    }
    dirs.iter()
        .flat_map(|d| apps_in(d))
        .filter_map(|a| bundle_info(&a))
        .find(|i| same(i))
}

/// How two bundles' versions compare: by build when both have one, else by short version;
/// `None` when no version is on both.
fn compare(staged: &BundleInfo, installed: &BundleInfo) -> Option<Ordering> {
    match (&staged.build, &installed.build) {
        (Some(a), Some(b)) => Some(compare_versions(a, b)),
        _ => match (&staged.short_version, &installed.short_version) {
            (Some(a), Some(b)) => Some(compare_versions(a, b)),
            _ => None,
        },
    }
}

/// Why the staged update `item` of app `bundle` (the rule's `bundle` capture, its cache dir's
/// name) must stay, or `None` when it is stale (the installed app is at least as new).
pub fn keep_reason(item: &Path, bundle: &str, probe: &dyn ProcessProbe) -> Option<KeepReason> {
    let unknown = |staged: Option<String>, installed: Option<String>| {
        Some(KeepReason::StagedUpdate { staged, installed })
    };
    let Some(app) = staged_app(item) else {
        return unknown(None, None);
    };
    let Some(staged) = bundle_info(&app) else {
        return unknown(None, None);
    };
    let id = staged.id.clone().unwrap_or_else(|| bundle.to_owned());
    let Some(name) = app.file_name() else {
        return unknown(staged.label(), None);
    };
    let Some(installed) = installed_app(&id, name, &probe.application_dirs()) else {
        return unknown(staged.label(), None);
    };
    match compare(&staged, &installed) {
        Some(Ordering::Less | Ordering::Equal) => None,
        _ => unknown(staged.label(), installed.label()),
    }
}
