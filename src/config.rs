//! The user's configuration (TOML).
//!
//! SKELETON — owned by the CLI/config helper.
