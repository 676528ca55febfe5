//! `cachewatch rules suggest|add`: from a group of unattributed entries (an unknown producer) to a
//! `[[producer]]` rule in the config file.

use std::io::Write;

use anyhow::{bail, Context as _};
use cachewatch::api::catalogue::{ReclaimMode, Rule};
use cachewatch::api::groups::{self, escape_controls, GroupSource};
use cachewatch::api::history::StoredWriter;
use cachewatch::api::rules::Evidence;
use cachewatch::api::scan::{scan_root_each_found, ScanProgress, Tally, UnattributedGroup};
use cachewatch::api::shapes;
use serde::Serialize;

use super::format::bytes;
use super::{Context, Outcome, RootArgs};

/// Options of `cachewatch rules`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to do.
    #[command(subcommand)]
    pub cmd: Cmd,
}

/// The `rules` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Cmd {
    /// Print a [[producer]] rule for each group of unattributed entries (UNKNOWN PRODUCERS).
    Suggest(SuggestArgs),
    /// Write the rule for the group of shape SHAPE into the config file.
    Add(AddArgs),
    /// Hide the groups of shape SHAPE (kept in the config's [groups] ignore; reversible).
    Ignore(ShapeArgs),
    /// Show the groups of shape SHAPE again (removed from [groups] ignore).
    Unignore(ShapeArgs),
}

/// Options of `cachewatch rules ignore|unignore`.
#[derive(Debug, clap::Args)]
pub struct ShapeArgs {
    /// The group's label as `rules suggest` prints it, e.g. 'tmp<rand8>/' (a backslash as \\, a
    /// literal < as \<, a byte that is not UTF-8 or a control character as \xNN); the shape as
    /// `scan` prints it is taken for the label of the groups it stands for
    pub shape: String,
    /// Roots to scan (to find the label a shape stands for).
    #[command(flatten)]
    pub roots: RootArgs,
}

/// Options of `cachewatch rules suggest`.
#[derive(Debug, clap::Args)]
pub struct SuggestArgs {
    /// Roots to scan.
    #[command(flatten)]
    pub roots: RootArgs,
    /// Print JSON instead of TOML
    #[arg(long)]
    pub json: bool,
}

/// How a rule made from a group may reclaim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReclaimArg {
    /// Only when the producer is named (`reclaim --producer ID`).
    Manual,
    /// Also in a default reclaim.
    Auto,
}

/// Options of `cachewatch rules add`.
#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// The group's shape as `scan` prints it, e.g. 'tmp<rand8>/'
    pub shape: String,
    /// The new rule's id (lowercase words and dashes)
    #[arg(long)]
    pub id: String,
    /// The new rule's human name [default: from the shape and the writer]
    #[arg(long)]
    pub name: Option<String>,
    /// Whether a default reclaim includes it
    #[arg(long, value_enum, default_value_t = ReclaimArg::Manual)]
    pub reclaim: ReclaimArg,
    /// Roots to scan.
    #[command(flatten)]
    pub roots: RootArgs,
}

/// Runs `cachewatch rules ...`.
///
/// # Errors
/// Bad roots or config; for `add`: no such group, a taken id, a rule that would claim other
/// entries or miss members, a config that cannot be written.
pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<Outcome> {
    match &args.cmd {
        Cmd::Suggest(a) => suggest(ctx, a),
        Cmd::Add(a) => add(ctx, a),
        Cmd::Ignore(a) => ignore(ctx, a, true),
        Cmd::Unignore(a) => ignore(ctx, a, false),
    }
}

/// A group with the processes seen writing into it, and the evidence naming its writer from one
/// sample of the process table (strongest first; no "created at launch": one sample cannot tell
/// a launch from a busy program).
struct Found {
    group: UnattributedGroup,
    writer: Option<String>,
    evidence: Vec<Evidence>,
    /// The other roots scanned of the group's kind, where its rule would claim too.
    others: Vec<std::path::PathBuf>,
}

/// The groups of unattributed entries of `roots` (all of them: `[groups] ignore` hides groups
/// from the monitor, not from here) and the roots scanned.
fn scan_unattributed(
    ctx: &Context,
    roots: &RootArgs,
) -> anyhow::Result<(Vec<UnattributedGroup>, Vec<cachewatch::api::roots::Root>)> {
    let roots = roots.resolve(ctx)?;
    let catalogue = ctx.catalogue()?;
    let progress = ScanProgress::new();
    let mut tally = Tally::new(0);
    for root in &roots {
        scan_root_each_found(root, &catalogue, &progress, |f| tally.add_found(root, &f));
    }
    Ok((tally.unattributed_groups(), roots))
}

fn scan_groups(ctx: &Context, roots: &RootArgs) -> anyhow::Result<Vec<Found>> {
    let (groups, roots) = scan_unattributed(ctx, roots)?;
    let stored = if groups.is_empty() {
        Vec::new()
    } else {
        stored_writers(ctx)
    };
    let writers = cachewatch::api::rules::writers_remembered(&groups, &stored);
    Ok(groups
        .into_iter()
        .zip(writers)
        .map(|(g, w)| Found {
            others: roots
                .iter()
                .filter(|r| r.kind == g.root_kind && r.canonical != g.root)
                .map(|r| r.canonical.clone())
                .collect(),
            group: g,
            writer: w.held,
            evidence: w.evidence,
        })
        .collect())
}

/// The writers the history database remembers (the monitor saw them write the groups, maybe
/// before they exited): none when there is no database yet; one that cannot be read is said on
/// stderr and left out, the suggestion then rests on what runs now.
fn stored_writers(ctx: &Context) -> Vec<StoredWriter> {
    let path = match ctx.history_to_read() {
        Ok(Some(path)) => path,
        Ok(None) => return Vec::new(),
        Err(e) => {
            eprintln!("warning: {e}: writers the monitor saw before are left out");
            return Vec::new();
        }
    };
    cachewatch::api::rules::stored_writers(&path).unwrap_or_else(|e| {
        eprintln!(
            "warning: the history at {} cannot be read ({e}): writers the monitor saw before are left out",
            path.display()
        );
        Vec::new()
    })
}

impl Found {
    fn source(&self) -> GroupSource<'_> {
        GroupSource {
            root_kind: self.group.root_kind,
            root: &self.group.root,
            group: &self.group.group,
            writer: self.writer.as_deref(),
            evidence: &self.evidence,
            others: &self.others,
        }
    }
}

/// One suggestion of `rules suggest --json`.
#[derive(Debug, Serialize)]
struct SuggestionJson {
    shape: String,
    /// The group's label on one line: what names it to `rules add`, `report`, `rules ignore`
    /// without doubt (two groups of one root may share a `shape`).
    label: String,
    root_kind: String,
    root: String,
    items: u64,
    allocated_bytes: u64,
    /// The rule, as it would be written; null when no rule can be made for the group.
    rule: Option<Rule>,
    /// Why no rule can be made for the group (names that are not text), when so.
    #[serde(skip_serializing_if = "Option::is_none")]
    refused: Option<String>,
    /// Top-level entries of the root the rule would claim that are not members.
    wrongly_claimed: Vec<String>,
    /// Members the rule would not claim.
    missed: Vec<String>,
}

fn suggest(ctx: &Context, args: &SuggestArgs) -> anyhow::Result<Outcome> {
    let found = scan_groups(ctx, &args.roots)?;
    let catalogue = ctx.catalogue()?;
    let mut taken: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for f in &found {
        let id = groups::free_id(&catalogue, &f.group.group, &taken);
        taken.push(id.clone());
        let src = f.source();
        let p = groups::preview(
            &ctx.config.path,
            &ctx.config.text,
            &src,
            &src.options(id, None, ReclaimMode::Manual),
        )?;
        out.push((f, p));
    }
    let mut stdout = std::io::stdout().lock();
    if args.json {
        let doc: Vec<SuggestionJson> = out
            .into_iter()
            .map(|(f, p)| SuggestionJson {
                shape: f.group.group.shown(),
                label: groups::one_line_label(&f.group.group),
                root_kind: f.group.root_kind.to_string(),
                root: f.group.root.display().to_string(),
                items: f.group.group.items,
                allocated_bytes: f.group.group.measure.allocated_bytes,
                rule: p.rule.as_ref().and_then(|r| rule_of(f, &r.id)),
                refused: p.refused,
                wrongly_claimed: p.wrongly_claimed,
                missed: p.missed,
            })
            .collect();
        serde_json::to_writer_pretty(&mut stdout, &doc).context("writing JSON to stdout")?;
        writeln!(stdout).context("writing to stdout")?;
        return Ok(Outcome::Success);
    }
    if out.is_empty() {
        writeln!(
            stdout,
            "No group of unattributed entries (at least {} with one name shape, or {}).",
            shapes::GROUP_MIN_ITEMS,
            bytes(shapes::GROUP_MIN_BYTES)
        )?;
        return Ok(Outcome::Success);
    }
    for (f, p) in out {
        // Every comment line is one line: a name may hold a newline, which would end the comment
        // and leave the rest of it as TOML.
        let about = escape_controls(&format!(
            "{} in {} ({} items, {})",
            f.group.group.shown(),
            f.group.root.display(),
            f.group.group.items,
            bytes(f.group.group.measure.allocated_bytes),
        ));
        let rule = match (&p.rule, &p.refused) {
            (Some(rule), _) => rule,
            (None, e) => {
                let e = e.as_deref().unwrap_or("no rule");
                writeln!(stdout, "# {about}: {}\n", escape_controls(e))?;
                continue;
            }
        };
        // Options first and `--` before the shape: a shape may start with `-`. The shape is
        // shell-quoted: it may hold a quote.
        writeln!(
            stdout,
            "# {about}: cachewatch rules add --id {} -- {}",
            rule.id,
            groups::shell_quote(&groups::one_line_label(&f.group.group)),
        )?;
        if !p.is_exact() {
            writeln!(
                stdout,
                "# warning: would also claim {:?}, miss {:?}",
                p.wrongly_claimed, p.missed
            )?;
        }
        writeln!(stdout, "{}", rule.toml.trim_end())?;
        writeln!(stdout)?;
    }
    Ok(Outcome::Success)
}

/// The rule `id` of the group `f` as `suggest --json` prints it.
fn rule_of(f: &Found, id: &str) -> Option<Rule> {
    let src = f.source();
    src.rule(&src.options(id.to_owned(), None, ReclaimMode::Manual))
        .ok()
}

fn add(ctx: &Context, args: &AddArgs) -> anyhow::Result<Outcome> {
    let path = ctx
        .config_path
        .clone()
        .context("no config file to write the rule into; pass --config PATH")?;
    if !cachewatch::api::catalogue::is_slug(&args.id) {
        bail!(
            "--id {:?} is not a producer id: use lowercase letters a-z, digits and single dashes between words, e.g. \"my-app-temp\"",
            args.id
        );
    }
    if ctx.catalogue()?.rule(&args.id).is_some() {
        bail!(
            "a producer with id {:?} exists already; choose another --id",
            args.id
        );
    }
    let found = scan_groups(ctx, &args.roots)?;
    let f = match groups::pick_group(&found, |f| &f.group, &args.shape)? {
        Some(f) => f,
        None => {
            let shapes: Vec<String> = found
                .iter()
                .map(|f| groups::one_line_label(&f.group.group))
                .collect();
            bail!(
                "no group of shape {:?} in the roots scanned (groups: {}); `cachewatch scan` lists them",
                args.shape,
                if shapes.is_empty() { "none".to_owned() } else { shapes.join(", ") }
            )
        }
    };
    let others: Vec<String> = found
        .iter()
        .filter(|o| {
            o.group.root == f.group.root
                && o.group.group.label() != f.group.group.label()
                && (o.group.group.shown() == args.shape || o.group.group.key_shown() == args.shape)
        })
        .map(|o| groups::shell_quote(&groups::one_line_label(&o.group.group)))
        .collect();
    if !others.is_empty() {
        eprintln!(
            "note: {:?} is the label of the group taken; other groups of {} print the same: {} (pass a label to name one)",
            args.shape,
            f.group.root.display(),
            others.join(", ")
        );
    }
    let reclaim = match args.reclaim {
        ReclaimArg::Manual => ReclaimMode::Manual,
        ReclaimArg::Auto => ReclaimMode::Auto,
    };
    let src = f.source();
    let opts = src.options(args.id.clone(), args.name.clone(), reclaim);
    let rule = src.rule(&opts).map_err(|e| {
        anyhow::anyhow!(
            "{e} (the group is in {}); nothing written",
            f.group.root.display()
        )
    })?;
    // Checked and written under the config's lock, on the file as it is then: a rule another
    // `rules add` wrote meanwhile is kept, and the check sees it.
    let (check, _) = groups::add_rule(&path, &src, &rule)?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "Added producer {:?} ({} items, {}) to {}.\n`cachewatch reclaim --producer {} --dry-run` shows what it would reclaim.",
        rule.id,
        check.claimed,
        bytes(f.group.group.measure.allocated_bytes),
        path.display(),
        rule.id
    )?;
    Ok(Outcome::Success)
}

/// `rules ignore|unignore SHAPE`: `[groups] ignore` in the config file.
fn ignore(ctx: &Context, args: &ShapeArgs, ignored: bool) -> anyhow::Result<Outcome> {
    let path = ctx
        .config_path
        .clone()
        .context("no config file to keep the ignored shapes in; pass --config PATH")?;
    let label = if ignored {
        label_to_ignore(ctx, args)?
    } else {
        label_to_unignore(ctx, &args.shape)
    };
    let list = groups::set_shape_ignored(&path, &label, ignored)?;
    let mut out = std::io::stdout().lock();
    // Labels as they are passed: one line, shell-quoted (a label's backslashes as they are).
    let quoted = |l: &str| groups::shell_quote(&escape_controls(l));
    writeln!(
        out,
        "{} {} in {}; ignored shapes: {}",
        if ignored { "Ignored" } else { "Showing again" },
        quoted(&label),
        path.display(),
        if list.is_empty() {
            "none".to_owned()
        } else {
            list.iter()
                .map(|l| quoted(l))
                .collect::<Vec<_>>()
                .join(", ")
        }
    )?;
    Ok(Outcome::Success)
}

/// The label `rules ignore SHAPE` keeps: SHAPE when it is a group's label (or its one-line form:
/// the label itself is kept); else the label of the groups SHAPE is the printed shape of (the
/// list matches labels: the printed shape of a group whose name holds a backslash would hide
/// nothing); SHAPE as given when it names no group scanned (it hides such groups when they come).
///
/// # Errors
/// SHAPE is the printed shape of groups of different labels; the roots cannot be scanned.
fn label_to_ignore(ctx: &Context, args: &ShapeArgs) -> anyhow::Result<String> {
    let shape = args.shape.as_str();
    let (found, _) = scan_unattributed(ctx, &args.roots)?;
    if let Some(g) = found
        .iter()
        .find(|g| g.group.label() == shape || groups::one_line_label(&g.group) == shape)
    {
        return Ok(g.group.label());
    }
    let mut labels: Vec<String> = found
        .iter()
        .filter(|g| g.group.shown() == shape || g.group.key_shown() == shape)
        .map(|g| g.group.label())
        .collect();
    labels.sort();
    labels.dedup();
    match labels.as_slice() {
        [] => {
            eprintln!(
                "note: no group of the roots scanned has the label {:?}; kept as given, it hides the groups of that label when they appear",
                escape_controls(shape)
            );
            Ok(shape.to_owned())
        }
        [one] => {
            if one != shape {
                eprintln!(
                    "note: {:?} is a group's shape as printed; its label {} is what [groups] ignore keeps",
                    escape_controls(shape),
                    groups::shell_quote(&escape_controls(one))
                );
            }
            Ok(one.clone())
        }
        many => bail!(
            "{:?} is the printed shape of {} groups of different names: pass the label of the one to hide: {}; nothing written",
            escape_controls(shape),
            many.len(),
            many.iter()
                .map(|l| groups::shell_quote(&escape_controls(l)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The label `rules unignore SHAPE` removes: the listed label whose one-line form SHAPE is, else
/// SHAPE.
fn label_to_unignore(ctx: &Context, shape: &str) -> String {
    ctx.config
        .config
        .groups
        .ignore
        .iter()
        .find(|l| escape_controls(l) == shape)
        .cloned()
        .unwrap_or_else(|| shape.to_owned())
}
