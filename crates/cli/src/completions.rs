//! `cachewatch completions SHELL` and `cachewatch man`: shell completions and the man page,
//! generated from the clap definitions (so they never drift from the real options).

use std::io::Write;

use anyhow::Context as _;
use clap::CommandFactory;

use super::{Cli, Outcome};

/// Options of `cachewatch completions`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The shell: bash, zsh, fish, elvish or powershell. E.g.
    /// `cachewatch completions zsh > ~/.zfunc/_cachewatch`
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Prints the completion script for `args.shell` to stdout.
///
/// # Errors
/// A failed write to stdout.
pub fn completions(args: &Args) -> anyhow::Result<Outcome> {
    let mut out = std::io::stdout().lock();
    clap_complete::generate(args.shell, &mut Cli::command(), "cachewatch", &mut out);
    out.flush().context("writing to stdout")?;
    Ok(Outcome::Success)
}

/// Prints the man page (roff) to stdout: `cachewatch man > cachewatch.1`.
///
/// # Errors
/// A failed write to stdout.
pub fn man() -> anyhow::Result<Outcome> {
    let mut out = std::io::stdout().lock();
    clap_mangen::Man::new(Cli::command())
        .render(&mut out)
        .context("writing the man page to stdout")?;
    Ok(Outcome::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_man_page_and_completions_name_every_subcommand() {
        let mut page = Vec::new();
        clap_mangen::Man::new(Cli::command())
            .render(&mut page)
            .expect("render");
        let page = String::from_utf8(page).expect("utf-8");
        let mut bash = Vec::new();
        clap_complete::generate(
            clap_complete::Shell::Bash,
            &mut Cli::command(),
            "cachewatch",
            &mut bash,
        );
        let bash = String::from_utf8(bash).expect("utf-8");
        for sub in Cli::command().get_subcommands() {
            let name = sub.get_name();
            // roff writes a hyphen as `\-`.
            let roff = name.replace('-', "\\-");
            assert!(
                page.contains(name) || page.contains(&roff),
                "man page lacks {name}"
            );
            assert!(bash.contains(name), "bash completion lacks {name}");
        }
        assert!(bash.contains("--older-than"));
    }
}
