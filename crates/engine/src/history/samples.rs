//! Size samples per series (producer, root, total).

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;
use std::time::SystemTime;

use rusqlite::{params, OptionalExtension};

use super::{from_sql_u64, from_unix_secs, to_sql_u64, unix_secs, History, HistoryError};
use crate::roots::RootKind;

/// What a sample measures.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Series {
    /// All items of one producer (rule id).
    Producer(String),
    /// A whole root.
    Root {
        /// Its kind.
        kind: RootKind,
        /// Its path as given.
        path: PathBuf,
    },
    /// All roots together.
    Total,
    /// Free bytes of one volume (stored in the `allocated_bytes` column; `apparent_bytes` holds
    /// the volume's size and `items` is 0), for the growth-outside-the-roots check
    /// ([`crate::outside_growth`]).
    VolumeFree {
        /// The volume's mount point.
        mount: PathBuf,
    },
}

impl Series {
    /// `(kind, name, path bytes)` as stored in the `series` table.
    fn key(&self) -> (&'static str, &str, &[u8]) {
        match self {
            Series::Producer(id) => ("producer", id, &[]),
            Series::Root { kind, path } => {
                ("root", kind.as_str(), path.as_os_str().as_encoded_bytes())
            }
            Series::Total => ("total", "", &[]),
            Series::VolumeFree { mount } => {
                ("volume-free", "", mount.as_os_str().as_encoded_bytes())
            }
        }
    }

    fn from_key(kind: &str, name: String, raw: Vec<u8>) -> Option<Series> {
        match kind {
            "producer" => Some(Series::Producer(name)),
            "root" => Some(Series::Root {
                kind: name.parse().ok()?,
                path: PathBuf::from(OsString::from_vec(raw)),
            }),
            "total" => Some(Series::Total),
            "volume-free" => Some(Series::VolumeFree {
                mount: PathBuf::from(OsString::from_vec(raw)),
            }),
            _ => None,
        }
    }

    /// A short label: `producer ID`, `root KIND PATH`, `total` or `free space MOUNT`.
    pub fn label(&self) -> String {
        match self {
            Series::Producer(id) => format!("producer {id}"),
            Series::Root { kind, path } => format!("root {kind} {}", path.display()),
            Series::Total => "total".to_string(),
            Series::VolumeFree { mount } => format!("free space {}", mount.display()),
        }
    }
}

/// One measurement of a series.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    /// What was measured.
    pub series: Series,
    /// Allocated bytes (as `du -k`).
    pub allocated_bytes: u64,
    /// Apparent bytes (as `du -b`).
    pub apparent_bytes: u64,
    /// Items.
    pub items: u64,
}

impl History {
    /// The id of `series` in the `series` table, creating the row if `create`.
    pub(super) fn series_id(
        conn: &rusqlite::Connection,
        series: &Series,
        create: bool,
    ) -> rusqlite::Result<Option<i64>> {
        let (kind, name, raw) = series.key();
        let found = conn
            .prepare_cached(
                "SELECT id FROM series WHERE kind = ?1 AND name = ?2 AND path_raw = ?3",
            )?
            .query_row(params![kind, name, raw], |r| r.get(0))
            .optional()?;
        if found.is_some() || !create {
            return Ok(found);
        }
        let text = match series {
            Series::Root { path, .. } => path.to_string_lossy().into_owned(),
            Series::VolumeFree { mount } => mount.to_string_lossy().into_owned(),
            _ => String::new(),
        };
        conn.prepare_cached(
            "INSERT INTO series (kind, name, path_text, path_raw) VALUES (?1, ?2, ?3, ?4)",
        )?
        .execute(params![kind, name, text, raw])?;
        Ok(Some(conn.last_insert_rowid()))
    }

    /// Records `samples`, all taken at `at`, in one transaction. A second sample of a series in
    /// the same second replaces the first.
    ///
    /// # Errors
    /// [`HistoryError`] naming this database; on error nothing is recorded.
    pub fn record_samples(
        &mut self,
        at: SystemTime,
        samples: &[Sample],
    ) -> Result<(), HistoryError> {
        self.check_file()?;
        let path = self.path.clone();
        let err = |op| super::sql_err(&path, op);
        let at = unix_secs(at);
        let tx = self
            .conn
            .transaction()
            .map_err(err("begin recording samples"))?;
        for s in samples {
            let id = History::series_id(&tx, &s.series, true)
                .map_err(err("record a series"))?
                .unwrap_or_default();
            tx.prepare_cached(
                "INSERT OR REPLACE INTO samples (series_id, time_unix_secs, allocated_bytes, \
                 apparent_bytes, items) VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .and_then(|mut st| {
                st.execute(params![
                    id,
                    at,
                    to_sql_u64(s.allocated_bytes),
                    to_sql_u64(s.apparent_bytes),
                    to_sql_u64(s.items),
                ])
            })
            .map_err(err("record a sample"))?;
        }
        tx.commit().map_err(err("commit samples"))
    }

    /// The newest sample of every series with its time, ordered by series. The monitor compares
    /// its first scan after a start with these ("what grew while the monitor was not running").
    ///
    /// # Errors
    /// [`HistoryError`] naming this database.
    pub fn last_samples(&self) -> Result<Vec<(SystemTime, Sample)>, HistoryError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT s.kind, s.name, s.path_raw, x.time_unix_secs, x.allocated_bytes, \
                 x.apparent_bytes, x.items FROM series s JOIN samples x ON x.series_id = s.id \
                 WHERE x.time_unix_secs = (SELECT MAX(time_unix_secs) FROM samples \
                 WHERE series_id = s.id)",
            )
            .map_err(self.err("prepare reading last samples"))?;
        let rows = stmt
            .query_map([], |r| {
                let series = Series::from_key(&r.get::<_, String>(0)?, r.get(1)?, r.get(2)?);
                let time = from_unix_secs(r.get(3)?);
                let (allocated, apparent, items) = (r.get(4)?, r.get(5)?, r.get(6)?);
                Ok(series.map(|series| {
                    (
                        time,
                        Sample {
                            series,
                            allocated_bytes: from_sql_u64(allocated),
                            apparent_bytes: from_sql_u64(apparent),
                            items: from_sql_u64(items),
                        },
                    )
                }))
            })
            .map_err(self.err("read last samples"))?;
        let mut out = Vec::new();
        for row in rows {
            if let Some(pair) = row.map_err(self.err("read last samples"))? {
                out.push(pair);
            }
        }
        out.sort_by(|a, b| a.1.series.cmp(&b.1.series));
        Ok(out)
    }

    /// Every series that has a sample, ordered.
    ///
    /// # Errors
    /// [`HistoryError`] naming this database.
    pub fn all_series(&self) -> Result<Vec<Series>, HistoryError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT kind, name, path_raw FROM series")
            .map_err(self.err("prepare reading series"))?;
        let rows = stmt
            .query_map([], |r| {
                Ok(Series::from_key(
                    &r.get::<_, String>(0)?,
                    r.get(1)?,
                    r.get(2)?,
                ))
            })
            .map_err(self.err("read series"))?;
        let mut out = Vec::new();
        for row in rows {
            out.extend(row.map_err(self.err("read series"))?);
        }
        out.sort();
        Ok(out)
    }

    /// The samples of `series` at or after `since`, oldest first, as
    /// `(time, allocated bytes, items)`; for charts. Empty when the series is unknown.
    ///
    /// # Errors
    /// [`HistoryError`] naming this database.
    pub fn series(
        &self,
        series: &Series,
        since: SystemTime,
    ) -> Result<Vec<(SystemTime, u64, u64)>, HistoryError> {
        let Some(id) =
            History::series_id(&self.conn, series, false).map_err(self.err("find a series"))?
        else {
            return Ok(Vec::new());
        };
        self.chart_points(
            "SELECT time_unix_secs, allocated_bytes, items FROM samples \
             WHERE series_id = ?1 AND time_unix_secs >= ?2 ORDER BY time_unix_secs",
            &id,
            since,
            "read samples",
        )
    }
}
