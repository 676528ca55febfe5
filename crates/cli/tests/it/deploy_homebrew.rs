//! The Homebrew tap (Formula/, Casks/): the formula's `service do` command is one the CLI
//! accepts, and it is the runner recipe the README gives (`watch --metrics 127.0.0.1:9187`). Ruby
//! syntax and the README's brew commands are checked by `.ci/run` (`ruby -c`, `.ci/brew-readme.py`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

const FORMULA: &str = include_str!("../../../../Formula/cachewatch.rb");
const CASK: &str = include_str!("../../../../Casks/cachewatch-app.rb");

/// The arguments of the formula's `run [opt_bin/"cachewatch", "a", "b", ...]` line.
fn service_args() -> Vec<String> {
    let line = FORMULA
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("run [opt_bin/\"cachewatch\""))
        .expect("the formula's service block runs opt_bin/\"cachewatch\"");
    let inner = line
        .strip_prefix("run [opt_bin/\"cachewatch\"")
        .and_then(|l| l.strip_suffix(']'))
        .expect("one array on one line");
    // The rest is `, "arg", "arg"`: string literals without escapes.
    inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.strip_prefix('"')
                .and_then(|s| s.strip_suffix('"'))
                .filter(|s| !s.contains(['"', '\\', '#']))
                .unwrap_or_else(|| panic!("not a plain string literal: {s}"))
                .to_owned()
        })
        .collect()
}

#[test]
fn the_formula_s_service_command_is_accepted_by_the_cli() {
    let args = service_args();
    assert_eq!(args, ["watch", "--metrics", "127.0.0.1:9187"]);
    let addr: std::net::SocketAddr = args[2].parse().unwrap();
    assert!(addr.ip().is_loopback(), "metrics stay on localhost");
    // clap parses and checks every argument before it acts on the trailing --help (exit 0);
    // an unknown subcommand, flag or bad value fails (exit 2).
    let out = Command::new(env!("CARGO_BIN_EXE_cachewatch"))
        .args(&args)
        .arg("--help")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cachewatch {} refused: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    let bad = Command::new(env!("CARGO_BIN_EXE_cachewatch"))
        .args(["watch", "--no-such-flag", "--help"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2), "the check can fail");
}

#[test]
fn the_formula_installs_the_cli_crate_and_restarts_only_a_killed_monitor() {
    assert!(FORMULA.contains(r#"std_cargo_args(path: "crates/cli")"#));
    // ...whose binary is the `cachewatch` the service runs.
    let manifest = include_str!("../../Cargo.toml");
    assert!(
        manifest.contains("[[bin]]\nname = \"cachewatch\""),
        "{manifest}"
    );
    assert!(FORMULA.contains("keep_alive crashed: true"));
    // The cask's bundle id and app name are the app's.
    let conf = include_str!("../../../../src-tauri/tauri.conf.json");
    let conf: serde_json::Value = serde_json::from_str(conf).unwrap();
    let id = conf["identifier"].as_str().unwrap();
    let name = conf["productName"].as_str().unwrap();
    assert!(CASK.contains(&format!(r#"uninstall quit: "{id}""#)), "{id}");
    assert!(CASK.contains(&format!(r#"app "{name}.app""#)), "{name}");
}
