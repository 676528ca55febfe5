//! The engine's integration tests, one binary: each module was a test binary of its own (same file
//! name, same test names under `<module>::`). One binary links once instead of once per file.

mod alerts;
mod autoreclaim;
mod autoreclaim_leak;
mod autoreclaim_unlisted;
mod crash;
mod crash_faults_panics;
mod crash_shapes;
mod crash_written;
mod group_actions;
mod growth_observed;
mod history;
mod history_races;
mod lenient_start;
mod machine_shape;
mod macos_fsevents;
mod monitor;
mod monitor_estimate;
mod monitor_figures;
mod monitor_group_history;
mod monitor_held;
mod monitor_nested_groups;
mod monitor_preview;
mod monitor_provenance;
mod monitor_shapes;
mod nested_roots;
mod outside_growth_monitor;
mod procwatch;
mod readme_config;
mod reclaim_managed;
mod reclaim_streamed;
mod root_swap;
mod watch;
mod watch_baselines;
mod watch_fallback;
mod watch_fsevents_replay;
