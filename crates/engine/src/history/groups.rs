//! Groups of unattributed entries (unknown producers): their size samples and the writers the
//! evidence named, kept across restarts.
//!
//! A group is stored under its key ([`group_key`]): the root's path bytes, a NUL, and the bytes
//! of the key shape its members were collected under, so a group keeps its history while its
//! shown shape (`tmp<rand8>/`) changes with the members.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use cachewatch_core::provenance::EvidenceKind;
use cachewatch_core::shapes::{Part, Shape};
use rusqlite::{params, OptionalExtension};

use super::{from_sql_u64, from_unix_secs, to_sql_u64, unix_secs, Growth, History, HistoryError};

/// The key a group is stored under: the root's path bytes, NUL (no path holds it), for a group
/// one level down (`within` its top-level dir) `/`, the dir's name and NUL (a top-level group's
/// key goes on with `d` or `f`, never `/`), then the key shape: `d` or `f`, literal bytes as they
/// are and each placeholder as NUL, a kind byte and a length byte.
pub fn group_key(root: &Path, within: Option<&std::ffi::OsStr>, key: &Shape) -> Vec<u8> {
    let mut out = root.as_os_str().as_bytes().to_vec();
    out.push(0);
    if let Some(dir) = within {
        out.push(b'/');
        out.extend_from_slice(dir.as_bytes());
        out.push(0);
    }
    out.push(if key.dir { b'd' } else { b'f' });
    for p in &key.parts {
        let (kind, len) = match p {
            Part::Lit(b) => {
                out.extend_from_slice(b);
                continue;
            }
            Part::Uuid => (b'u', 36),
            Part::Ts => (b't', 0),
            Part::Hex(n) => (b'h', *n),
            // The key leaves the length of a digit run out (`shapes::shape_key`).
            Part::Digits(..) => (b'd', 0),
            Part::Rand(n) => (b'r', *n),
        };
        out.extend_from_slice(&[0, kind, u8::try_from(len).unwrap_or(u8::MAX)]);
    }
    out
}

/// A group key as text (lowercase hex), for APIs that carry it as a string.
pub fn key_hex(key: &[u8]) -> String {
    key.iter().map(|b| format!("{b:02x}")).collect()
}

/// A group key read back from [`key_hex`]; `None` when `s` is not even-length hex.
pub fn key_from_hex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// One measurement of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupSample {
    /// The group's key ([`group_key`]).
    pub key: Vec<u8>,
    /// The shape as shown now (`tmp<rand8>/`).
    pub label: String,
    /// Allocated bytes of its members.
    pub allocated_bytes: u64,
    /// Its members.
    pub items: u64,
}

/// A writer the evidence named for a group, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredWriter {
    /// The group's key ([`group_key`]).
    pub key: Vec<u8>,
    /// The kind of evidence that named it.
    pub kind: EvidenceKind,
    /// The executable name (the bundle id for [`EvidenceKind::InPath`]).
    pub name: String,
    /// The executable path, where known.
    pub exe: Option<PathBuf>,
    /// The app bundle id, where known.
    pub app: Option<String>,
    /// The app version, where known.
    pub app_version: Option<String>,
    /// Members that agreed, at the last sighting.
    pub agree: u64,
    /// Members looked at, at the last sighting.
    pub total: u64,
    /// When the evidence first named it.
    pub first_seen: SystemTime,
    /// When a writer it names was last seen alive, where known.
    pub last_seen: Option<SystemTime>,
    /// For [`EvidenceKind::PidInName`]: which run of ASCII digits in the members' names is the
    /// pid (0 = the first), as [`cachewatch_core::provenance::Evidence::pid_run`]; `None` for
    /// other kinds and for writers stored before it was kept.
    pub pid_run: Option<usize>,
}

/// The stored name of an evidence kind.
pub fn kind_text(kind: EvidenceKind) -> &'static str {
    match kind {
        EvidenceKind::PidInName => "pid-in-name",
        EvidenceKind::CreatedAtLaunch => "created-at-launch",
        EvidenceKind::Held => "held",
        EvidenceKind::InPath => "in-path",
    }
}

fn kind_from_text(s: &str) -> Option<EvidenceKind> {
    Some(match s {
        "pid-in-name" => EvidenceKind::PidInName,
        "created-at-launch" => EvidenceKind::CreatedAtLaunch,
        "held" => EvidenceKind::Held,
        "in-path" => EvidenceKind::InPath,
        _ => return None,
    })
}

impl History {
    /// Records `samples` of groups, all taken at `at`, and the `writers` seen then, in one
    /// transaction. A second sample of a group in the same second replaces the first; a writer
    /// already stored keeps its first sighting and the latest time it was seen alive.
    ///
    /// # Errors
    /// [`HistoryError`] naming this database; on error nothing is recorded.
    pub fn record_groups(
        &mut self,
        at: SystemTime,
        samples: &[GroupSample],
        writers: &[StoredWriter],
    ) -> Result<(), HistoryError> {
        self.check_file()?;
        let path = self.path.clone();
        let err = |op| super::sql_err(&path, op);
        let at = unix_secs(at);
        let tx = self
            .conn
            .transaction()
            .map_err(err("begin recording groups"))?;
        for s in samples {
            tx.prepare_cached(
                "INSERT OR REPLACE INTO group_samples (group_key, time_unix_secs, label, \
                 allocated_bytes, items) VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .and_then(|mut st| {
                st.execute(params![
                    s.key,
                    at,
                    s.label,
                    to_sql_u64(s.allocated_bytes),
                    to_sql_u64(s.items),
                ])
            })
            .map_err(err("record a group sample"))?;
        }
        for w in writers {
            tx.prepare_cached(
                "INSERT INTO group_writers (group_key, kind, name, exe_raw, app, app_version, \
                 agree, total, first_seen_unix_secs, last_seen_unix_secs, pid_run) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) \
                 ON CONFLICT (group_key, kind, name) DO UPDATE SET \
                 exe_raw = COALESCE(excluded.exe_raw, exe_raw), \
                 app = COALESCE(excluded.app, app), \
                 app_version = COALESCE(excluded.app_version, app_version), \
                 agree = excluded.agree, total = excluded.total, \
                 pid_run = COALESCE(excluded.pid_run, pid_run), \
                 first_seen_unix_secs = MIN(first_seen_unix_secs, excluded.first_seen_unix_secs), \
                 last_seen_unix_secs = CASE \
                   WHEN excluded.last_seen_unix_secs IS NULL THEN last_seen_unix_secs \
                   WHEN last_seen_unix_secs IS NULL THEN excluded.last_seen_unix_secs \
                   ELSE MAX(last_seen_unix_secs, excluded.last_seen_unix_secs) END",
            )
            .and_then(|mut st| {
                st.execute(params![
                    w.key,
                    kind_text(w.kind),
                    w.name,
                    w.exe.as_ref().map(|p| p.as_os_str().as_bytes().to_vec()),
                    w.app,
                    w.app_version,
                    to_sql_u64(w.agree),
                    to_sql_u64(w.total),
                    unix_secs(w.first_seen).min(at),
                    w.last_seen.map(unix_secs),
                    w.pid_run.and_then(|k| i64::try_from(k).ok()),
                ])
            })
            .map_err(err("record a group's writer"))?;
        }
        tx.commit().map_err(err("commit groups"))
    }

    /// Every writer stored for any group, ordered by group key, then kind and name.
    ///
    /// # Errors
    /// [`HistoryError`] naming this database.
    pub fn group_writers(&self) -> Result<Vec<StoredWriter>, HistoryError> {
        // A database opened read-only at an older schema has no `pid_run` yet: it reads as unknown.
        let sql = if self.schema >= super::schema::PID_RUN_SINCE {
            "SELECT group_key, kind, name, exe_raw, app, app_version, agree, total, \
             first_seen_unix_secs, last_seen_unix_secs, pid_run FROM group_writers \
             ORDER BY group_key, kind, name"
        } else {
            "SELECT group_key, kind, name, exe_raw, app, app_version, agree, total, \
             first_seen_unix_secs, last_seen_unix_secs, NULL FROM group_writers \
             ORDER BY group_key, kind, name"
        };
        let mut stmt = self
            .conn
            .prepare_cached(sql)
            .map_err(self.err("prepare reading group writers"))?;
        let rows = stmt
            .query_map([], |r| {
                let kind: String = r.get(1)?;
                let exe: Option<Vec<u8>> = r.get(3)?;
                let last: Option<i64> = r.get(9)?;
                let pid_run: Option<i64> = r.get(10)?;
                let w = StoredWriter {
                    key: r.get(0)?,
                    kind: EvidenceKind::InPath,
                    name: r.get(2)?,
                    exe: exe.map(|b| PathBuf::from(OsString::from_vec(b))),
                    app: r.get(4)?,
                    app_version: r.get(5)?,
                    agree: from_sql_u64(r.get(6)?),
                    total: from_sql_u64(r.get(7)?),
                    first_seen: from_unix_secs(r.get(8)?),
                    last_seen: last.map(from_unix_secs),
                    // Only a pid-in-name writer has one; a negative value (not ours) is unknown.
                    pid_run: pid_run.and_then(|k| usize::try_from(k).ok()),
                };
                // A kind this build does not know (a newer one wrote it) is left out.
                Ok(kind_from_text(&kind).map(|kind| StoredWriter { kind, ..w }))
            })
            .map_err(self.err("read group writers"))?;
        let mut out = Vec::new();
        for row in rows {
            out.extend(row.map_err(self.err("read group writers"))?);
        }
        Ok(out)
    }

    /// The samples of group `key` at or after `since`, oldest first, as
    /// `(time, allocated bytes, items)`; for charts. Empty when the group is unknown.
    ///
    /// # Errors
    /// [`HistoryError`] naming this database.
    pub fn group_series(
        &self,
        key: &[u8],
        since: SystemTime,
    ) -> Result<Vec<(SystemTime, u64, u64)>, HistoryError> {
        self.chart_points(
            "SELECT time_unix_secs, allocated_bytes, items FROM group_samples \
             WHERE group_key = ?1 AND time_unix_secs >= ?2 ORDER BY time_unix_secs",
            &key,
            since,
            "read group samples",
        )
    }

    /// Growth of group `key` over the `window` before `now`, measured as [`History::growth`]
    /// measures a series: from the newest sample at or before `now - window` (or the first one)
    /// to the newest at or before `now`. `None` without two such samples.
    ///
    /// # Errors
    /// [`HistoryError`] naming this database.
    pub fn group_growth(
        &self,
        key: &[u8],
        window: Duration,
        now: SystemTime,
    ) -> Result<Option<Growth>, HistoryError> {
        let since = unix_secs(now.checked_sub(window).unwrap_or(SystemTime::UNIX_EPOCH));
        let now = unix_secs(now);
        let point = |sql: &str, t: i64| {
            self.conn
                .prepare_cached(sql)?
                .query_row(params![key, t], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, i64>(2)?,
                    ))
                })
                .optional()
        };
        const BEFORE: &str = "SELECT time_unix_secs, allocated_bytes, items FROM group_samples \
             WHERE group_key = ?1 AND time_unix_secs <= ?2 ORDER BY time_unix_secs DESC LIMIT 1";
        const AFTER: &str = "SELECT time_unix_secs, allocated_bytes, items FROM group_samples \
             WHERE group_key = ?1 AND time_unix_secs >= ?2 ORDER BY time_unix_secs LIMIT 1";
        let read = || -> rusqlite::Result<Option<Growth>> {
            let from = match point(BEFORE, since)? {
                Some(p) => Some(p),
                None => point(AFTER, since)?,
            };
            let to = point(BEFORE, now)?;
            Ok(from
                .zip(to)
                .filter(|(f, t)| f.0 < t.0)
                .map(|(f, t)| Growth {
                    bytes: t.1.saturating_sub(f.1),
                    items: t.2.saturating_sub(f.2),
                    from: from_unix_secs(f.0),
                    to: from_unix_secs(t.0),
                }))
        };
        read().map_err(self.err("compute group growth"))
    }
}
