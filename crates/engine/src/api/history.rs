//! The history as the window reads it: a producer's samples and reclaims over a span (its chart),
//! a group of unattributed entries' samples (its chart),
//! and the past reclaims (the reclaim history panel). Read from the history database with a
//! read-only connection of its own, beside the monitor's writer (the file is in WAL mode).

use std::path::Path;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

pub use crate::history::{
    AutoRun, Growth, History, ProducerFreed, ReclaimRun, Series, StoredWriter,
};
use crate::units::unix_secs as unix_secs_u64;

use super::ApiError;

/// One sample of a producer: its size at a time.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChartSample {
    /// When, Unix seconds.
    pub time_unix_secs: u64,
    /// Allocated bytes of all its items.
    pub allocated_bytes: u64,
    /// Its items.
    pub items: u64,
}

/// One reclaim that deleted items of the producer, to mark on its chart.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChartReclaim {
    /// When it started, Unix seconds.
    pub time_unix_secs: u64,
    /// Items of this producer deleted.
    pub items: u64,
    /// Allocated bytes of this producer freed.
    pub bytes: u64,
    /// The auto-reclaim rule that ran it; absent when asked for in the app or the CLI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
}

/// A producer's history over a span: what its chart shows.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProducerHistory {
    /// The producer id.
    pub producer: String,
    /// The span asked for: from, Unix seconds.
    pub from_unix_secs: u64,
    /// ... to (now), Unix seconds.
    pub to_unix_secs: u64,
    /// Its samples in the span, oldest first.
    pub samples: Vec<ChartSample>,
    /// The reclaims in the span that deleted its items, oldest first.
    pub reclaims: Vec<ChartReclaim>,
}

/// A group of unattributed entries' history over a span: what its chart shows.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupHistory {
    /// The group's key as the snapshot gives it (`history_key`).
    pub key: String,
    /// The span asked for: from, Unix seconds.
    pub from_unix_secs: u64,
    /// ... to (now), Unix seconds.
    pub to_unix_secs: u64,
    /// Its samples in the span, oldest first.
    pub samples: Vec<ChartSample>,
}

/// The reclaims over a span: the window's reclaim history.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReclaimHistory {
    /// The span asked for: from, Unix seconds.
    pub from_unix_secs: u64,
    /// ... to (now), Unix seconds.
    pub to_unix_secs: u64,
    /// The reclaims, newest first.
    pub runs: Vec<ReclaimRun>,
}

/// The history database at `db`, read-only; `None` when there is none yet (no data dir, or the
/// monitor has not written it yet): an empty history, not an error.
fn open(db: Option<&Path>) -> Result<Option<History>, ApiError> {
    match db {
        Some(p) if p.exists() => History::open_read_only(p)
            .map(Some)
            .map_err(|e| ApiError::History(Box::new(e))),
        _ => Ok(None),
    }
}

/// The samples of `producer` and the reclaims that deleted its items, from `now - span` to `now`.
///
/// # Errors
/// [`ApiError::History`] when the database cannot be read (locked, corrupt, too new).
pub fn producer_history(
    db: Option<&Path>,
    producer: &str,
    span: Duration,
    now: SystemTime,
) -> Result<ProducerHistory, ApiError> {
    let since = now.checked_sub(span).unwrap_or(SystemTime::UNIX_EPOCH);
    let mut out = ProducerHistory {
        producer: producer.to_owned(),
        from_unix_secs: unix_secs_u64(since),
        to_unix_secs: unix_secs_u64(now),
        samples: Vec::new(),
        reclaims: Vec::new(),
    };
    let Some(h) = open(db)? else {
        return Ok(out);
    };
    let err = |e| ApiError::History(Box::new(e));
    out.samples = h
        .series(&Series::Producer(producer.to_owned()), since)
        .map_err(err)?
        .into_iter()
        .map(|(t, allocated_bytes, items)| ChartSample {
            time_unix_secs: unix_secs_u64(t),
            allocated_bytes,
            items,
        })
        .collect();
    out.reclaims = h
        .reclaim_runs(since)
        .map_err(err)?
        .into_iter()
        .filter_map(|run| {
            let freed = run.by_producer.get(producer).copied()?;
            (freed.items > 0).then_some(ChartReclaim {
                time_unix_secs: run.started_unix_secs,
                items: freed.items,
                bytes: freed.bytes,
                rule: run.rule,
            })
        })
        .collect();
    Ok(out)
}

/// The samples of the group of unattributed entries stored under `key` (the snapshot's
/// `history_key`, hex), from `now - span` to `now`.
///
/// # Errors
/// [`ApiError::GroupKey`] when `key` is not hex; [`ApiError::History`] when the database
/// cannot be read.
pub fn group_history(
    db: Option<&Path>,
    key: &str,
    span: Duration,
    now: SystemTime,
) -> Result<GroupHistory, ApiError> {
    let raw = crate::history::key_from_hex(key).ok_or_else(|| ApiError::GroupKey {
        key: key.to_owned(),
    })?;
    let since = now.checked_sub(span).unwrap_or(SystemTime::UNIX_EPOCH);
    let mut out = GroupHistory {
        key: key.to_owned(),
        from_unix_secs: unix_secs_u64(since),
        to_unix_secs: unix_secs_u64(now),
        samples: Vec::new(),
    };
    let Some(h) = open(db)? else {
        return Ok(out);
    };
    out.samples = h
        .group_series(&raw, since)
        .map_err(|e| ApiError::History(Box::new(e)))?
        .into_iter()
        .map(|(t, allocated_bytes, items)| ChartSample {
            time_unix_secs: unix_secs_u64(t),
            allocated_bytes,
            items,
        })
        .collect();
    Ok(out)
}

/// The reclaims from `now - span` to `now`, newest first.
///
/// # Errors
/// [`ApiError::History`] when the database cannot be read.
pub fn reclaim_history(
    db: Option<&Path>,
    span: Duration,
    now: SystemTime,
) -> Result<ReclaimHistory, ApiError> {
    let since = now.checked_sub(span).unwrap_or(SystemTime::UNIX_EPOCH);
    let mut out = ReclaimHistory {
        from_unix_secs: unix_secs_u64(since),
        to_unix_secs: unix_secs_u64(now),
        runs: Vec::new(),
    };
    if let Some(h) = open(db)? {
        out.runs = h
            .reclaim_runs(since)
            .map_err(|e| ApiError::History(Box::new(e)))?;
        out.runs.reverse();
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::UNIX_EPOCH;

    use super::*;
    use crate::history::Sample;
    use crate::reclaim::AuditRecord;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn a_groups_history_has_its_samples_in_the_span_and_a_bad_key_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("cachewatch.db");
        let key = b"/t\0dwrk_\0d\0".to_vec();
        {
            let mut h = History::open(&db).expect("open");
            for (t, bytes, items) in [(1_000, 10, 1), (5_000, 20, 2), (9_000, 30, 3)] {
                let s = crate::history::GroupSample {
                    key: key.clone(),
                    label: "wrk_<digits4>/".into(),
                    allocated_bytes: bytes,
                    items,
                };
                h.record_groups(at(t), &[s], &[]).expect("group sample");
            }
        }
        let hex = crate::history::key_hex(&key);
        let got = group_history(Some(&db), &hex, Duration::from_secs(6_000), at(10_000))
            .expect("history");
        let points: Vec<(u64, u64, u64)> = got
            .samples
            .iter()
            .map(|s| (s.time_unix_secs, s.allocated_bytes, s.items))
            .collect();
        assert_eq!(points, vec![(5_000, 20, 2), (9_000, 30, 3)]);
        let err = group_history(Some(&db), "zz", Duration::from_secs(60), at(10_000))
            .expect_err("not hex");
        assert!(err.to_string().contains("\"zz\""), "{err}");
    }

    #[test]
    fn a_producers_history_has_its_samples_in_the_span_and_its_reclaims_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("cachewatch.db");
        {
            let mut h = History::open(&db).expect("open");
            for (t, bytes) in [(1_000, 10), (5_000, 20), (9_000, 30)] {
                let s = Sample {
                    series: Series::Producer("metal".into()),
                    allocated_bytes: bytes,
                    apparent_bytes: bytes,
                    items: bytes / 10,
                };
                h.record_samples(at(t), &[s]).expect("samples");
            }
            let rec = |t, producer: &str, bytes| AuditRecord {
                time: at(t),
                path: PathBuf::from("/t/x"),
                producer: producer.into(),
                allocated_bytes: bytes,
                outcome: "deleted".into(),
            };
            h.record_reclaims(&[
                rec(6_000, "metal", 4096),
                rec(6_000, "swift", 1),
                rec(7_000, "swift", 2),
            ])
            .expect("reclaims");
        }
        let got = producer_history(Some(&db), "metal", Duration::from_secs(6_000), at(10_000))
            .expect("history");
        assert_eq!((got.from_unix_secs, got.to_unix_secs), (4_000, 10_000));
        let points: Vec<(u64, u64, u64)> = got
            .samples
            .iter()
            .map(|s| (s.time_unix_secs, s.allocated_bytes, s.items))
            .collect();
        assert_eq!(points, [(5_000, 20, 2), (9_000, 30, 3)]);
        assert_eq!(
            got.reclaims,
            [ChartReclaim {
                time_unix_secs: 6_000,
                items: 1,
                bytes: 4096,
                rule: None
            }]
        );
        let runs =
            reclaim_history(Some(&db), Duration::from_secs(6_000), at(10_000)).expect("runs");
        assert_eq!(runs.runs.len(), 2);
        assert_eq!(runs.runs[0].started_unix_secs, 7_000, "newest first");
    }

    #[test]
    fn no_database_yet_is_an_empty_history() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("none.db");
        let got =
            producer_history(Some(&db), "metal", Duration::from_secs(60), at(100)).expect("ok");
        assert!(got.samples.is_empty() && got.reclaims.is_empty());
        let runs = reclaim_history(Some(&db), Duration::from_secs(60), at(100)).expect("ok");
        assert_eq!((runs.from_unix_secs, runs.to_unix_secs), (40, 100));
        assert!(runs.runs.is_empty());
        let none = reclaim_history(None, Duration::from_secs(60), at(100)).expect("ok");
        assert!(none.runs.is_empty());
        assert!(!db.exists(), "reading never creates the database");
    }
}
