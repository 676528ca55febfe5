//! `cachewatch report SHAPE|PRODUCER`: a Markdown draft for the tracker of the program that leaves
//! a group (or a producer's items) behind, drafted by the engine ([`cachewatch::api::report`]);
//! printed, never sent.

use std::io::Write;

use anyhow::Context as _;
use cachewatch::api::report;

use super::{Context, Outcome, RootArgs};

/// Options of `cachewatch report`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A group's template as `scan` prints it (quote it: 'tmp<rand8>/'), or a producer id
    pub target: String,
    /// Roots to scan.
    #[command(flatten)]
    pub roots: RootArgs,
    /// Print the draft and its figures as JSON (shape documented in docs/json.md)
    #[arg(long)]
    pub json: bool,
}

/// Runs `cachewatch report`.
///
/// # Errors
/// Bad roots or config; a target that is neither a group nor a producer; an unreadable history
/// database; a failed write to stdout.
pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<Outcome> {
    let roots = args.roots.resolve(ctx)?;
    // The draft reads the history for growth and remembered writers, and goes without one that
    // cannot be read; a data dir or database that is not what it should be is said.
    if let Err(e) = ctx.history_to_read() {
        eprintln!("warning: {e}: the draft leaves out the history's growth and writers");
    }
    let draft = report::report_draft(ctx, &roots, &args.target, std::time::SystemTime::now())?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &draft).context("writing JSON to stdout")?;
        writeln!(out).context("writing to stdout")?;
    } else {
        out.write_all(draft.markdown.as_bytes())
            .context("writing to stdout")?;
    }
    Ok(Outcome::Success)
}
