//! `cachewatch producers`: the catalogue, built-in rules plus the config's.

use std::io::Write;

use anyhow::Context as _;
use cachewatch::api::catalogue::Rule;
use serde::Serialize;

use super::format::{Align, Table};
use super::scan::enum_word;
use super::{Context, Outcome};

/// Options of `cachewatch producers`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print JSON instead of a table
    #[arg(long)]
    pub json: bool,
}

/// One rule in `cachewatch producers --json`.
#[derive(Debug, Serialize)]
pub struct ProducerRuleJson<'a> {
    /// Rule id.
    pub id: &'a str,
    /// Human name.
    pub name: &'a str,
    /// The root kind its globs are relative to.
    pub root: String,
    /// `leak`, `cache`, `report` or `system`.
    pub kind: String,
    /// `auto`, `manual` or `never`.
    pub reclaim: String,
    /// Item globs relative to the root.
    pub globs: &'a [String],
    /// Regex on the item's name, if any.
    pub name_regex: Option<&'a str>,
    /// Age floor, seconds.
    pub min_age_secs: u64,
    /// Process names that keep its items while running.
    pub processes: &'a [String],
    /// Upstream report URLs.
    pub evidence: &'a [String],
    /// Free text.
    pub notes: &'a str,
}

impl<'a> From<&'a Rule> for ProducerRuleJson<'a> {
    fn from(r: &'a Rule) -> Self {
        ProducerRuleJson {
            id: &r.id,
            name: &r.name,
            root: r.root.to_string(),
            kind: enum_word(&r.kind),
            reclaim: enum_word(&r.reclaim),
            globs: &r.item,
            name_regex: r.name_regex.as_deref(),
            min_age_secs: r.min_age_secs,
            processes: &r.owner.processes,
            evidence: &r.evidence,
            notes: &r.notes,
        }
    }
}

/// Runs `cachewatch producers`.
///
/// # Errors
/// A bad `[[producer]]` rule in the config, or a failed write to stdout.
pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<Outcome> {
    let catalogue = ctx.catalogue()?;
    let rules: Vec<ProducerRuleJson<'_>> = catalogue.rules().iter().map(Into::into).collect();
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &rules).context("writing JSON to stdout")?;
        writeln!(out).context("writing to stdout")?;
        return Ok(Outcome::Success);
    }
    let mut t = Table::new(&[
        ("ID", Align::Left),
        ("ROOT", Align::Left),
        ("KIND", Align::Left),
        ("RECLAIM", Align::Left),
        ("GLOBS", Align::Left),
    ]);
    for r in &rules {
        t.row(vec![
            r.id.to_owned(),
            r.root.clone(),
            r.kind.clone(),
            r.reclaim.clone(),
            r.globs.join(" "),
        ]);
    }
    t.write(&mut out).context("writing to stdout")?;
    writeln!(
        out,
        "\n{} producers. Names, evidence and notes: cachewatch producers --json",
        rules.len()
    )
    .context("writing to stdout")?;
    Ok(Outcome::Success)
}
