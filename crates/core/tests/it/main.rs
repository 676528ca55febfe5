//! The core's integration tests, one binary: each module was a test binary of its own (same file
//! name, same test names under `<module>::`). One binary links once instead of once per file.

mod app_owner;
mod catalogue;
mod catalogue_2026;
mod catalogue_2026h2;
mod code_sign_clone_reclaim;
mod containers;
mod content_signature;
mod freeable_reflink;
mod in_use_guard;
mod macos_platform;
mod measure_dirs;
mod nested_groups;
mod nested_roots;
mod newest_clone;
mod owner;
mod reclaim;
mod reclaim_props;
mod reclaim_race;
mod reclaim_stream;
mod reclaim_swap_loop;
mod reclaim_swap_props;
mod scan_du;
mod shape_corpus;
mod sparkle_staged;
mod structure_dirs;
mod support;
mod unreadable_plan;
mod version_keyed;
