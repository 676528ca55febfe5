//! `cachewatch launchd-plist`: print a LaunchAgent plist that runs `cachewatch watch` at login.

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
}

/// Prints the plist to stdout.
///
/// # Errors
/// The current executable or the home directory cannot be found.
pub fn run(_ctx: &Context, args: &Args) -> anyhow::Result<Outcome> {
    let program = match &args.program {
        Some(p) => p.clone(),
        None => std::env::current_exe().context("find the cachewatch binary (pass --program)")?,
    };
    let home = directories::BaseDirs::new()
        .context("find the home directory for the log path")?
        .home_dir()
        .to_path_buf();
    print!(
        "{}",
        plist(&args.label, &program, &home, args.metrics.as_deref())
    );
    Ok(Outcome::Success)
}

/// The LaunchAgent plist (XML): runs `<program> watch [--metrics ADDR]` at login (`RunAtLoad`),
/// restarts it when it exits (`KeepAlive`), logs stderr to
/// `~/Library/Logs/cachewatch/<label>.log` and the alert lines (stdout) to
/// `~/Library/Logs/cachewatch/<label>.alerts.log`.
pub fn plist(label: &str, program: &Path, home: &Path, metrics: Option<&str>) -> String {
    let logs = home.join("Library/Logs/cachewatch");
    let mut argv = vec![program.to_string_lossy().into_owned(), "watch".to_owned()];
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
        let xml = plist(
            "dev.cachewatch.watch",
            Path::new("/opt/cache watch/cachewatch"),
            home,
            Some("127.0.0.1:9187"),
        );
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
