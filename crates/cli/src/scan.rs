//! `cachewatch scan`: totals per root and per producer, and the largest unattributed entries.

use std::io::Write;
use std::path::Path;
use std::time::SystemTime;

use cachewatch::api::units::unix_secs;

use anyhow::Context as _;
use cachewatch::api::catalogue::Catalogue;
use cachewatch::api::process::ProcessProbe;
use cachewatch::api::process::{self as provenance, evidence_dto, group_evidence, ProcessHistory};
use cachewatch::api::roots::Root;
use cachewatch::api::scan::GroupMember;
use cachewatch::api::scan::{
    scan_root_each_found, with_scan_threads, RootSummary, ScanProgress, Tally,
};
use cachewatch::api::scan::{IssueKind, Measure, ScanIssue};
use cachewatch::api::shapes::{self, ShapeGroup, Writer};
use serde::Serialize;

use super::{Context, Outcome, RootArgs};

mod openmetrics;
mod text;

use text::print_human;

/// Options of `cachewatch scan`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Roots to scan.
    #[command(flatten)]
    pub roots: RootArgs,
    /// Print JSON (shape documented in docs/json.md) instead of tables
    #[arg(long)]
    pub json: bool,
    /// How many unattributed entries to list, largest first
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub top: usize,
    /// Walk with N threads (1 to 256) instead of 3 per CPU.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    pub threads: Option<u16>,
    /// `--openmetrics [--output FILE]`: node_exporter's textfile form.
    #[command(flatten)]
    pub textfile: openmetrics::TextfileArgs,
}

/// The JSON document of `cachewatch scan --json`.
#[derive(Debug, Serialize)]
pub struct ScanReport {
    /// One per root, in the order scanned.
    pub roots: Vec<RootJson>,
    /// One per producer with items, largest allocated first.
    pub producers: Vec<ProducerJson>,
    /// Unattributed top-level entries grouped by name shape (unknown producers), per root,
    /// largest allocated first. Their members are not listed in `unattributed`.
    pub unattributed_groups: Vec<UnattributedGroupJson>,
    /// The largest unattributed top-level entries that joined no group (at most `--top`).
    pub unattributed: Vec<UnattributedJson>,
    /// Every path that could not be read.
    pub errors: Vec<ErrorJson>,
}

/// A root's totals.
#[derive(Debug, Serialize)]
pub struct RootJson {
    /// `temp`, `cache`, `library-caches` or `diagnostic-reports`.
    pub kind: String,
    /// The path as given (lossy text when not UTF-8).
    pub path: String,
    /// Only when `path` is not UTF-8: its bytes in base64 ([`crate::path_bytes`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<String>,
    /// The path with symlinks resolved (lossy text when not UTF-8).
    pub canonical: String,
    /// Only when `canonical` is not UTF-8: its bytes in base64.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub canonical_bytes: Option<String>,
    /// Allocated bytes (as `du -B1 -s -x`).
    pub allocated_bytes: u64,
    /// Apparent bytes (as `du -b -s -x`).
    pub apparent_bytes: u64,
    /// Items: claimed items plus unattributed top-level entries.
    pub items: u64,
    /// Non-directory entries.
    pub files: u64,
    /// Directories, the root included.
    pub dirs: u64,
    /// Paths that could not be read.
    pub unreadable: u64,
    /// Entries that vanished during the scan.
    pub vanished: u64,
    /// For a `container-temp` root: the container's bundle id (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bundle: Option<String>,
}

/// A producer's totals over all roots.
#[derive(Debug, Serialize)]
pub struct ProducerJson {
    /// Rule id.
    pub id: String,
    /// Human name.
    pub name: String,
    /// `leak`, `cache`, `report` or `system`.
    pub kind: String,
    /// `auto`, `manual` or `never`.
    pub reclaim: String,
    /// Number of items.
    pub items: u64,
    /// Allocated bytes of its items.
    pub allocated_bytes: u64,
    /// Apparent bytes of its items.
    pub apparent_bytes: u64,
}

/// An unattributed top-level entry.
#[derive(Debug, Serialize)]
pub struct UnattributedJson {
    /// Absolute path (lossy text when not UTF-8).
    pub path: String,
    /// Only when `path` is not UTF-8: its bytes in base64 ([`crate::path_bytes`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<String>,
    /// The kind of its root.
    pub root_kind: String,
    /// Allocated bytes outside claimed items inside it.
    pub allocated_bytes: u64,
    /// Apparent bytes outside claimed items inside it.
    pub apparent_bytes: u64,
}

/// A group of unattributed top-level entries of one root sharing a name shape.
#[derive(Debug, Serialize)]
pub struct UnattributedGroupJson {
    /// The shape: placeholders for the random or counted runs, `/` at the end for dirs
    /// (`tmp<rand8>/`, `.<hex16>-<digits8>.dylib`); `<dir>/<shape>` for a group of the entries of
    /// a top-level dir (`out/run-<digits4>/`).
    pub shape: String,
    /// The kind of its root.
    pub root_kind: String,
    /// The root's canonical path (lossy text when not UTF-8).
    pub root: String,
    /// Number of members.
    pub items: u64,
    /// Allocated bytes of the members (outside claimed items inside them).
    pub allocated_bytes: u64,
    /// Apparent bytes of the members.
    pub apparent_bytes: u64,
    /// The oldest of the members' newest mtimes, unix seconds.
    pub oldest_mtime: Option<u64>,
    /// The newest mtime of any member, unix seconds.
    pub newest_mtime: Option<u64>,
    /// Up to three member names.
    pub examples: Vec<String>,
    /// Processes holding a file open inside a member now (at most three).
    pub writers: Vec<WriterJson>,
    /// What names the writer, strongest first, from one sample of the process table taken after
    /// the scan: the pid of a running process in the members' names (`pid-in-name`; members of
    /// exited processes count as orphans), a bundle id in their paths (`in-path`), the holders
    /// above (`held`). Empty with `--openmetrics` (no process table is read).
    pub evidence: Vec<cachewatch::dto::EvidenceDto>,
}

/// A process holding a file open inside a group's member.
#[derive(Debug, Serialize)]
pub struct WriterJson {
    /// Process id.
    pub pid: u32,
    /// Executable name.
    pub name: String,
}

/// A path that could not be read.
#[derive(Debug, Serialize)]
pub struct ErrorJson {
    /// The path (lossy text when not UTF-8).
    pub path: String,
    /// Only when `path` is not UTF-8: its bytes in base64 ([`crate::path_bytes`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<String>,
    /// `permission-denied` or `io`.
    pub kind: IssueKind,
    /// The OS error text.
    pub message: String,
}

/// Runs `cachewatch scan`: each root streamed through the scanner, producers and the largest
/// unattributed entries summed on the fly (no item list is held).
///
/// # Errors
/// Bad roots, bad config, or a failed write to stdout.
pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<Outcome> {
    let roots = args.roots.resolve(ctx)?;
    let catalogue = ctx.catalogue()?;
    let progress = ScanProgress::new();
    let mut tally = Tally::new(args.top);
    let mut scan = || -> Vec<RootSummary> {
        roots
            .iter()
            .map(|root| {
                scan_root_each_found(root, &catalogue, &progress, |f| tally.add_found(root, &f))
            })
            .collect()
    };
    let summaries = match args.threads {
        Some(n) => with_scan_threads(usize::from(n), scan),
        None => scan(),
    };
    // The writers asked about are under the roots: no open file elsewhere is read.
    let probe =
        cachewatch::api::process::SystemProbe::under(roots.iter().map(|r| r.canonical.clone()));
    // Writers only for people reading the report: a textfile cron run skips the process table.
    let probe = (!args.textfile.openmetrics).then_some(&probe as &dyn ProcessProbe);
    let report = streamed_report(&summaries, &tally, &catalogue, probe);
    if args.textfile.openmetrics {
        return openmetrics::emit(&args.textfile, &report);
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &report).context("writing JSON to stdout")?;
        writeln!(out).context("writing to stdout")?;
    } else {
        print_human(&report, &mut out).context("writing to stdout")?;
    }
    Ok(Outcome::from_problems(!report.errors.is_empty()))
}

/// Builds the JSON document from streamed scans and what was tallied while they ran; with a
/// process probe, each group gets the processes writing into it (one snapshot, taken only when
/// there is a group).
pub fn streamed_report(
    summaries: &[RootSummary],
    tally: &Tally,
    catalogue: &Catalogue,
    probe: Option<&dyn ProcessProbe>,
) -> ScanReport {
    let roots = summaries
        .iter()
        .map(|r| root_json(&r.root, &r.total, r.items, &r.issues, r.vanished))
        .collect();
    assemble(
        roots,
        tally,
        catalogue,
        summaries.iter().flat_map(|r| &r.issues),
        probe,
    )
}

/// Writers named per group, at most.
const WRITERS_PER_GROUP: usize = 3;

/// The top-level entries of `root` that belong to each of `groups`, at most
/// [`provenance::MEMBERS_LOOKED_AT`] each: one listing of the root and one `lstat` per member.
/// Birth time: the entry's own (`statx` on Linux where the file system keeps one, `st_birthtime`
/// on macOS), else its mtime (the monitor's inventory has the oldest mtime of the subtree
/// instead; a one-shot scan keeps no subtree times per member).
fn group_members(root: &Path, groups: &[&ShapeGroup]) -> Vec<Vec<GroupMember>> {
    let mut out: Vec<Vec<GroupMember>> = vec![Vec::new(); groups.len()];
    // The top level for groups of top-level entries, and each dir a group one level down lies in.
    let mut dirs: Vec<Option<&std::ffi::OsStr>> =
        groups.iter().map(|g| g.within.as_deref()).collect();
    dirs.sort();
    dirs.dedup();
    for within in dirs {
        let dir = within.map_or_else(|| root.to_path_buf(), |w| root.join(w));
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Ok(md) = entry.metadata() else {
                continue;
            };
            let Some(gi) = groups
                .iter()
                .position(|g| g.within.as_deref() == within && g.contains(&name, md.is_dir()))
            else {
                continue;
            };
            if out[gi].len() >= provenance::MEMBERS_LOOKED_AT {
                continue;
            }
            out[gi].push(GroupMember {
                path: entry.path(),
                name,
                born: md.created().or_else(|_| md.modified()).ok(),
            });
        }
    }
    out
}

fn groups_json(tally: &Tally, probe: Option<&dyn ProcessProbe>) -> Vec<UnattributedGroupJson> {
    let groups = tally.unattributed_groups();
    let mut writers: Vec<Vec<Writer>> = vec![Vec::new(); groups.len()];
    let mut evidence: Vec<Vec<cachewatch::dto::EvidenceDto>> = vec![Vec::new(); groups.len()];
    if let (Some(probe), false) = (probe, groups.is_empty()) {
        probe.refresh();
        let mut roots: Vec<&std::path::Path> = groups.iter().map(|g| g.root.as_path()).collect();
        roots.dedup();
        for root in roots {
            let at: Vec<usize> = (0..groups.len())
                .filter(|&i| groups[i].root == root)
                .collect();
            let these: Vec<&ShapeGroup> = at.iter().map(|&i| &groups[i].group).collect();
            for (i, w) in at
                .iter()
                .zip(shapes::writers(probe, root, &these, WRITERS_PER_GROUP))
            {
                writers[*i] = w;
            }
        }
        // One sample: only processes running now are known, so a launch cannot be told from a
        // busy program (no `created-at-launch`); a pid in the names of members whose process has
        // exited names nobody.
        let mut history = ProcessHistory::new(provenance::HISTORY_CAP);
        history.observe(SystemTime::now(), provenance::sample_processes());
        let mut roots: Vec<&std::path::Path> = groups.iter().map(|g| g.root.as_path()).collect();
        roots.dedup();
        for root in roots {
            let at: Vec<usize> = (0..groups.len())
                .filter(|&i| groups[i].root == root)
                .collect();
            let these: Vec<&ShapeGroup> = at.iter().map(|&i| &groups[i].group).collect();
            for (&i, members) in at.iter().zip(group_members(root, &these)) {
                evidence[i] =
                    group_evidence(&members, groups[i].group.items, &writers[i], &history)
                        .iter()
                        .filter(|e| e.kind != provenance::EvidenceKind::CreatedAtLaunch)
                        .map(evidence_dto)
                        .collect();
            }
        }
    }
    groups
        .iter()
        .zip(writers)
        .zip(evidence)
        .map(|((g, w), evidence)| UnattributedGroupJson {
            shape: g.group.shown(),
            root_kind: g.root_kind.to_string(),
            root: g.root.display().to_string(),
            items: g.group.items,
            allocated_bytes: g.group.measure.allocated_bytes,
            apparent_bytes: g.group.measure.apparent_bytes,
            oldest_mtime: g.group.oldest_mtime.map(unix_secs),
            newest_mtime: g.group.newest_mtime.map(unix_secs),
            examples: g
                .group
                .examples
                .iter()
                .map(|e| e.to_string_lossy().into_owned())
                .collect(),
            writers: w
                .into_iter()
                .map(|w| WriterJson {
                    pid: w.pid,
                    name: w.name,
                })
                .collect(),
            evidence,
        })
        .collect()
}

fn root_json(
    root: &Root,
    total: &Measure,
    items: u64,
    issues: &[ScanIssue],
    vanished: u64,
) -> RootJson {
    RootJson {
        kind: root.kind.to_string(),
        path: root.path.display().to_string(),
        path_bytes: crate::path_bytes::of(&root.path),
        canonical: root.canonical.display().to_string(),
        canonical_bytes: crate::path_bytes::of(&root.canonical),
        allocated_bytes: total.allocated_bytes,
        apparent_bytes: total.apparent_bytes,
        items,
        files: total.files,
        dirs: total.dirs,
        unreadable: issues.len() as u64,
        vanished,
        bundle: root.container_bundle(),
    }
}

fn assemble<'a>(
    roots: Vec<RootJson>,
    tally: &Tally,
    catalogue: &Catalogue,
    issues: impl Iterator<Item = &'a ScanIssue>,
    probe: Option<&dyn ProcessProbe>,
) -> ScanReport {
    let producers = tally
        .producers()
        .into_iter()
        .map(|p| {
            let rule = catalogue.rule(&p.id);
            ProducerJson {
                name: rule.map_or_else(|| p.id.clone(), |r| r.name.clone()),
                kind: rule.map_or_else(String::new, |r| enum_word(&r.kind)),
                reclaim: rule.map_or_else(String::new, |r| enum_word(&r.reclaim)),
                id: p.id,
                items: p.items,
                allocated_bytes: p.measure.allocated_bytes,
                apparent_bytes: p.measure.apparent_bytes,
            }
        })
        .collect();
    let unattributed = tally
        .unattributed()
        .into_iter()
        .map(|u| UnattributedJson {
            path: u.path.display().to_string(),
            path_bytes: crate::path_bytes::of(&u.path),
            root_kind: u.root_kind.to_string(),
            allocated_bytes: u.measure.allocated_bytes,
            apparent_bytes: u.measure.apparent_bytes,
        })
        .collect();
    let errors = issues
        .map(|i| ErrorJson {
            path: i.path.display().to_string(),
            path_bytes: crate::path_bytes::of(&i.path),
            kind: i.kind,
            message: i.message.clone(),
        })
        .collect();
    ScanReport {
        roots,
        producers,
        unattributed_groups: groups_json(tally, probe),
        unattributed,
        errors,
    }
}

/// The serde word of a unit enum (`leak`, `auto`, ...).
pub fn enum_word<T: Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}
