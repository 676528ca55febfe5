//! The `cachewatch` command-line tool.
//!
//! SKELETON — owned by the CLI helper.

fn main() {}
