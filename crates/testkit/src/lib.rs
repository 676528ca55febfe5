//! What the CacheWatch tests share: `du` as the independent oracle of sizes, tree builders, mtimes
//! and producer rules. Not published; a dev-dependency of the crates' tests only.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

pub mod du;
pub mod heap;
pub mod hostile;
pub mod ips;
pub mod leakwriter;
pub mod rules;
pub mod scrape;
pub mod tree;
