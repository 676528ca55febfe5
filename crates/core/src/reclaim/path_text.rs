//! Serde of paths as JSON text: a UTF-8 path as it is, any other byte as U+FFFD.
//!
//! Serde's own `Path` impl refuses a path that is not UTF-8, which failed a whole reclaim report
//! (after the deletions) over one odd file name in a temp dir. The text is for people and the UI;
//! a plan read back from lossy text no longer matches its id, so it deletes nothing.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serializer};

/// Writes `p` as a string, non-UTF-8 bytes replaced by U+FFFD.
///
/// # Errors
/// Those of the serializer.
pub fn serialize<S: Serializer>(p: &Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&p.to_string_lossy())
}

/// Reads a path from a string.
///
/// # Errors
/// The value is not a string.
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<PathBuf, D::Error> {
    String::deserialize(d).map(PathBuf::from)
}

/// The same for a list of paths.
pub mod many {
    use std::path::PathBuf;

    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes each path as a string, non-UTF-8 bytes replaced by U+FFFD.
    ///
    /// # Errors
    /// Those of the serializer.
    pub fn serialize<S: Serializer>(ps: &[PathBuf], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(ps.iter().map(|p| p.to_string_lossy()))
    }

    /// Reads a list of paths from strings.
    ///
    /// # Errors
    /// The value is not a list of strings.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<PathBuf>, D::Error> {
        Vec::<String>::deserialize(d).map(|v| v.into_iter().map(PathBuf::from).collect())
    }
}

/// Writes an optional path as a string or null, non-UTF-8 bytes replaced by U+FFFD (for
/// `serialize_with`).
///
/// # Errors
/// Those of the serializer.
pub fn serialize_opt<S: Serializer>(p: &Option<PathBuf>, s: S) -> Result<S::Ok, S::Error> {
    match p {
        Some(p) => s.serialize_some(&p.to_string_lossy()),
        None => s.serialize_none(),
    }
}
