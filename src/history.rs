//! Growth history and the reclaim audit trail, in SQLite.
//!
//! SKELETON — owned by the history/monitor helper.
