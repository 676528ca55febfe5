//! History DB: open, reclaim audit rows, samples, growth, downsampling, persistence, corruption.

use std::path::PathBuf;
use std::time::{Duration, UNIX_EPOCH};

use cachewatch::history::{History, HistoryError, SCHEMA_VERSION};
use cachewatch::reclaim::AuditRecord;

fn t(secs: u64) -> std::time::SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

#[test]
fn open_creates_parent_dir_and_file_with_current_schema() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("a/b/cachewatch.db");
    let h = History::open(&path).expect("open");
    assert!(path.is_file());
    assert_eq!(h.path(), path);
    drop(h);
    let conn = rusqlite::Connection::open(&path).expect("raw open");
    let v: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .expect("user_version");
    assert_eq!(v, SCHEMA_VERSION);
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .expect("journal_mode");
    assert_eq!(mode, "wal");
}

#[test]
fn reclaim_rows_round_trip_including_non_utf8_paths_and_survive_reopen() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("cachewatch.db");
    let odd = PathBuf::from(std::ffi::OsStr::from_bytes(b"/tmp/gpuarchiver-\xff\xfe"));
    let recs = vec![
        AuditRecord {
            time: t(1_000),
            path: PathBuf::from("/tmp/katago/a.mlmodelc"),
            producer: "katago-coreml".into(),
            allocated_bytes: 4096 * 3,
            outcome: "deleted".into(),
        },
        AuditRecord {
            time: t(2_000),
            path: odd.clone(),
            producer: "metal-gpuarchiver".into(),
            allocated_bytes: u64::MAX,
            outcome: "skipped: in use".into(),
        },
    ];
    {
        let mut h = History::open(&path).expect("open");
        h.record_reclaim(&recs[0]).expect("record");
        h.record_reclaims(&recs[1..]).expect("record many");
    }
    let h = History::open(&path).expect("reopen");
    assert_eq!(
        h.reclaims(t(0)).expect("all"),
        recs[..1]
            .iter()
            .cloned()
            .chain([AuditRecord {
                allocated_bytes: i64::MAX as u64, // saturated at SQLite's integer range
                ..recs[1].clone()
            }])
            .collect::<Vec<_>>()
    );
    let later = h.reclaims(t(1_001)).expect("since");
    assert_eq!(later.len(), 1);
    assert_eq!(later[0].path, odd);
    assert_eq!(
        h.last_reclaim("katago-coreml").expect("last"),
        Some(t(1_000))
    );
    // a skipped attempt is not a reclaim
    assert_eq!(h.last_reclaim("metal-gpuarchiver").expect("last"), None);
}

#[test]
fn corrupt_file_is_reported_with_its_path_and_left_untouched() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("cachewatch.db");
    let garbage: Vec<u8> = (0..8192u32).map(|i| (i * 7 + 13) as u8).collect();
    std::fs::write(&path, &garbage).expect("write garbage");
    let err = History::open(&path).expect_err("garbage must not open");
    assert!(err.is_corrupt(), "{err:?}");
    assert!(matches!(err, HistoryError::Corrupt { .. }));
    let msg = err.to_string();
    assert!(msg.contains(&*path.to_string_lossy()), "{msg}");
    assert_eq!(std::fs::read(&path).expect("read back"), garbage);
    let mut names: Vec<_> = std::fs::read_dir(dir.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name())
        .collect();
    names.sort();
    assert_eq!(names, vec![std::ffi::OsString::from("cachewatch.db")]);
    let err = History::open_read_only(&path).expect_err("read-only too");
    assert!(err.is_corrupt(), "{err:?}");
}
