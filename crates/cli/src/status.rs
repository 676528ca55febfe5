//! `cachewatch status`: one scan summarised like the app shows it (the monitor's snapshot), with
//! growth rates read from the history database (read-only: status never writes history).

use std::time::{Duration, SystemTime};

use anyhow::Context as _;
use cachewatch::api::history::{History, Series};
use cachewatch::api::monitor;
use cachewatch::api::monitor::Snapshot;
use cachewatch::api::outside;
use cachewatch::dto::MonitorState;

use super::{Context, Outcome, RootArgs};

/// Options of `cachewatch status`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Roots to look at.
    #[command(flatten)]
    pub roots: RootArgs,
    /// Print the snapshot as JSON (the same shape the app receives)
    #[arg(long)]
    pub json: bool,
}

const HOUR: Duration = Duration::from_secs(3600);
const DAY: Duration = Duration::from_secs(24 * 3600);

/// Scans once (through the monitor, without history) and prints the summary.
///
/// # Errors
/// A bad root or config; the runtime cannot start.
pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<Outcome> {
    let mut opts = ctx.monitor_options(args.roots.resolve(ctx)?)?;
    // A one-off scan: no samples written (history read below), no rules run.
    opts.db_path = None;
    opts.auto_reclaim.clear();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("start the async runtime")?;
    let mut snap: Snapshot = rt.block_on(async {
        let m = monitor::spawn(opts)?;
        let mut rx = m.subscribe();
        let s = rx
            .wait_for(|s| s.state != MonitorState::Scanning)
            .await
            .map(|s| (**s).clone())
            .map_err(|_| monitor::MonitorError::Stopped)?;
        m.shutdown().await;
        Ok::<_, anyhow::Error>(s)
    })?;
    add_growth(ctx, &mut snap);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&snap)?);
    } else {
        print_human(&snap);
    }
    Ok(Outcome::from_problems(
        snap.roots.iter().any(|r| r.unreadable > 0),
    ))
}

/// Fills the producers' growth from the history database, if there is one.
fn add_growth(ctx: &Context, snap: &mut Snapshot) {
    let path = match ctx.history_to_read() {
        Ok(Some(path)) => path,
        Ok(None) => return,
        Err(e) => {
            snap.errors.push(format!("no growth figures: {e}"));
            return;
        }
    };
    let h = match History::open_read_only(&path) {
        Ok(h) => h,
        Err(e) => {
            snap.errors.push(format!("no growth figures: {e}"));
            return;
        }
    };
    let now = SystemTime::now();
    for p in &mut snap.producers {
        let series = Series::Producer(p.id.clone());
        let hour = h.growth(&series, HOUR, now).ok().flatten();
        let day = h.growth(&series, DAY, now).ok().flatten();
        p.growth_bytes_per_hour = hour.and_then(|g| g.bytes_per(HOUR));
        p.growth_bytes_per_day = day.and_then(|g| g.bytes_per(DAY));
        p.growth_items_per_day = day.and_then(|g| g.items_per(DAY));
    }
    // Growth outside the roots, per volume, from the samples the monitor (`watch`, the app) took.
    // A root inside another (as given) grew within that one already: left out of the sum.
    let nested = |r: &&cachewatch::dto::RootDto| {
        let p = std::path::Path::new(&r.path);
        snap.roots
            .iter()
            .any(|o| o.path != r.path && p.starts_with(&o.path) && o.mount == r.mount)
    };
    let volumes = outside::group_by_volume(snap.roots.iter().filter(|r| !nested(r)).map(|r| {
        let series = Series::Root {
            kind: r.kind,
            path: r.path.clone().into(),
        };
        (series, r.mount.clone().map(Into::into))
    }));
    match outside::unexplained_growth(&h, &volumes, &ctx.config.config.alerts, now) {
        Ok(u) => snap.unexplained_growth = u,
        Err(e) => snap.errors.push(format!("no growth-outside figures: {e}")),
    }
}

fn size(b: u64) -> String {
    super::format::bytes(b)
}

fn signed(b: Option<i64>) -> String {
    match b {
        None => "-".to_owned(),
        Some(b) if b < 0 => format!("-{}", size(b.unsigned_abs())),
        Some(b) => format!("+{}", size(b as u64)),
    }
}

/// "12.0 GiB free", and "(3.0 GiB purgeable)" after it when part of that space is purgeable
/// (macOS: the system frees it on demand, as Finder counts it).
fn free_text(free: Option<u64>, purgeable: Option<u64>) -> String {
    match (free, purgeable) {
        (None, _) => "?".to_owned(),
        (Some(f), Some(p)) if p > 0 => format!("{} free ({} purgeable)", size(f), size(p)),
        (Some(f), _) => format!("{} free", size(f)),
    }
}

fn print_human(s: &Snapshot) {
    for r in &s.roots {
        let free = free_text(r.free_bytes, r.purgeable_bytes);
        println!(
            "{:<18} {:>11} {:>7} items  {:<12} {}  {}",
            r.kind,
            size(r.allocated_bytes),
            r.items,
            free,
            super::format::escape(&r.path),
            if r.unreadable > 0 {
                format!("({} unreadable)", r.unreadable)
            } else {
                String::new()
            }
        );
    }
    println!();
    println!(
        "{:<28} {:>11} {:>8} {:>12} {:>12} {:>11}",
        "PRODUCER", "ALLOCATED", "ITEMS", "GROWTH/DAY", "RECLAIMABLE", "ORPHANED"
    );
    for p in &s.producers {
        println!(
            "{:<28} {:>11} {:>8} {:>12} {:>12} {:>11}",
            p.id,
            size(p.allocated_bytes),
            p.items,
            signed(p.growth_bytes_per_day),
            size(p.reclaimable_bytes),
            size(p.orphan_bytes)
        );
    }
    for u in s.unexplained_growth.iter().filter(|u| u.notable) {
        println!();
        println!("{}", super::format::escape(&u.message()));
    }
    for e in &s.errors {
        println!("note: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::free_text;

    #[test]
    fn free_space_says_how_much_of_it_is_purgeable_only_when_some_is() {
        // 118.6 GiB available as Finder counts it, 77.4 GiB of it purgeable.
        assert_eq!(
            free_text(Some(127_345_975_296), Some(83_088_621_568)),
            "119 GiB free (77.4 GiB purgeable)"
        );
        assert_eq!(free_text(Some(3 << 30), Some(0)), "3.0 GiB free");
        assert_eq!(free_text(Some(3 << 30), None), "3.0 GiB free");
        assert_eq!(free_text(None, Some(1)), "?");
    }
}
