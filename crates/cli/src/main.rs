//! The `cachewatch` command-line tool: scan, attribute and reclaim the per-user temp and cache dirs.
//!
//! Exit codes: 0 success; 1 error (bad config, bad root, database); 2 usage error; 3 completed with
//! problems (unreadable paths in a scan, failed deletions).
//!
//! The clap definitions and the dispatch of the `cachewatch` subcommands.
//!
//! Adding a subcommand: a file `src/<name>.rs` with `pub struct Args` (`clap::Args`) and
//! `pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<Outcome>`, then one variant in
//! [`Command`] and one line in [`run`].

mod completions;
mod context;
mod crashes;
mod explain;
mod format;
mod history;
mod launchd;
mod path_bytes;
mod producers;
mod reclaim;
mod report;
mod rules;
mod scan;
mod status;
mod watch;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub use context::{Context, RootArgs};

/// Exit code of an error (bad config, bad root, database).
pub const EXIT_ERROR: u8 = 1;
/// Exit code of a run that completed with problems (unreadable paths, failed deletions).
pub const EXIT_PROBLEMS: u8 = 3;

const EXIT_CODES_HELP: &str = "\
Exit codes:
  0  success
  1  error (bad config, bad root, database)
  2  usage error
  3  completed, but with problems (unreadable paths in a scan, failed deletions)

Sizes are in binary units: 1 KiB = 1024 bytes, 1 MiB = 1024 KiB, 1 GiB = 1024 MiB.";

/// Watch the per-user temp and cache dirs, attribute what is there to known leaking producers,
/// and reclaim space safely.
#[derive(Debug, Parser)]
#[command(name = "cachewatch", version, after_help = EXIT_CODES_HELP)]
pub struct Cli {
    /// Options of every subcommand.
    #[command(flatten)]
    pub global: GlobalArgs,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Options of every subcommand.
#[derive(Debug, clap::Args)]
pub struct GlobalArgs {
    /// Config file [default: the platform config dir's cachewatch/config.toml]
    #[arg(long, global = true, env = "CACHEWATCH_CONFIG", value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Data dir holding the history database cachewatch.db [default: the platform data dir]
    #[arg(long, global = true, env = "CACHEWATCH_DATA_DIR", value_name = "PATH")]
    pub data_dir: Option<PathBuf>,
    /// Log to stderr: -v info, -vv debug, -vvv trace
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Measure the roots: totals per root, per producer, and the largest unattributed entries.
    Scan(scan::Args),
    /// Plan and (with --yes or a "y" answer) delete old items of leaking producers.
    Reclaim(reclaim::Args),
    /// List the producer catalogue (built-in rules plus the config's [[producer]] rules).
    Producers(producers::Args),
    /// Turn a group of unattributed entries (an unknown producer) into a [[producer]] rule.
    Rules(rules::Args),
    /// Draft a report (Markdown) for the tracker of the program that leaves a group behind.
    Report(report::Args),
    /// Say which rule claims a path and why, or that none does.
    Explain(explain::Args),
    /// Crash reports grouped by process and known cause (crash signature), with what to do.
    Crashes(crashes::Args),
    /// Run the monitor in the foreground: keep the figures current, print alerts, serve /metrics.
    Watch(watch::Args),
    /// One scan summarised (per root, per producer, reclaimable), with growth from the history.
    Status(status::Args),
    /// What grew since a time, per producer and root, and the reclaims since then (from the history).
    History(history::Args),
    /// Print a LaunchAgent plist that runs `cachewatch watch` at login (macOS).
    #[command(name = "launchd-plist")]
    LaunchdPlist(launchd::Args),
    /// Print shell completions (bash, zsh, fish, elvish, powershell).
    Completions(completions::Args),
    /// Print the man page (roff): `cachewatch man > cachewatch.1`.
    Man,
}

/// How a subcommand that did not fail ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Everything went fine: exit 0.
    Success,
    /// Completed, with problems worth a non-zero exit: exit 3.
    Problems,
}

impl Outcome {
    /// The process exit code of this outcome.
    pub fn exit_code(self) -> ExitCode {
        match self {
            Outcome::Success => ExitCode::SUCCESS,
            Outcome::Problems => ExitCode::from(EXIT_PROBLEMS),
        }
    }

    /// `Problems` when `problems` is true, else `Success`.
    pub fn from_problems(problems: bool) -> Outcome {
        if problems {
            Outcome::Problems
        } else {
            Outcome::Success
        }
    }
}

/// Runs the parsed command line.
///
/// # Errors
/// Any error that should end the process with exit code 1, with its context chain.
pub fn run(cli: Cli) -> anyhow::Result<Outcome> {
    // These need no config: they work even when the config file is broken.
    match &cli.command {
        Command::Completions(a) => return completions::completions(a),
        Command::Man => return completions::man(),
        _ => {}
    }
    let ctx = context::load(&cli.global)?;
    match &cli.command {
        Command::Scan(a) => scan::run(&ctx, a),
        Command::Reclaim(a) => reclaim::run(&ctx, a),
        Command::Producers(a) => producers::run(&ctx, a),
        Command::Rules(a) => rules::run(&ctx, a),
        Command::Report(a) => report::run(&ctx, a),
        Command::Explain(a) => explain::run(&ctx, a),
        Command::Crashes(a) => crashes::run(&ctx, a),
        Command::Watch(a) => watch::run(&ctx, a),
        Command::Status(a) => status::run(&ctx, a),
        Command::History(a) => history::run(&ctx, a),
        Command::LaunchdPlist(a) => launchd::run(&ctx, a, &cli.global),
        Command::Completions(_) | Command::Man => Ok(Outcome::Success),
    }
}

/// Logs to stderr with `tracing`: warnings by default, more with each `-v`; `RUST_LOG` overrides.
pub fn init_tracing(verbose: u8) {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    // notify logs every watch it fails to remove at INFO (~660 lines per reclaim of 660 dirs,
    // whose watches went with them): below -vv it stays at warnings.
    let notify = if verbose >= 2 { level } else { "warn" };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(format!("{level},notify={notify}")));
    // A second init (never in the binary) would fail; there is nothing to do about it.
    if tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .try_init()
        .is_err()
    {
        eprintln!("cachewatch: warning: logging was already set up");
    }
}

/// The one line printed for an error: its context chain joined with ": ", leaving out a cause
/// whose text the line already holds (our error messages quote their source, so anyhow's `{:#}`
/// printed the OS error twice), with line breaks inside a message (regex errors) folded to spaces.
pub fn error_line(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause
            .to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        if text.is_empty() || line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

fn main() -> ExitCode {
    let args = Cli::parse();
    init_tracing(args.global.verbose);
    match run(args) {
        Ok(outcome) => outcome.exit_code(),
        // `cachewatch producers | head`: the reader left; nothing to report (as `ls | head`).
        Err(e)
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
            // One line: the context chain joined with ": ", each cause once.
            eprintln!("cachewatch: error: {}", error_line(&e));
            ExitCode::from(EXIT_ERROR)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::error_line;

    /// Regression: `--root temp=/nope` printed "...cannot be used: No such file or directory (os
    /// error 2): No such file or directory (os error 2)".
    #[test]
    fn error_line_names_a_repeated_cause_once_and_folds_lines() {
        let missing = std::fs::metadata("/nonexistent/cachewatch-test").unwrap_err();
        let os = missing.to_string();
        let e = anyhow::Error::new(cachewatch::api::roots::RootError::Missing {
            kind: cachewatch::api::roots::RootKind::Temp,
            path: "/nope".into(),
            source: missing,
        })
        .context("--root temp=/nope");
        assert_eq!(
            error_line(&e),
            format!("--root temp=/nope: root temp \"/nope\" cannot be used: {os}")
        );
        let e = anyhow::anyhow!("regex parse error:\n    (?P<pid>\n    ^\nerror: unclosed group")
            .context("bad.toml:7");
        assert_eq!(
            error_line(&e),
            "bad.toml:7: regex parse error: (?P<pid> ^ error: unclosed group"
        );
    }

    /// `--root` help listed five kinds; `code-sign-clones` and `other` work but were not named.
    #[test]
    fn root_help_names_every_root_kind() {
        use clap::CommandFactory as _;
        let mut cmd = super::Cli::command();
        let scan = cmd.find_subcommand_mut("scan").expect("scan");
        let help = scan
            .render_long_help()
            .to_string()
            .replace(char::is_whitespace, " ");
        for kind in cachewatch::api::roots::RootKind::ALL {
            assert!(
                help.contains(&format!(" {},", kind.as_str()))
                    || help.contains(&format!(" {} (", kind.as_str())),
                "--root help misses {}: {help}",
                kind.as_str()
            );
        }
    }
}
