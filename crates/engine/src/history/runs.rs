//! Past reclaims as people think of them: one entry per reclaim (asked for in the app or the CLI,
//! or run by an auto-reclaim rule), not one per deleted item. Built from the audit table
//! (`reclaims`) and the auto-reclaim runs (`auto_reclaim_runs`).
//!
//! The audit table has no reclaim id: its rows are grouped by time, a gap of more than
//! [`RUN_GAP_SECS`] between two rows starting a new reclaim. A group that falls within an
//! auto-reclaim run's span is that run, and the run's own record (which also counts the items
//! kept at planning) stands for it.

use std::collections::BTreeMap;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::{from_sql_u64, unix_secs, AutoRun, History, HistoryError, ProducerFreed};
use crate::reclaim::AuditOutcome;

/// Two audit rows further apart than this (seconds) belong to two reclaims.
pub const RUN_GAP_SECS: u64 = 60;

/// One past reclaim, for the window's history panel and the producer charts.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReclaimRun {
    /// When its first deletion was tried (an auto run: when its plan was made), Unix seconds.
    pub started_unix_secs: u64,
    /// When its last deletion was tried (an auto run: when it ended), Unix seconds.
    pub finished_unix_secs: u64,
    /// The auto-reclaim rule that ran it; absent for a reclaim asked for in the app or the CLI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// Items deleted.
    pub deleted_items: u64,
    /// Allocated bytes freed (as measured in the plan).
    pub freed_bytes: u64,
    /// Items already gone when reached (not an error).
    pub already_gone: u64,
    /// Items kept, by reason (`in-use`, `changed`, `too-young`, ...). For an asked-for reclaim
    /// only those kept at the re-check before deleting (the audit table's `skipped: REASON`).
    pub kept: BTreeMap<String, u64>,
    /// Items that failed (or whose outcome was never written: interrupted).
    pub errors: u64,
    /// The first error's text, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
    /// What was deleted, per producer id.
    pub by_producer: BTreeMap<String, ProducerFreed>,
}

/// One audit row, as the grouping needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRow {
    /// When, Unix seconds.
    pub time_unix_secs: u64,
    /// The producer id.
    pub producer: String,
    /// Allocated bytes of the item in the plan.
    pub allocated_bytes: u64,
    /// What became of the item (as written: `deleted`, `already-gone`, `skipped: REASON`,
    /// `error: MESSAGE` or `attempt`).
    pub outcome: AuditOutcome,
}

/// The reclaims of `rows` (oldest first) and `autos`, oldest first: audit groups within an auto
/// run's span are that run; auto runs that deleted nothing and failed nothing are left out (an
/// interval rule that found nothing old enough is not a reclaim).
pub fn group_runs(rows: &[AuditRow], autos: &[AutoRun]) -> Vec<ReclaimRun> {
    let mut out: Vec<ReclaimRun> = autos
        .iter()
        .filter(|a| {
            a.deleted_items > 0 || a.errors > 0 || a.status == crate::dto::RunStatus::Failed
        })
        .map(from_auto)
        .collect();
    let mut group: Vec<&AuditRow> = Vec::new();
    let mut flush = |group: &mut Vec<&AuditRow>| {
        if let Some(first) = group.first() {
            let start = first.time_unix_secs;
            let in_auto = autos.iter().any(|a| {
                start >= a.started_unix_secs && start <= a.finished_unix_secs.saturating_add(1)
            });
            if !in_auto {
                out.push(from_audit(group));
            }
        }
        group.clear();
    };
    for row in rows {
        let gap = group.last().is_some_and(|last| {
            row.time_unix_secs.saturating_sub(last.time_unix_secs) > RUN_GAP_SECS
        });
        if gap {
            flush(&mut group);
        }
        group.push(row);
    }
    flush(&mut group);
    out.sort_by_key(|r| (r.started_unix_secs, r.finished_unix_secs));
    out
}

fn from_auto(a: &AutoRun) -> ReclaimRun {
    ReclaimRun {
        started_unix_secs: a.started_unix_secs,
        finished_unix_secs: a.finished_unix_secs,
        rule: Some(a.rule.clone()),
        deleted_items: a.deleted_items,
        freed_bytes: a.freed_bytes,
        already_gone: a.already_gone,
        kept: a.kept.clone(),
        errors: a.errors,
        first_error: a.first_error.clone(),
        by_producer: a.by_producer.clone(),
    }
}

fn from_audit(group: &[&AuditRow]) -> ReclaimRun {
    let mut run = ReclaimRun {
        started_unix_secs: group.first().map_or(0, |r| r.time_unix_secs),
        finished_unix_secs: group.last().map_or(0, |r| r.time_unix_secs),
        ..ReclaimRun::default()
    };
    for row in group {
        match &row.outcome {
            AuditOutcome::Deleted => {
                run.deleted_items += 1;
                run.freed_bytes += row.allocated_bytes;
                let p = run.by_producer.entry(row.producer.clone()).or_default();
                p.items += 1;
                p.bytes += row.allocated_bytes;
            }
            AuditOutcome::AlreadyGone => run.already_gone += 1,
            AuditOutcome::Skipped(reason) => *run.kept.entry(reason.clone()).or_default() += 1,
            other => {
                run.errors += 1;
                if run.first_error.is_none() {
                    let interrupted =
                        matches!(other, AuditOutcome::Attempt | AuditOutcome::Interrupted);
                    run.first_error = Some(if interrupted {
                        format!(
                            "{}: interrupted (the app or the CLI stopped mid-reclaim)",
                            row.producer
                        )
                    } else {
                        other.detail().to_owned()
                    });
                }
            }
        }
    }
    run
}

impl History {
    /// The audit rows at or after `since` as [`AuditRow`]s (no paths), oldest first.
    ///
    /// # Errors
    /// [`HistoryError`] naming this database.
    pub fn audit_rows(&self, since: SystemTime) -> Result<Vec<AuditRow>, HistoryError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT time_unix_secs, producer, allocated_bytes, outcome FROM reclaims \
                 WHERE time_unix_secs >= ?1 ORDER BY time_unix_secs, id",
            )
            .map_err(self.err("prepare reading reclaims"))?;
        let rows = stmt
            .query_map([unix_secs(since)], |row| {
                Ok(AuditRow {
                    time_unix_secs: from_sql_u64(row.get(0)?),
                    producer: row.get(1)?,
                    allocated_bytes: from_sql_u64(row.get(2)?),
                    outcome: AuditOutcome::parse(&row.get::<_, String>(3)?),
                })
            })
            .map_err(self.err("read reclaims"))?;
        rows.collect::<Result<_, _>>()
            .map_err(self.err("read reclaims"))
    }

    /// The reclaims that started at or after `since`, oldest first (see [`group_runs`]).
    ///
    /// # Errors
    /// [`HistoryError`] naming this database.
    pub fn reclaim_runs(&self, since: SystemTime) -> Result<Vec<ReclaimRun>, HistoryError> {
        Ok(group_runs(
            &self.audit_rows(since)?,
            &self.auto_runs(since)?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::super::ATTEMPT;
    use super::*;

    fn row(t: u64, producer: &str, bytes: u64, outcome: &str) -> AuditRow {
        AuditRow {
            time_unix_secs: t,
            producer: producer.into(),
            allocated_bytes: bytes,
            outcome: outcome.into(),
        }
    }

    #[test]
    fn audit_rows_a_minute_apart_are_two_reclaims_with_their_counts() {
        let rows = [
            row(1000, "metal", 100, "deleted"),
            row(1001, "metal", 50, "deleted"),
            row(1001, "swift", 7, "deleted"),
            row(1002, "metal", 9, "skipped: in-use"),
            row(1002, "metal", 9, "already-gone"),
            row(1003, "metal", 9, "error: permission denied"),
            row(1003 + RUN_GAP_SECS + 1, "swift", 30, "deleted"),
        ];
        let runs = group_runs(&rows, &[]);
        assert_eq!(runs.len(), 2);
        let first = &runs[0];
        assert_eq!(
            (first.started_unix_secs, first.finished_unix_secs),
            (1000, 1003)
        );
        assert_eq!(first.rule, None);
        assert_eq!((first.deleted_items, first.freed_bytes), (3, 157));
        assert_eq!(
            first.by_producer["metal"],
            ProducerFreed {
                items: 2,
                bytes: 150
            }
        );
        assert_eq!(
            first.by_producer["swift"],
            ProducerFreed { items: 1, bytes: 7 }
        );
        assert_eq!(first.kept.get("in-use"), Some(&1));
        assert_eq!((first.already_gone, first.errors), (1, 1));
        assert_eq!(first.first_error.as_deref(), Some("permission denied"));
        assert_eq!((runs[1].deleted_items, runs[1].freed_bytes), (1, 30));
    }

    #[test]
    fn an_auto_run_stands_for_its_audit_rows_and_empty_runs_are_left_out() {
        let auto = AutoRun {
            rule: "metal-daily".into(),
            status: crate::dto::RunStatus::Done,
            started_unix_secs: 2000,
            finished_unix_secs: 2005,
            deleted_items: 1,
            freed_bytes: 64,
            kept: BTreeMap::from([("too-young".to_owned(), 4)]),
            by_producer: BTreeMap::from([(
                "metal".to_owned(),
                ProducerFreed {
                    items: 1,
                    bytes: 64,
                },
            )]),
            ..AutoRun::default()
        };
        let idle = AutoRun {
            rule: "metal-daily".into(),
            status: crate::dto::RunStatus::Done,
            started_unix_secs: 3000,
            finished_unix_secs: 3000,
            ..AutoRun::default()
        };
        let rows = [
            row(1000, "metal", 5, "deleted"),
            row(2003, "metal", 64, "deleted"),
        ];
        let runs = group_runs(&rows, &[auto, idle]);
        assert_eq!(runs.len(), 2, "{runs:?}");
        assert_eq!((runs[0].rule.as_deref(), runs[0].freed_bytes), (None, 5));
        assert_eq!(runs[1].rule.as_deref(), Some("metal-daily"));
        assert_eq!(runs[1].kept.get("too-young"), Some(&4));
        assert_eq!(
            runs[1].deleted_items, 1,
            "the audit row is not counted twice"
        );
    }

    #[test]
    fn an_interrupted_row_is_an_error_that_says_so() {
        let runs = group_runs(&[row(10, "metal", 5, ATTEMPT)], &[]);
        assert_eq!(runs[0].errors, 1);
        assert!(runs[0]
            .first_error
            .as_deref()
            .is_some_and(|e| e.contains("interrupted")));
    }
}
