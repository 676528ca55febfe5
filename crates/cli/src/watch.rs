//! `cachewatch watch`: run the monitor in the foreground, print alerts as they fire, optionally
//! serve `/metrics`; stop cleanly on Ctrl-C or SIGTERM. SIGHUP (a log-rotation script's reload)
//! reloads the config: `[reclaim] older_than` and `[alerts]` apply at once; a change to anything
//! else (roots, rules, `[watch]`, `[monitor]`, `[[auto_reclaim]]`) is logged as taking effect on
//! the next start. A config that no longer loads is logged and the running settings are kept.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use cachewatch::api::metrics;
use cachewatch::api::monitor::{self, MonitorOptions};
use tokio::sync::broadcast::error::RecvError;

use super::{Context, Outcome, RootArgs};

/// Options of `cachewatch watch`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Roots to watch.
    #[command(flatten)]
    pub roots: RootArgs,
    /// Serve OpenMetrics on http://ADDR/metrics, e.g. 127.0.0.1:9187 (keep it on loopback)
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<SocketAddr>,
    /// Run without the config's [[auto_reclaim]] rules: nothing is deleted on its own
    #[arg(long)]
    pub no_auto_reclaim: bool,
}

/// Runs until Ctrl-C or SIGTERM. Alerts go to stdout, one line each; logs to stderr.
///
/// # Errors
/// A bad root, config or metrics address; the runtime cannot start; the monitor task stopped on a
/// panic (the process exits non-zero rather than serve frozen figures).
pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<Outcome> {
    let mut opts = ctx.monitor_options(args.roots.resolve(ctx)?)?;
    if args.no_auto_reclaim {
        opts.auto_reclaim.clear();
    } else if !opts.auto_reclaim.is_empty() {
        let names: Vec<&str> = opts.auto_reclaim.iter().map(|r| r.name.as_str()).collect();
        eprintln!(
            "cachewatch: auto-reclaim rules on: {} (--no-auto-reclaim to run without)",
            names.join(", ")
        );
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("start the async runtime")?;
    let reload = Reload {
        path: ctx.config_path.clone(),
        running: ctx.config.config.clone(),
    };
    rt.block_on(watch(opts, args.metrics, reload))
}

/// What SIGHUP reloads: the config file, against the config the monitor started with.
struct Reload {
    /// The config file (`None`: no home dir and no `--config`, nothing to reload).
    path: Option<PathBuf>,
    /// The config as last applied.
    running: cachewatch::api::config::Config,
}

impl Reload {
    /// Loads the config again and applies what the monitor can take while running; logs the rest.
    async fn reload(&mut self, m: &monitor::MonitorHandle) {
        let Some(path) = &self.path else {
            tracing::warn!("SIGHUP: no config file to reload (no --config and no home dir); kept running as is");
            return;
        };
        let loaded = match cachewatch::api::config::load(path) {
            Ok(l) => l.config,
            Err(e) => {
                tracing::error!("SIGHUP: config not reloaded, the running settings are kept: {e}");
                return;
            }
        };
        if let Err(e) = m.set_alerts(loaded.alerts.clone()).await {
            tracing::error!("SIGHUP: cannot apply [alerts]: {e}");
            return;
        }
        if let Err(e) = m.set_threshold(loaded.reclaim.older_than).await {
            tracing::error!("SIGHUP: cannot apply [reclaim] older_than: {e}");
            return;
        }
        if let Err(e) = m.set_ignored_shapes(loaded.groups.ignore.clone()).await {
            tracing::error!("SIGHUP: cannot apply [groups] ignore: {e}");
            return;
        }
        // What only a restart applies: everything but [reclaim], [alerts] and [groups].
        let rest = |c: &cachewatch::api::config::Config| {
            let mut c = c.clone();
            c.reclaim = Default::default();
            c.alerts = Default::default();
            c.groups = Default::default();
            c
        };
        if rest(&loaded) != rest(&self.running) {
            tracing::warn!(
                config = %path.display(),
                "SIGHUP: reloaded [reclaim] and [alerts] (and [groups] ignore); the other changes (roots, rules, [watch], [monitor], [[auto_reclaim]]) take effect when watch is started again"
            );
        } else {
            tracing::info!(config = %path.display(), "SIGHUP: reloaded [reclaim] and [alerts] (and [groups] ignore)");
        }
        self.running = loaded;
    }
}

async fn watch(
    opts: MonitorOptions,
    metrics_addr: Option<SocketAddr>,
    mut reload: Reload,
) -> anyhow::Result<Outcome> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).context("listen for SIGTERM")?;
    // Listened for from the start: SIGHUP's default action would end the process.
    let mut hup = signal(SignalKind::hangup()).context("listen for SIGHUP")?;
    let roots: Vec<String> = opts
        .roots
        .iter()
        .map(|r| format!("{}={}", r.kind, r.path.display()))
        .collect();
    // Bind first: a port in use is the one error, before anything starts.
    let listener = match metrics_addr {
        Some(addr) => Some(metrics::bind(addr).await?),
        None => None,
    };
    let m = monitor::spawn(opts)?;
    let _server = listener.map(|l| {
        let server = metrics::serve_on(l, m.subscribe(), m.alerts());
        eprintln!(
            "cachewatch: serving metrics on http://{}/metrics",
            server.local_addr()
        );
        server
    });
    tracing::info!(roots = %roots.join(" "), "watching");
    let mut alerts = m.alerts();
    loop {
        tokio::select! {
            r = tokio::signal::ctrl_c() => {
                r.context("listen for Ctrl-C")?;
                tracing::info!("interrupted; stopping");
                break;
            }
            _ = term.recv() => {
                tracing::info!("SIGTERM; stopping");
                break;
            }
            _ = hup.recv() => reload.reload(&m).await,
            // A monitor that stopped on a panic serves frozen figures: exit non-zero instead, so
            // launchd (KeepAlive) or whoever runs `watch` starts it again.
            why = m.stopped() => {
                anyhow::bail!("{why}; exiting so it can be started again");
            }
            a = alerts.recv() => match a {
                Ok(a) => println!(
                    "{} {} {}: {}",
                    humantime::format_rfc3339_seconds(
                        std::time::UNIX_EPOCH + Duration::from_secs(a.time_unix_secs)
                    ),
                    // One line per alert, whatever its title or message holds.
                    a.rule,
                    crate::format::escape(&a.title),
                    crate::format::escape(&a.message)
                ),
                Err(RecvError::Lagged(n)) => tracing::warn!("{n} alerts were not printed (too many at once)"),
                Err(RecvError::Closed) => break,
            },
        }
    }
    m.shutdown().await;
    Ok(Outcome::Success)
}
