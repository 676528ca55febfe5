//! `cachewatch launchd-plist`: print a LaunchAgent plist that runs `cachewatch watch` at login;
//! with `--auto-reclaim`, the CI-runner recipe: `watch --metrics ADDR` with the config's
//! `[[auto_reclaim]]` rules (the CI-runner set, `deploy/launchd/ci-runner.toml`, installed into a
//! config that has none).

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::{Context, Outcome};

/// Options of `cachewatch launchd-plist`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The job's label (also the plist's file name under ~/Library/LaunchAgents)
    #[arg(long, default_value = "dev.cachewatch.watch")]
    pub label: String,
    /// The cachewatch binary to run [default: this one]
    #[arg(long, value_name = "PATH")]
    pub program: Option<PathBuf>,
    /// Also serve /metrics on this address (passed to `cachewatch watch --metrics`)
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<String>,
    /// CI runner: run the config's [[auto_reclaim]] rules, writing the CI-runner set into the
    /// config file when it has none, and serve /metrics (on 127.0.0.1:9187 unless --metrics)
    #[arg(long)]
    pub auto_reclaim: bool,
}

/// The `[[auto_reclaim]]` rules for a macOS CI runner (`deploy/launchd/ci-runner.toml`, also the
/// README's CI-runner sample).
pub const CI_RUNNER_RULES: &str = include_str!("../../../deploy/launchd/ci-runner.toml");

/// Where `--auto-reclaim` serves /metrics unless `--metrics` says otherwise.
pub const DEFAULT_METRICS_ADDR: &str = "127.0.0.1:9187";

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
    let (metrics, config) = if args.auto_reclaim {
        let metrics = args.metrics.as_deref().unwrap_or(DEFAULT_METRICS_ADDR);
        (Some(metrics), Some(install_rules(ctx)?))
    } else {
        // A `--config` given here was left out of the plist: the agent ran on the default config.
        let config = global.config.as_deref().map(absolute).transpose()?;
        (args.metrics.as_deref(), config)
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
    let old = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let text = match old.as_str() {
        "" => CI_RUNNER_RULES.to_owned(),
        o if o.ends_with('\n') => format!("{o}\n{CI_RUNNER_RULES}"),
        o => format!("{o}\n\n{CI_RUNNER_RULES}"),
    };
    // The file as it will be must load, rules and all, before it replaces the old one.
    let loaded = cachewatch::config::LoadedConfig {
        config: cachewatch::config::parse(&text, &path)?,
        path: path.clone(),
        text: text.clone(),
    };
    loaded.auto_reclaim(&loaded.catalogue()?)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    cachewatch::metrics::textfile::write_atomically(&path, &text)?;
    eprintln!(
        "cachewatch: {} the CI-runner [[auto_reclaim]] rules (ci-metal, ci-leaks) to {}",
        if old.is_empty() { "wrote" } else { "appended" },
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

/// The LaunchAgent plist (XML): runs `<program> [--config PATH] [--data-dir PATH] watch
/// [--metrics ADDR]` at login
/// (`RunAtLoad`), restarts it when it exits (`KeepAlive`), logs stderr to
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
    <true/>
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
        assert_eq!(d["KeepAlive"].as_boolean(), Some(true));
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
}
