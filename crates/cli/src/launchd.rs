//! `cachewatch launchd-plist`: print a LaunchAgent plist that runs `cachewatch watch` at login;
//! with `--auto-reclaim`, the CI-runner recipe: `watch --metrics ADDR` with the config's
//! `[[auto_reclaim]]` rules (the CI-runner set, `deploy/launchd/ci-runner.toml`, installed into a
//! config that has none).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::{Context, Outcome};

/// Options of `cachewatch launchd-plist`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The job's label (also the plist's file name under ~/Library/LaunchAgents and the log
    /// files' names): reverse-DNS style, letters, digits, '.', '-' and '_' only
    #[arg(long, default_value = "dev.cachewatch.watch", value_parser = parse_label)]
    pub label: String,
    /// The cachewatch binary to run [default: this one]
    #[arg(long, value_name = "PATH")]
    pub program: Option<PathBuf>,
    /// Also serve /metrics on this address (passed to `cachewatch watch --metrics`), IP:PORT
    /// such as 127.0.0.1:9187
    #[arg(long, value_name = "ADDR", value_parser = parse_metrics_addr)]
    pub metrics: Option<SocketAddr>,
    /// CI runner: run the config's [[auto_reclaim]] rules, writing the CI-runner set into the
    /// config file when it has none, and serve /metrics (on 127.0.0.1:9187 unless --metrics)
    #[arg(long)]
    pub auto_reclaim: bool,
}

/// The `[[auto_reclaim]]` rules for a macOS CI runner (`deploy/launchd/ci-runner.toml`, also the
/// CI-runner sample in docs/fleet.md).
pub const CI_RUNNER_RULES: &str = include_str!("../../../deploy/launchd/ci-runner.toml");

/// Where `--auto-reclaim` serves /metrics unless `--metrics` says otherwise.
pub const DEFAULT_METRICS_ADDR: &str = "127.0.0.1:9187";

/// The longest label accepted (launchd's own limit is not documented; a file name is 255 bytes,
/// and the alert log's name adds 11 to the label).
pub const MAX_LABEL_LEN: usize = 200;

/// Checks `--label`: it names the job and, with `.log` added, its log files under
/// `~/Library/Logs/cachewatch`, so a `/`, a `..` or a control character would move the logs or
/// give a plist launchd cannot load.
///
/// # Errors
/// The message quotes the label and says what is allowed.
pub fn parse_label(label: &str) -> Result<String, String> {
    let allowed =
        "use letters, digits, '.', '-' and '_' only, reverse-DNS style (e.g. dev.cachewatch.watch)";
    if label.is_empty() {
        return Err(format!("the label is empty: {allowed}"));
    }
    if label.len() > MAX_LABEL_LEN {
        return Err(format!(
            "the label {label:?} is longer than {MAX_LABEL_LEN} bytes: give a shorter one"
        ));
    }
    if let Some(c) = label
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_')))
    {
        return Err(format!(
            "the label {label:?} holds {c:?}, which could move the log files or break the plist: {allowed}"
        ));
    }
    if label.starts_with('.') || label.ends_with('.') || label.contains("..") {
        return Err(format!(
            "the label {label:?} starts or ends with '.' or holds \"..\": {allowed}"
        ));
    }
    Ok(label.to_owned())
}

/// Checks `--metrics`: the agent passes it to `cachewatch watch --metrics`, which takes an
/// IP:PORT; anything else would give an agent that fails on every restart.
///
/// # Errors
/// The message quotes the value and gives an example.
pub fn parse_metrics_addr(addr: &str) -> Result<SocketAddr, String> {
    addr.parse().map_err(|_| {
        format!(
            "{addr:?} is not an IP:PORT address (a host name is not accepted; the port is at most \
             65535): give one such as 127.0.0.1:9187"
        )
    })
}

/// Prints the plist to stdout. The agent runs with the `--config` and `--data-dir` given here
/// (flag or environment variable, made absolute: launchd starts it in `/` with neither
/// variable); without them, with the platform defaults.
///
/// # Errors
/// The current executable or the home directory cannot be found.
pub fn run(ctx: &Context, args: &Args, global: &crate::GlobalArgs) -> anyhow::Result<Outcome> {
    let program = match &args.program {
        Some(p) => p.clone(),
        None => std::env::current_exe().context("find the cachewatch binary (pass --program)")?,
    };
    let home = directories::BaseDirs::new()
        .context("find the home directory for the log path")?
        .home_dir()
        .to_path_buf();
    let absolute = |p: &Path| {
        std::path::absolute(p).with_context(|| format!("making {} absolute", p.display()))
    };
    let given = args.metrics.map(|a| a.to_string());
    let (metrics, config) = if args.auto_reclaim {
        let metrics = given.as_deref().unwrap_or(DEFAULT_METRICS_ADDR);
        (Some(metrics), Some(install_rules(ctx)?))
    } else {
        // A `--config` given here was left out of the plist: the agent ran on the default config.
        let config = global.config.as_deref().map(absolute).transpose()?;
        (given.as_deref(), config)
    };
    let data_dir = global.data_dir.as_deref().map(absolute).transpose()?;
    let job = Job {
        label: &args.label,
        program: &program,
        home: &home,
        metrics,
        config: config.as_deref(),
        data_dir: data_dir.as_deref(),
    };
    print!("{}", plist(&job));
    Ok(Outcome::Success)
}

/// Makes sure the config file has `[[auto_reclaim]]` rules: keeps its own, else appends
/// [`CI_RUNNER_RULES`] (creating the file and its directory when missing). Returns the file.
///
/// # Errors
/// No config path (no home dir: pass `--config`); the file cannot be read or written; the result
/// would not load (the message names the file and the line).
fn install_rules(ctx: &Context) -> anyhow::Result<PathBuf> {
    let path = ctx
        .config_path
        .as_deref()
        .context("no config file to hold the [[auto_reclaim]] rules: pass --config PATH")?;
    // launchd starts the job in `/`: the plist must name the file absolutely.
    let path =
        std::path::absolute(path).with_context(|| format!("making {} absolute", path.display()))?;
    let names: Vec<&str> = ctx
        .config
        .config
        .auto_reclaim
        .iter()
        .filter_map(|r| r.name.as_deref())
        .collect();
    if !ctx.config.config.auto_reclaim.is_empty() {
        eprintln!(
            "cachewatch: {} has [[auto_reclaim]] rules ({} of them{}); the agent runs those",
            path.display(),
            ctx.config.config.auto_reclaim.len(),
            if names.is_empty() {
                String::new()
            } else {
                format!(": {}", names.join(", "))
            }
        );
        return Ok(path);
    }
    // Under the config's lock, on the file as it is then: another writer's change is kept.
    let mut appended = false;
    cachewatch::api::config::edit_file(&path, |old| -> anyhow::Result<String> {
        appended = !old.is_empty();
        let text = match old {
            "" => CI_RUNNER_RULES.to_owned(),
            o if o.ends_with('\n') => format!("{o}\n{CI_RUNNER_RULES}"),
            o => format!("{o}\n\n{CI_RUNNER_RULES}"),
        };
        // The file as it will be must load, rules and all, before it replaces the old one.
        let loaded = cachewatch::api::config::LoadedConfig {
            config: cachewatch::api::config::parse(&text, &path)?,
            path: path.clone(),
            text: text.clone(),
        };
        loaded.auto_reclaim(&loaded.catalogue()?)?;
        Ok(text)
    })
    .map_err(|e| match e {
        cachewatch::api::config::EditError::Config(e) => anyhow::Error::new(e),
        cachewatch::api::config::EditError::Write(e) => anyhow::Error::new(e),
        cachewatch::api::config::EditError::Edit(e) => e,
    })?;
    eprintln!(
        "cachewatch: {} the CI-runner [[auto_reclaim]] rules (ci-metal, ci-leaks) to {}",
        if appended { "appended" } else { "wrote" },
        path.display()
    );
    Ok(path)
}

/// What the LaunchAgent runs.
#[derive(Debug, Clone, Copy)]
pub struct Job<'a> {
    /// The job's label.
    pub label: &'a str,
    /// The cachewatch binary.
    pub program: &'a Path,
    /// The user's home (for the log paths).
    pub home: &'a Path,
    /// `watch --metrics ADDR`, when set.
    pub metrics: Option<&'a str>,
    /// `--config PATH`, when set.
    pub config: Option<&'a Path>,
    /// `--data-dir PATH`, when set.
    pub data_dir: Option<&'a Path>,
}

/// How long launchd waits before restarting the agent after it was killed (`ThrottleInterval`,
/// seconds): a monitor that dies at once on every start costs one start per this interval.
pub const THROTTLE_SECS: u32 = 30;

/// The LaunchAgent plist (XML): runs `<program> [--config PATH] [--data-dir PATH] watch
/// [--metrics ADDR]` at login
/// (`RunAtLoad`), restarts it when it was killed or failed but not after a clean exit
/// (`KeepAlive = { SuccessfulExit = false }`: macOS kills processes under disk pressure, the
/// very moment the monitor is needed), at most once per [`THROTTLE_SECS`]
/// (`ThrottleInterval`), logs stderr to
/// `~/Library/Logs/cachewatch/<label>.log` and the alert lines (stdout) to
/// `~/Library/Logs/cachewatch/<label>.alerts.log`.
pub fn plist(job: &Job<'_>) -> String {
    let Job {
        label,
        program,
        home,
        metrics,
        config,
        data_dir,
    } = *job;
    let logs = home.join("Library/Logs/cachewatch");
    let mut argv = vec![program.to_string_lossy().into_owned()];
    if let Some(c) = config {
        argv.push("--config".to_owned());
        argv.push(c.to_string_lossy().into_owned());
    }
    if let Some(d) = data_dir {
        argv.push("--data-dir".to_owned());
        argv.push(d.to_string_lossy().into_owned());
    }
    argv.push("watch".to_owned());
    if let Some(m) = metrics {
        argv.push("--metrics".to_owned());
        argv.push(m.to_owned());
    }
    let args: String = argv
        .iter()
        .map(|a| format!("        <string>{}</string>\n", xml_escape(a)))
        .collect();
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
    <key>Label</key>
    <string>{label}</string>
    <key>ProgramArguments</key>
    <array>
{args}    </array>
    <key>RunAtLoad</key>
    <true/>
    <key>KeepAlive</key>
    <dict>
        <key>SuccessfulExit</key>
        <false/>
    </dict>
    <key>ThrottleInterval</key>
    <integer>{THROTTLE_SECS}</integer>
    <key>ProcessType</key>
    <string>Background</string>
    <key>LowPriorityIO</key>
    <true/>
    <key>StandardErrorPath</key>
    <string>{stderr}</string>
    <key>StandardOutPath</key>
    <string>{stdout}</string>
</dict>
</plist>
"#,
        label = xml_escape(label),
        stderr = xml_escape(&logs.join(format!("{label}.log")).to_string_lossy()),
        stdout = xml_escape(&logs.join(format!("{label}.alerts.log")).to_string_lossy()),
    )
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_plist_parses_and_runs_watch_at_login_with_logs_under_library_logs() {
        let home = Path::new("/Users/a&b");
        let xml = plist(&Job {
            label: "dev.cachewatch.watch",
            program: Path::new("/opt/cache watch/cachewatch"),
            home,
            metrics: Some("127.0.0.1:9187"),
            config: None,
            data_dir: None,
        });
        let v: plist::Value = plist::from_bytes(xml.as_bytes()).unwrap();
        let d = v.as_dictionary().unwrap();
        assert_eq!(d["Label"].as_string(), Some("dev.cachewatch.watch"));
        let argv: Vec<&str> = d["ProgramArguments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_string().unwrap())
            .collect();
        assert_eq!(
            argv,
            [
                "/opt/cache watch/cachewatch",
                "watch",
                "--metrics",
                "127.0.0.1:9187"
            ]
        );
        assert_eq!(d["RunAtLoad"].as_boolean(), Some(true));
        let keep_alive = d["KeepAlive"].as_dictionary().unwrap();
        assert_eq!(keep_alive.len(), 1);
        assert_eq!(keep_alive["SuccessfulExit"].as_boolean(), Some(false));
        assert_eq!(
            d["ThrottleInterval"].as_unsigned_integer(),
            Some(u64::from(THROTTLE_SECS))
        );
        let err = d["StandardErrorPath"].as_string().unwrap();
        assert_eq!(
            err,
            "/Users/a&b/Library/Logs/cachewatch/dev.cachewatch.watch.log"
        );
        assert!(d["StandardOutPath"]
            .as_string()
            .unwrap()
            .starts_with("/Users/a&b/Library/Logs/"));
    }

    /// A `--label` with `../` moved the log paths, one with a control character gave a plist
    /// launchd cannot parse; `--metrics not-an-address` gave an agent failing on every restart.
    #[test]
    fn labels_and_metrics_addresses_are_checked() {
        for ok in ["dev.cachewatch.watch", "com.example.ci-runner_2", "a"] {
            assert_eq!(parse_label(ok).unwrap(), ok);
        }
        for (bad, says) in [
            ("", "empty"),
            ("../../evil", "'/'"),
            ("a/b", "'/'"),
            ("dev..watch", "\"..\""),
            (".hidden", "starts or ends"),
            ("dev.watch\n", "'\\n'"),
            ("dev.watch\u{1b}", "'\\u{1b}'"),
            ("dév", "'é'"),
            ("a b", "' '"),
        ] {
            let e = parse_label(bad).unwrap_err();
            assert!(e.contains(says), "{bad:?}: {e}");
        }
        assert!(parse_label(&"a".repeat(MAX_LABEL_LEN + 1))
            .unwrap_err()
            .contains("longer than"));
        assert_eq!(
            parse_metrics_addr("127.0.0.1:9187").unwrap(),
            SocketAddr::from(([127, 0, 0, 1], 9187))
        );
        assert!(parse_metrics_addr("[::1]:9187").is_ok());
        for bad in [
            "not-an-address",
            "999.1.1.1:99999",
            "127.0.0.1",
            "localhost:9187",
            "",
        ] {
            let e = parse_metrics_addr(bad).unwrap_err();
            assert!(
                e.contains(&format!("{bad:?}")) && e.contains("127.0.0.1:9187"),
                "{e}"
            );
        }
    }
}
