//! Producer rules the tests share.

/// A user catalogue of one automatically reclaimable leak, `my-app-<pid>` dirs in a temp root,
/// owned by the pid in their name (so a pid above `pid_max` is never alive).
pub const MY_APP_TEMP: &str = r#"
[[producer]]
id = "my-app-temp"
name = "My app scratch dirs"
root = "temp"
item = "my-app-*"
name_regex = '^my-app-(?P<pid>\d+)$'
kind = "leak"
reclaim = "auto"
owner = { pid_in_name = true }
evidence = ["https://example.invalid/issue/1"]
examples = ["my-app-12"]
counter_examples = ["my-app-x"]
"#;

/// The producer id of [`MY_APP_TEMP`].
pub const MY_APP_TEMP_ID: &str = "my-app-temp";

/// A pid above Linux's largest (`pid_max` is at most 2^22): never alive.
pub const DEAD_PID: u32 = 4_194_400;
