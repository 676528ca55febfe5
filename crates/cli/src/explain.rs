//! `cachewatch explain PATH`: which rule claims a path and why, or that none does.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context as _;
use cachewatch::api::catalogue::ProducerKind;
use cachewatch::api::explain::{newest_access, read_age_used, AgeClock};
use cachewatch::api::explain::{Explanation, Verdict};
use cachewatch::api::scan::Item;
use cachewatch::api::units::format_duration;

use super::scan::enum_word;
use super::{Context, Outcome, RootArgs};

/// Options of `cachewatch explain`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The path to explain (it need not exist; `..` is resolved)
    pub path: PathBuf,
    /// Roots to consider.
    #[command(flatten)]
    pub roots: RootArgs,
    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
}

/// The path the user means, `..` and `.` resolved: the deepest part of it that exists is resolved
/// through the file system (its parent canonicalized, its last component kept, so a symlink is
/// explained as the link), the rest lexically. So `item/../../outside` is never taken for a path
/// inside the item, and a path that does not exist yet can still be explained.
///
/// # Errors
/// An existing part cannot be resolved (a dir that cannot be read).
fn resolve(given: &std::path::Path) -> anyhow::Result<PathBuf> {
    use std::path::Component;
    let comps: Vec<Component<'_>> = given.components().collect();
    // The longest prefix that exists (the root always does).
    let mut k = comps.len();
    while k > 1 && std::fs::symlink_metadata(comps[..k].iter().collect::<PathBuf>()).is_err() {
        k -= 1;
    }
    let prefix: PathBuf = comps[..k].iter().collect();
    let mut out = match (prefix.parent(), comps[k - 1]) {
        (Some(parent), Component::Normal(name)) => std::fs::canonicalize(parent)
            .with_context(|| format!("resolving {}", parent.display()))?
            .join(name),
        _ => std::fs::canonicalize(&prefix)
            .with_context(|| format!("resolving {}", prefix.display()))?,
    };
    for c in &comps[k..] {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            _ => {}
        }
    }
    Ok(out)
}

/// Runs `cachewatch explain`.
///
/// # Errors
/// Bad roots, bad config, or a failed write to stdout.
pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<Outcome> {
    let roots = args.roots.resolve(ctx)?;
    let catalogue = ctx.catalogue()?;
    let given = if args.path.is_absolute() {
        args.path.clone()
    } else {
        std::env::current_dir()
            .context("reading the current dir")?
            .join(&args.path)
    };
    let path = resolve(&given)?;
    let mut e = catalogue.explain(&roots, &path);
    if matches!(e.verdict, Verdict::OutsideRoots) {
        // Given through a symlink the roots do not know about: try the resolved path.
        if let Ok(canonical) = std::fs::canonicalize(&path) {
            if canonical != path {
                let again = catalogue.explain(&roots, &canonical);
                if !matches!(again.verdict, Verdict::OutsideRoots) {
                    e = again;
                }
            }
        }
    }
    // The item as a scan measures it now (for its age and the clock that decides it).
    let measured = match (&e.verdict, &e.root) {
        (Verdict::Claimed { item, .. }, Some(root)) => {
            cachewatch::api::scan::measure_item(root, &catalogue, item)
                .ok()
                .flatten()
        }
        _ => None,
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &e).context("writing JSON to stdout")?;
        writeln!(out).context("writing to stdout")?;
    } else {
        write_human(&e, measured.as_ref(), &mut out).context("writing to stdout")?;
    }
    Ok(Outcome::Success)
}

/// When each of an item's clocks says it was made or last used, and which one its age counts
/// from: its newest change, the time in its name and, for a cache, its last use (the newest
/// access time of a file in it, where the volume records one).
fn write_age(item: &Item, kind: ProducerKind, out: &mut dyn Write) -> std::io::Result<()> {
    let now = std::time::SystemTime::now();
    let newest = item.measure.newest_mtime;
    let named = item.captures.ts;
    let used = (kind == ProducerKind::Cache)
        .then(|| newest_access(&item.path))
        .flatten();
    let reading = read_age_used(newest, used, named, now);
    let when = |t: std::time::SystemTime| humantime::format_rfc3339_seconds(t).to_string();
    let mut clocks = Vec::new();
    if let Some(m) = newest {
        clocks.push((
            AgeClock::NewestChange,
            format!("its newest change, {}", when(m)),
        ));
    }
    if let Some(t) = named {
        clocks.push((
            AgeClock::NameTime,
            format!("the time in its name, {}", when(t)),
        ));
    }
    if let Some(u) = used {
        clocks.push((
            AgeClock::LastUse,
            format!("its last use (newest file access), {}", when(u)),
        ));
    }
    let decided = clocks.iter().find(|(c, _)| *c == reading.clock);
    let others: Vec<&str> = clocks
        .iter()
        .filter(|(c, _)| *c != reading.clock)
        .map(|(_, text)| text.as_str())
        .collect();
    let why = match decided {
        None => "unknown: it counts as brand new".to_owned(),
        Some((_, text)) if others.is_empty() => format!("from {text}"),
        Some((_, text)) => format!("from {text}, later than {}", others.join(" and ")),
    };
    let rule = match kind {
        ProducerKind::Cache => {
            "a cache: age counts from the latest of its changes, the time in \
                                its name and its last use"
        }
        _ => "age counts from the later of the two",
    };
    writeln!(
        out,
        "  age {} ({why}; {rule})",
        format_duration(reading.age_secs)
    )?;
    writeln!(out, "  age clock: {}", enum_word(&reading.clock))
}

fn write_human(
    e: &Explanation,
    measured: Option<&Item>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let path = super::format::path(&e.path);
    let root = e
        .root
        .as_ref()
        .map(|r| format!("{} root {}", r.kind, super::format::path(&r.path)))
        .unwrap_or_default();
    match &e.verdict {
        Verdict::OutsideRoots => writeln!(
            out,
            "{path}: outside every root, so no rule applies (roots: --root KIND=PATH or the config)"
        ),
        Verdict::RootItself => writeln!(out, "{path}: is the {root} itself, never an item"),
        Verdict::Claimed {
            producer,
            name,
            kind,
            reclaim,
            min_age_secs,
            item,
            is_item,
            captures,
            owner_check,
            managed_by,
            versioned,
            ..
        } => {
            if *is_item {
                writeln!(out, "{path}: an item of producer {producer} ({name})")?;
            } else {
                writeln!(
                    out,
                    "{path}: inside item {} of producer {producer} ({name})",
                    super::format::path(item)
                )?;
            }
            writeln!(out, "  in the {root}")?;
            writeln!(
                out,
                "  kind {}, reclaim {}, age floor {}",
                enum_word(kind),
                enum_word(reclaim),
                format_duration(*min_age_secs)
            )?;
            if let Some(cmd) = managed_by {
                writeln!(
                    out,
                    "  managed by its tool: run `{cmd}` first; cachewatch deletes its entries only \
                     when you name the producer"
                )?;
            }
            if *versioned {
                writeln!(
                    out,
                    "  version-keyed: reclaim keeps the newest version and any version in use"
                )?;
            }
            if let Some(pid) = captures.pid {
                writeln!(out, "  owner pid in its name: {pid}")?;
            }
            writeln!(out, "  owner check: {owner_check}")?;
            if let Some(b) = &captures.bundle {
                writeln!(out, "  bundle in its path: {b}")?;
            }
            match measured {
                Some(item) => write_age(item, *kind, out)?,
                None => {
                    if let Some(ts) = captures.ts {
                        writeln!(
                            out,
                            "  created (from its name): {}",
                            humantime::format_rfc3339_seconds(ts)
                        )?;
                    }
                }
            }
            Ok(())
        }
        Verdict::Structure {
            producer,
            name,
            dir,
            is_dir,
        } => {
            if *is_dir {
                writeln!(
                    out,
                    "{path}: a dir the items of producer {producer} ({name}) live in"
                )?;
            } else {
                writeln!(
                    out,
                    "{path}: inside {}, a dir the items of producer {producer} ({name}) live in",
                    super::format::path(dir)
                )?;
            }
            writeln!(out, "  in the {root}")?;
            writeln!(
                out,
                "  attributed to {producer} but never reclaimed: its items inside go, the dir stays"
            )
        }
        Verdict::Unattributed {
            top_level,
            near_misses,
        } => {
            writeln!(
                out,
                "{path}: no rule claims it; it counts under the unattributed entry {}",
                super::format::path(top_level)
            )?;
            writeln!(out, "  in the {root}")?;
            for m in near_misses {
                writeln!(
                    out,
                    "  nearly {}: {} ({})",
                    m.producer,
                    super::format::path(&m.relative),
                    m.reason
                )?;
            }
            Ok(())
        }
    }
}
