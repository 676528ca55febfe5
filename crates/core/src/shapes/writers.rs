//! Who writes a group: the processes holding a file open or mapped, or their working dir, inside
//! its members, from one process-table snapshot ([`crate::process::ProcessProbe`]: `/proc` on
//! Linux, `libproc` on macOS, through the platform facade).
//!
//! Cost: one range walk over the snapshot's open files under the root (at most
//! [`MAX_OPEN_FILES`] looked at), and one `lstat` per distinct top-level entry they lie in (per
//! entry of the dir, for a group one or two levels down); the members themselves are never listed.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Component, Path};
use std::time::SystemTime;

use super::ShapeGroup;
use crate::process::ProcessProbe;

/// Open files under one root looked at, at most.
pub const MAX_OPEN_FILES: usize = 10_000;

/// A process seen writing (holding open) a group's member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Writer {
    /// Process id.
    pub pid: u32,
    /// Executable name (as `ps -o comm` shows it); empty when the process ended meanwhile.
    pub name: String,
    /// When the process started, where known.
    pub start_time: Option<SystemTime>,
}

/// For each of `groups` (of the root `root`, canonical path), the processes holding a file open
/// inside one of its members, at most `per_group` each, lowest pid first.
pub fn writers(
    probe: &dyn ProcessProbe,
    root: &Path,
    groups: &[&ShapeGroup],
    per_group: usize,
) -> Vec<Vec<Writer>> {
    let mut out: Vec<Vec<Writer>> = vec![Vec::new(); groups.len()];
    if groups.is_empty() || per_group == 0 {
        return out;
    }
    // pid per top-level entry (per entry of a group's dir for a group one or two levels down:
    // the dir, relative to the root, and the member's name), lowest pids first.
    let mut by_entry: BTreeMap<(OsString, Option<OsString>), Vec<u32>> = BTreeMap::new();
    for f in probe.open_files_under(root, MAX_OPEN_FILES) {
        let Ok(rel) = f.path.strip_prefix(root) else {
            continue;
        };
        let Some(Component::Normal(name)) = rel.components().next() else {
            continue;
        };
        // The deepest group dir the file lies under, and its entry there.
        let below = groups
            .iter()
            .filter_map(|g| g.within.as_deref())
            .filter_map(|w| {
                let mut rest = rel.strip_prefix(w).ok()?.components();
                match rest.next() {
                    Some(Component::Normal(c)) => Some((w, c)),
                    _ => None,
                }
            })
            .max_by_key(|(w, _)| w.len());
        let key = match below {
            Some((w, c)) => (w.to_os_string(), Some(c.to_os_string())),
            None => (name.to_os_string(), None),
        };
        let pids = by_entry.entry(key).or_default();
        if !pids.contains(&f.pid) {
            pids.push(f.pid);
        }
    }
    for ((name, child), mut pids) in by_entry {
        let path = match &child {
            Some(c) => root.join(&name).join(c),
            None => root.join(&name),
        };
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            continue;
        };
        let dir = meta.is_dir();
        let Some(gi) = groups.iter().position(|g| match &child {
            Some(c) => g.within.as_ref() == Some(&name) && g.contains(c, dir),
            None => g.within.is_none() && g.contains(&name, dir),
        }) else {
            continue;
        };
        pids.sort_unstable();
        for pid in pids {
            let w = &mut out[gi];
            if w.len() >= per_group || w.iter().any(|x| x.pid == pid) {
                continue;
            }
            let info = probe.process(pid);
            w.push(Writer {
                pid,
                name: info.as_ref().map(|p| p.name.clone()).unwrap_or_default(),
                start_time: info.map(|p| p.start_time),
            });
        }
    }
    for w in &mut out {
        w.sort_by_key(|x| x.pid);
    }
    out
}
