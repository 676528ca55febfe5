//! Tests of the OpenMetrics rendering and the server.

#![allow(clippy::unwrap_used)]

use super::*;
use crate::snapshot::{MonitorState, RootDto, ScanProgress, WatchMode};

#[test]
fn families_have_help_type_unit_and_escaped_labels_and_end_with_eof() {
    let snap = Snapshot {
        taken_at_unix_secs: 0,
        state: MonitorState::Watching,
        scan_progress: ScanProgress::default(),
        threshold_secs: 0,
        total_allocated_bytes: 0,
        total_apparent_bytes: 0,
        disk_full_eta_secs: None,
        disk_full_eta_span_secs: None,
        total_growth: None,
        roots: vec![RootDto {
            kind: "temp".into(),
            path: "/tmp/a\"b\\c".into(),
            allocated_bytes: 8192,
            apparent_bytes: 10,
            items: 1,
            free_bytes: Some(77),
            volume_bytes: Some(100),
            mount: Some("/".into()),
            watch_mode: WatchMode::Events,
            watch_error: None,
            unreadable: 0,
            unreadable_paths: Vec::new(),
            unwatched_paths: Vec::new(),
            rescans: 0,
        }],
        producers: Vec::new(),
        unattributed: Vec::new(),
        alerts: Vec::new(),
        errors: Vec::new(),
        crash_groups: Vec::new(),
        auto_reclaim: Default::default(),
    };
    let alerts: AlertCounts = [("free-disk".to_owned(), 3)].into();
    let text = render(&snap, &alerts);
    assert!(text.contains(
        "cachewatch_root_allocated_bytes{kind=\"temp\",path=\"/tmp/a\\\"b\\\\c\"} 8192\n"
    ));
    assert!(text.contains("# UNIT cachewatch_root_allocated_bytes bytes\n"));
    assert!(text.contains("cachewatch_volume_free_bytes{mount=\"/\"} 77\n"));
    assert!(text.contains(
        "# TYPE cachewatch_alerts counter\ncachewatch_alerts_total{rule=\"free-disk\"} 3\n"
    ));
    assert!(text.ends_with("# EOF\n"));
    // Every family announced once, with HELP before TYPE.
    for name in [
        "cachewatch_producer_allocated_bytes",
        "cachewatch_producer_items",
        "cachewatch_producer_orphan_bytes",
        "cachewatch_producer_reclaimable_bytes",
        "cachewatch_root_allocated_bytes",
        "cachewatch_volume_free_bytes",
        "cachewatch_alerts",
    ] {
        let help = text.find(&format!("# HELP {name} ")).unwrap();
        let ty = text.find(&format!("# TYPE {name} ")).unwrap();
        assert!(help < ty, "{name}");
    }
}

#[test]
fn auto_reclaim_counters_come_from_the_snapshot_totals() {
    use crate::autoreclaim::{AutoReclaimDto, AutoRuleDto, ReclaimedDto};
    let json = serde_json::json!({
        "taken_at_unix_secs": 0, "state": "watching",
        "scan_progress": {"roots_done": 0, "roots_total": 0}, "threshold_secs": 0,
        "total_allocated_bytes": 0, "total_apparent_bytes": 0, "disk_full_eta_secs": null,
        "roots": [], "producers": [], "unattributed": [], "alerts": [], "errors": []
    });
    // A snapshot without the field (an older engine) reads, with auto-reclaim off.
    let mut snap: Snapshot = serde_json::from_value(json).unwrap();
    assert_eq!(snap.auto_reclaim, AutoReclaimDto::default());
    snap.auto_reclaim = AutoReclaimDto {
        enabled: true,
        rules: vec![AutoRuleDto {
            rule: "gpu".into(),
            runs: 4,
            ..AutoRuleDto::default()
        }],
        reclaimed: vec![ReclaimedDto {
            producer: "metal-gpuarchiver".into(),
            items: 3412,
            bytes: 1_288_490_189,
        }],
        ..AutoReclaimDto::default()
    };
    let text = render(&snap, &AlertCounts::new());
    for line in [
        "# TYPE cachewatch_reclaimed_bytes counter\n",
        "# UNIT cachewatch_reclaimed_bytes bytes\n",
        "cachewatch_reclaimed_bytes_total{producer=\"metal-gpuarchiver\"} 1288490189\n",
        "cachewatch_reclaimed_items_total{producer=\"metal-gpuarchiver\"} 3412\n",
        "cachewatch_auto_reclaim_runs_total{rule=\"gpu\"} 4\n",
    ] {
        assert!(text.contains(line), "{line} not in\n{text}");
    }
    assert!(text.ends_with("# EOF\n"));
}
