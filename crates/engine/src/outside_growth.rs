//! Growth outside the watched roots: when a volume's free space falls by much more than
//! the watched roots on it grew over the same window, something outside them is growing (for
//! example `/private/tmp`, or a system cache such as the ANE compiler's; `docs/producers.md`,
//! `claude-code-tmp` and `ane-compiler-aned`).
//!
//! The monitor records the free bytes of each volume holding a root with every sample (a
//! [`Series::VolumeFree`] beside the [`Series::Root`]s, in the same transaction, so both have
//! points at the same seconds). [`unexplained_growth`] then walks the consecutive sample pairs of
//! the window, per volume, and sums
//!
//! ```text
//! unexplained = (free space before - free space after) - (sum of its roots' growth)
//! ```
//!
//! Roots on different volumes are compared with their own volume's free space only.
//!
//! **Reclaims.** A deletion raises free space and shrinks a root by about the same amount, so it
//! cancels out, except when it does not free what it removed (APFS clones, files still open): then
//! the roots shrink more than free space rises and the difference would read as growth outside.
//! So a pair of samples is left out when a deletion that may have freed space (audit outcome
//! `deleted`, `attempt` or `interrupted`) was recorded in it or in the [`RECLAIM_TAIL`] before it
//! started (a long reclaim keeps deleting after its rows are written); the time left out is
//! reported ([`Unexplained::left_out`]) and said in the text. Reclaims neither fake growth nor
//! hide it where it was measured.
//!
//! **When it is worth saying** ([`Unexplained::is_notable`]): the unexplained fall is at least
//! [`AlertsConfig::unexplained_growth_min_bytes`](crate::alerts::AlertsConfig::unexplained_growth_min_bytes)
//! (default 1 GiB: below that, swap files and local snapshots come and go) and at least
//! [`AlertsConfig::unexplained_growth_min_ratio`](crate::alerts::AlertsConfig::unexplained_growth_min_ratio)
//! times the roots' growth (default 1: outside grew at least as much as the watched dirs; a ratio
//! of 10 hid a 3 GiB outside growth beside 5 GiB of root growth). The `unexplained-growth` alert is
//! off by default
//! ([`AlertsConfig::unexplained_growth_alert`](crate::alerts::AlertsConfig::unexplained_growth_alert)):
//! a large download into `~/Downloads` is growth outside the roots too, and a notification for each
//! is noise; `status`, the app's banner and `/metrics` show it whatever the setting.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::history::{History, HistoryError, Sample, Series};
use crate::units::{format_bytes, format_span};

/// A deletion recorded this long before a sample pair started still leaves the pair out.
pub const RECLAIM_TAIL: Duration = Duration::from_secs(15 * 60);

/// A volume and the roots on it (their history series).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeRoots {
    /// The volume's mount point (as [`VolumeSpace::mount`]).
    pub mount: PathBuf,
    /// The [`Series::Root`]s of the watched roots on it.
    pub roots: Vec<Series>,
}

/// Groups roots by the volume holding them: `roots` pairs a root's series with its volume's mount
/// point (`None` when unknown: left out). Ordered by mount point; roots in the given order.
#[must_use]
pub fn group_by_volume(
    roots: impl IntoIterator<Item = (Series, Option<PathBuf>)>,
) -> Vec<VolumeRoots> {
    let mut out: Vec<VolumeRoots> = Vec::new();
    for (series, mount) in roots {
        let Some(mount) = mount else { continue };
        match out.iter_mut().find(|v| v.mount == mount) {
            Some(v) => v.roots.push(series),
            None => out.push(VolumeRoots {
                mount,
                roots: vec![series],
            }),
        }
    }
    out.sort_by(|a, b| a.mount.cmp(&b.mount));
    out
}

/// The free-space samples to record beside the root samples: one per distinct volume in
/// `space`, given as `(mount point, free bytes, volume bytes)` (free bytes in `allocated_bytes`,
/// the volume's size in `apparent_bytes`).
pub fn volume_samples<'a>(space: impl IntoIterator<Item = (&'a str, u64, u64)>) -> Vec<Sample> {
    let mut out: Vec<Sample> = Vec::new();
    for (mount, free_bytes, volume_bytes) in space {
        let series = Series::VolumeFree {
            mount: PathBuf::from(mount),
        };
        if out.iter().all(|s| s.series != series) {
            out.push(Sample {
                series,
                allocated_bytes: free_bytes,
                apparent_bytes: volume_bytes,
                items: 0,
            });
        }
    }
    out
}

/// Free-space fall against root growth on one volume over a window.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unexplained {
    /// The volume's mount point.
    pub mount: String,
    /// First sample of the window, Unix seconds.
    pub from_unix_secs: u64,
    /// Last sample of the window, Unix seconds.
    pub to_unix_secs: u64,
    /// How much free space fell over the pairs measured, bytes (negative when it rose).
    pub free_fall_bytes: i64,
    /// How much the watched roots on the volume grew over the same pairs, bytes (negative when
    /// they shrank).
    pub roots_growth_bytes: i64,
    /// `free_fall_bytes - roots_growth_bytes`: growth outside the roots, bytes. The gauge
    /// `cachewatch_unexplained_growth_bytes{mount}`.
    pub unexplained_bytes: i64,
    /// Seconds of the window left out because a reclaim ran in them (see the module docs).
    pub left_out_secs: u64,
    /// True when it passes the thresholds ([`Unexplained::is_notable`]): say it.
    pub notable: bool,
    /// The sentence ([`Unexplained::message`]), as `cachewatch status` and the window say it.
    #[serde(default)]
    pub message: String,
}

impl Unexplained {
    /// The span from the first to the last sample.
    pub fn span(&self) -> Duration {
        Duration::from_secs(self.to_unix_secs.saturating_sub(self.from_unix_secs))
    }

    /// The time left out because of reclaims.
    pub fn left_out(&self) -> Duration {
        Duration::from_secs(self.left_out_secs)
    }

    /// True when the unexplained fall is at least `min_bytes` and at least `min_ratio` times the
    /// roots' growth (their growth counts as 0 when they shrank).
    pub fn is_notable(&self, min_bytes: u64, min_ratio: u64) -> bool {
        let floor = i128::from(min_bytes)
            .max(i128::from(min_ratio) * i128::from(self.roots_growth_bytes.max(0)));
        self.unexplained_bytes > 0 && i128::from(self.unexplained_bytes) >= floor
    }

    /// The sentence: "Free space on / fell 42.0 GiB in 6 h; the watched dirs grew 1.2 GiB: something
    /// outside them is growing (for example /private/tmp)."
    pub fn message(&self) -> String {
        let roots = if self.roots_growth_bytes < 0 {
            format!(
                "shrank {}",
                format_bytes((-i128::from(self.roots_growth_bytes)).max(0))
            )
        } else {
            format!("grew {}", format_bytes(self.roots_growth_bytes.into()))
        };
        let left_out = if self.left_out_secs > 0 {
            format!(
                " ({} with reclaims left out)",
                format_span(self.left_out_secs)
            )
        } else {
            String::new()
        };
        format!(
            "Free space on {} fell {} in {}{left_out}; the watched dirs {roots}: something \
             outside them is growing (for example /private/tmp).",
            self.mount,
            format_bytes(self.free_fall_bytes.into()),
            format_span(self.span().as_secs()),
        )
    }
}

/// The value of `points` (oldest first) at `t`: the newest point at or before it.
fn value_at(points: &[(SystemTime, u64)], t: SystemTime) -> Option<u64> {
    points
        .iter()
        .take_while(|(at, _)| *at <= t)
        .last()
        .map(|(_, v)| *v)
}

fn delta(before: u64, after: u64) -> i64 {
    let d = i128::from(after) - i128::from(before);
    i64::try_from(d).unwrap_or(if d < 0 { i64::MIN } else { i64::MAX })
}

/// The window and thresholds of the check: the `[alerts]` keys `unexplained_growth_window`,
/// `unexplained_growth_min_bytes` and `unexplained_growth_min_ratio` (the alerts' config converts
/// into this, so `unexplained_growth` takes `&AlertsConfig`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The span of samples looked at, before now.
    pub window: Duration,
    /// Unexplained bytes below this are not notable.
    pub min_bytes: u64,
    /// Unexplained bytes below this many times the roots' growth are not notable.
    pub min_ratio: u64,
}

/// Growth outside the roots on each volume of `volumes` over the window before `now`, from the
/// history `h` (see the module docs for the sum, reclaims and thresholds, which come from
/// `limits`). A volume with fewer than two free-space samples in the window is left out.
///
/// # Errors
/// [`HistoryError`] naming the database.
pub fn unexplained_growth(
    h: &History,
    volumes: &[VolumeRoots],
    limits: impl Into<Limits>,
    now: SystemTime,
) -> Result<Vec<Unexplained>, HistoryError> {
    let limits: Limits = limits.into();
    let since = now
        .checked_sub(limits.window)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    let mut out = Vec::new();
    for v in volumes {
        let free = h.points(
            &Series::VolumeFree {
                mount: v.mount.clone(),
            },
            since,
            now,
        )?;
        let (Some(first), Some(last)) = (free.first(), free.last()) else {
            continue;
        };
        if free.len() < 2 {
            continue;
        }
        let roots = v
            .roots
            .iter()
            .map(|s| h.points(s, first.0, now))
            .collect::<Result<Vec<_>, _>>()?;
        let tail_start = first
            .0
            .checked_sub(RECLAIM_TAIL)
            .unwrap_or(SystemTime::UNIX_EPOCH);
        let reclaims = h.freeing_reclaim_times(tail_start, now)?;
        let (mut fall, mut grew, mut left_out) = (0i64, 0i64, Duration::ZERO);
        for pair in free.windows(2) {
            let ((a, free_a), (b, free_b)) = (pair[0], pair[1]);
            let reclaimed = reclaims
                .iter()
                .any(|r| *r <= b && r.checked_add(RECLAIM_TAIL).is_some_and(|end| end > a));
            if reclaimed {
                left_out += b.duration_since(a).unwrap_or_default();
                continue;
            }
            fall = fall.saturating_add(delta(free_b, free_a));
            for points in &roots {
                if let (Some(ra), Some(rb)) = (value_at(points, a), value_at(points, b)) {
                    grew = grew.saturating_add(delta(ra, rb));
                }
            }
        }
        let mut u = Unexplained {
            mount: v.mount.to_string_lossy().into_owned(),
            from_unix_secs: crate::units::unix_secs(first.0),
            to_unix_secs: crate::units::unix_secs(last.0),
            free_fall_bytes: fall,
            roots_growth_bytes: grew,
            unexplained_bytes: fall.saturating_sub(grew),
            left_out_secs: left_out.as_secs(),
            notable: false,
            message: String::new(),
        };
        u.notable = u.is_notable(limits.min_bytes, limits.min_ratio);
        u.message = u.message();
        out.push(u);
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
