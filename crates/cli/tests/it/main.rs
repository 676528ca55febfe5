//! The CLI's integration tests, one binary: each module was a test binary of its own (same file
//! name, same test names under `<module>::`). One binary links once instead of once per file.

mod audit_cli;
mod autoreclaim_cli;
mod cli;
// Times its config swap with inotify (Linux): a Linux-only test file.
#[cfg(target_os = "linux")]
mod config_write_cli;
mod container_cli;
mod crash_cli;
mod deploy_homebrew;
mod deploy_metrics;
mod escape_cli;
mod explain_cli;
mod fleet_cli;
mod history_cli;
mod hostile_walks;
mod metal_cli;
mod metrics_prometheus;
mod nested2_cli;
mod nested_cli;
mod non_utf8_json_cli;
mod not_deletable_cli;
mod planted_links_cli;
mod provenance_cli;
mod reclaim_managed_cli;
mod reclaim_rules_cli;
mod reclaim_summary_cli;
mod report_cli;
mod rule_owner_cli;
mod rule_owner_stored_cli;
mod rules_edges_cli;
mod shapes_cli;
mod status_outside_cli;
mod watch_cli;
