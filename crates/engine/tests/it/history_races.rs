//! Issue 8, "an audit you can trust": the history DB under concurrent first opens, and deleted
//! while in use.

use std::sync::Barrier;
use std::time::{Duration, UNIX_EPOCH};

use cachewatch::history::{History, SCHEMA_VERSION};
use cachewatch::reclaim::AuditRecord;

fn rec(path: &str) -> AuditRecord {
    AuditRecord {
        time: UNIX_EPOCH + Duration::from_secs(1_000),
        path: path.into(),
        producer: "gradio-temp".into(),
        allocated_bytes: 4096,
        outcome: "deleted".into(),
    }
}

/// Two processes opening a fresh data dir at once both saw schema version 0 and both ran the
/// first migration: one failed with `migrate schema failed: table series already exists`.
#[test]
fn concurrent_first_opens_of_a_fresh_database_all_succeed() {
    const ROUNDS: usize = 20;
    const OPENERS: usize = 4;
    let dir = tempfile::tempdir().expect("tempdir");
    for round in 0..ROUNDS {
        let path = dir.path().join(format!("round-{round}/cachewatch.db"));
        let barrier = Barrier::new(OPENERS);
        let results: Vec<Result<(), String>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..OPENERS)
                .map(|_| {
                    s.spawn(|| {
                        barrier.wait();
                        History::open(&path).map(drop).map_err(|e| e.to_string())
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("join"))
                .collect()
        });
        for r in results {
            r.unwrap_or_else(|e| panic!("round {round}: {e}"));
        }
        let conn = rusqlite::Connection::open(&path).expect("raw open");
        let v: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .expect("user_version");
        assert_eq!(v, SCHEMA_VERSION);
    }
}

/// The DB file (and its -wal/-shm) deleted while `watch` ran: every later write went silently
/// into the deleted inode. Now the write notices, says so naming the path, and recreates it.
#[test]
fn database_deleted_while_open_is_noticed_named_and_recreated() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("cachewatch.db");
    let mut h = History::open(&path).expect("open");
    h.record_reclaims(&[rec("/tmp/a")]).expect("first write");
    assert!(h.take_notice().is_none());
    for suffix in ["", "-wal", "-shm"] {
        let p = dir.path().join(format!("cachewatch.db{suffix}"));
        if p.exists() {
            std::fs::remove_file(&p).expect("remove");
        }
    }
    h.record_reclaims(&[rec("/tmp/b")])
        .expect("write after deletion");
    let notice = h.take_notice().expect("the deletion is noticed");
    let text = notice.to_string();
    assert!(text.contains(path.to_str().expect("utf-8")), "{text}");
    assert!(text.contains("recreated"), "{text}");
    assert!(path.is_file(), "the database is recreated at its path");
    drop(h);
    let again = History::open(&path).expect("reopen");
    let rows = again.reclaims(UNIX_EPOCH).expect("read");
    let paths: Vec<_> = rows.iter().map(|r| r.path.clone()).collect();
    assert_eq!(paths, vec![std::path::PathBuf::from("/tmp/b")]);
    let mut again = again;
    assert!(again.take_notice().is_none());
}
