//! The `cachewatch` command-line tool: scan, attribute and reclaim the per-user temp and cache dirs.
//!
//! Exit codes: 0 success; 1 error (bad config, bad root, database); 2 usage error; 3 completed with
//! problems (unreadable paths in a scan, failed deletions).

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    cli::init_tracing(args.global.verbose);
    match cli::run(args) {
        Ok(outcome) => outcome.exit_code(),
        Err(e) => {
            // One line: the context chain joined with ": ", each cause once.
            eprintln!("cachewatch: error: {}", cli::error_line(&e));
            ExitCode::from(cli::EXIT_ERROR)
        }
    }
}
