//! Serde of times as whole Unix seconds (`u64`), for JSON fields named `*_unix_secs`.
//!
//! Serde's own `SystemTime` impl writes `{secs_since_epoch, nanos_since_epoch}`, a name without
//! its unit. The sub-second part is dropped: a plan read back from JSON then no longer matches its
//! id (which hashes the full times), so it deletes nothing. A time before the epoch is written as 0.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Deserializer, Serializer};

fn secs(t: SystemTime) -> u64 {
    crate::units::unix_secs(t)
}

fn time(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

/// Writes `t` as whole seconds since the Unix epoch.
///
/// # Errors
/// Those of the serializer.
pub fn serialize<S: Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(secs(*t))
}

/// Reads whole seconds since the Unix epoch.
///
/// # Errors
/// The value is not an unsigned integer.
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<SystemTime, D::Error> {
    u64::deserialize(d).map(time)
}

/// The same for an optional time (`null` when absent).
pub mod opt {
    use std::time::SystemTime;

    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes `t` as whole Unix seconds, or `null`.
    ///
    /// # Errors
    /// Those of the serializer.
    pub fn serialize<S: Serializer>(t: &Option<SystemTime>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => s.serialize_some(&super::secs(*t)),
            None => s.serialize_none(),
        }
    }

    /// Reads whole Unix seconds or `null`.
    ///
    /// # Errors
    /// The value is neither an unsigned integer nor `null`.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SystemTime>, D::Error> {
        Option::<u64>::deserialize(d).map(|o| o.map(super::time))
    }
}
