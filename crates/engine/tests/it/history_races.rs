//! The history DB under concurrent first opens, and deleted
//! while in use.

use std::sync::Barrier;
use std::time::{Duration, UNIX_EPOCH};

use cachewatch::history::{History, SCHEMA_VERSION};
use cachewatch_core::reclaim::AuditRecord;

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

/// The DB path swapped for a symlink while `watch` ran (or before it started): SQLite followed
/// the link and created a database at its target. The open and the reopen before a write now
/// refuse a link, naming it; nothing is created at the target.
#[test]
fn database_swapped_for_a_symlink_is_refused_and_its_target_not_created() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("cachewatch.db");
    let target = dir.path().join("elsewhere.db");
    std::os::unix::fs::symlink(&target, &path).expect("symlink");
    let e = History::open(&path).expect_err("a link is refused at open");
    assert!(
        matches!(e, cachewatch::history::HistoryError::File { .. }),
        "{e:?}"
    );
    let text = e.to_string();
    assert!(
        text.contains("is a symlink") && text.contains("cachewatch.db"),
        "{text}"
    );
    assert!(
        !target.exists(),
        "a database was created at the link's target"
    );
    assert!(History::open_read_only(&path).is_err());

    std::fs::remove_file(&path).expect("remove the link");
    let mut h = History::open(&path).expect("open");
    h.record_reclaims(&[rec("/tmp/a")]).expect("first write");
    for suffix in ["", "-wal", "-shm"] {
        let p = dir.path().join(format!("cachewatch.db{suffix}"));
        if p.exists() {
            std::fs::remove_file(&p).expect("remove");
        }
    }
    std::os::unix::fs::symlink(&target, &path).expect("symlink");
    let e = h
        .record_reclaims(&[rec("/tmp/b")])
        .expect_err("the write refuses the link");
    assert!(e.to_string().contains("is a symlink"), "{e}");
    assert!(
        !target.exists(),
        "a database was created at the link's target"
    );
}

/// A FIFO (or any file that is not a regular file) at the DB path is refused before SQLite opens
/// it, rather than opened.
#[test]
fn database_path_that_is_a_fifo_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("cachewatch.db");
    let c = std::ffi::CString::new(path.to_str().expect("utf-8")).expect("cstring");
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let e = History::open(&path).expect_err("a FIFO is refused");
    assert!(
        e.to_string().contains("is a FIFO, not a regular file"),
        "{e}"
    );
    let e = History::open_read_only(&path).expect_err("a FIFO is refused");
    assert!(e.to_string().contains("FIFO"), "{e}");
}
