//! Tests of the OpenMetrics rendering and the server.

#![allow(clippy::unwrap_used)]

use super::*;
use crate::dto::{MonitorState, RootDto, RootStatus, ScanProgressDto, WatchMode};

mod server;
mod textfile;

/// [`sample_snapshot`]'s `live_at_unix_secs`.
pub(super) const LIVE_AT: u64 = 4_000_000_000;

/// A snapshot with one root on `/` (77 bytes free), one producer and the given alerts' rules.
pub(super) fn sample_snapshot() -> Snapshot {
    let json = serde_json::json!({
        "taken_at_unix_secs": 0, "state": "watching",
        "scan_progress": {"roots_done": 1, "roots_total": 1}, "threshold_secs": 0,
        "total_allocated_bytes": 8192, "total_apparent_bytes": 10, "disk_full_eta_secs": null,
        "roots": [{"kind": "cache", "path": "/c", "allocated_bytes": 8192, "apparent_bytes": 10,
                   "items": 2, "free_bytes": 77, "volume_bytes": 100, "mount": "/",
                   "watch_mode": "events", "watch_error": null, "unreadable": 0, "rescans": 0}],
        "producers": [{"id": "metal-gpuarchiver", "name": "Metal", "kind": "leak",
                       "reclaim": "auto", "allocated_bytes": 8192, "apparent_bytes": 10,
                       "items": 2, "files": 2, "growth_bytes_per_hour": null,
                       "growth_bytes_per_day": null, "growth_items_per_day": null,
                       "orphan_bytes": 4096, "reclaimable_bytes": 0, "reclaimable_items": 0,
                       "evidence": [], "notes": "", "top_items": [], "history": []}],
        "unattributed": [], "alerts": [], "errors": [],
        // Alive in 2096: the age reads 0 whenever the test runs.
        "live_at_unix_secs": LIVE_AT,
        "unexplained_growth": [{"mount": "/", "from_unix_secs": 1000, "to_unix_secs": 22600,
                                "free_fall_bytes": 5000, "roots_growth_bytes": 1000,
                                "unexplained_bytes": 4000, "left_out_secs": 0, "notable": false}]
    });
    serde_json::from_value(json).unwrap()
}

/// The page the hand-written encoder printed for [`sample_snapshot`] and one `free-disk` alert,
/// line for line: the move to prometheus-client changed no name, label, help text or value. (The
/// monitor's health, first, came later: up, and the snapshot's age, 60 s here.)
#[test]
fn the_page_is_the_one_the_hand_written_encoder_printed() {
    let alerts: AlertCounts = [("free-disk".to_owned(), 1)].into();
    let expected = "\
# HELP cachewatch_monitor_up 1 while the monitor task runs, 0 once it stopped on a panic (the figures are then frozen).
# TYPE cachewatch_monitor_up gauge
cachewatch_monitor_up 1
# HELP cachewatch_snapshot_age_seconds Seconds since the monitor last showed it was running (refreshed every minute while nothing changes): a growing value is a stuck or stopped monitor whose figures are frozen.
# TYPE cachewatch_snapshot_age_seconds gauge
# UNIT cachewatch_snapshot_age_seconds seconds
cachewatch_snapshot_age_seconds 60
# HELP cachewatch_producer_allocated_bytes Allocated bytes of a producer's items (as du counts them).
# TYPE cachewatch_producer_allocated_bytes gauge
# UNIT cachewatch_producer_allocated_bytes bytes
cachewatch_producer_allocated_bytes{producer=\"metal-gpuarchiver\"} 8192
# HELP cachewatch_producer_items Number of a producer's items.
# TYPE cachewatch_producer_items gauge
cachewatch_producer_items{producer=\"metal-gpuarchiver\"} 2
# HELP cachewatch_producer_orphan_bytes Allocated bytes of a producer's items whose owner process (pid in the name) is gone.
# TYPE cachewatch_producer_orphan_bytes gauge
# UNIT cachewatch_producer_orphan_bytes bytes
cachewatch_producer_orphan_bytes{producer=\"metal-gpuarchiver\"} 4096
# HELP cachewatch_producer_reclaimable_bytes Allocated bytes a reclaim at the current age threshold would free.
# TYPE cachewatch_producer_reclaimable_bytes gauge
# UNIT cachewatch_producer_reclaimable_bytes bytes
cachewatch_producer_reclaimable_bytes{producer=\"metal-gpuarchiver\"} 0
# HELP cachewatch_root_allocated_bytes Allocated bytes of a watched root.
# TYPE cachewatch_root_allocated_bytes gauge
# UNIT cachewatch_root_allocated_bytes bytes
cachewatch_root_allocated_bytes{kind=\"cache\",path=\"/c\"} 8192
# HELP cachewatch_root_up 1 while a watched root's path leads to a real dir, 0 once it was removed or replaced by a symbolic link or a non-dir (its figures are then 0 and it is not followed).
# TYPE cachewatch_root_up gauge
cachewatch_root_up{kind=\"cache\",path=\"/c\"} 1
# HELP cachewatch_volume_free_bytes Free bytes on a volume holding a watched root.
# TYPE cachewatch_volume_free_bytes gauge
# UNIT cachewatch_volume_free_bytes bytes
cachewatch_volume_free_bytes{mount=\"/\"} 77
# HELP cachewatch_unexplained_growth_bytes Bytes a volume's free space fell beyond what its watched roots grew over the configured window (unexplained_growth_window, 6 h by default; 0 when it did not; spans with a reclaim left out).
# TYPE cachewatch_unexplained_growth_bytes gauge
# UNIT cachewatch_unexplained_growth_bytes bytes
cachewatch_unexplained_growth_bytes{mount=\"/\"} 4000
# HELP cachewatch_unattributed_group_bytes Allocated bytes of a group of unattributed entries sharing a name shape (an unknown producer), with the name of its writer (empty when unknown); the 20 largest groups.
# TYPE cachewatch_unattributed_group_bytes gauge
# UNIT cachewatch_unattributed_group_bytes bytes
# HELP cachewatch_unattributed_group_items Number of entries in a group of unattributed entries sharing a name shape; the 20 largest groups.
# TYPE cachewatch_unattributed_group_items gauge
# HELP cachewatch_reclaimed_bytes Allocated bytes deleted by auto-reclaim rules since the monitor started.
# TYPE cachewatch_reclaimed_bytes counter
# UNIT cachewatch_reclaimed_bytes bytes
# HELP cachewatch_reclaimed_items Items deleted by auto-reclaim rules since the monitor started.
# TYPE cachewatch_reclaimed_items counter
# HELP cachewatch_auto_reclaim_runs Runs of an auto-reclaim rule since the monitor started.
# TYPE cachewatch_auto_reclaim_runs counter
# HELP cachewatch_alerts Alerts fired since start, per rule.
# TYPE cachewatch_alerts counter
cachewatch_alerts_total{rule=\"free-disk\"} 1
# EOF
";
    assert_eq!(
        render_at(&sample_snapshot(), &alerts, LIVE_AT + 60),
        expected
    );
}

#[test]
fn families_have_help_type_unit_and_escaped_labels_and_end_with_eof() {
    let snap = Snapshot {
        taken_at_unix_secs: 0,
        state: MonitorState::Watching,
        scan_progress: ScanProgressDto::default(),
        threshold_secs: 0,
        total_allocated_bytes: 0,
        total_apparent_bytes: 0,
        disk_full_eta_secs: None,
        disk_full_eta_span_secs: None,
        total_growth: None,
        unexplained_growth: Vec::new(),
        roots: vec![RootDto {
            kind: cachewatch_core::RootKind::Temp,
            path: "/tmp/a\"b\\c".into(),
            path_bytes: None,
            canonical: "/tmp/a\"b\\c".into(),
            canonical_bytes: None,
            bundle: None,
            state: RootStatus::ReplacedByLink,
            allocated_bytes: 8192,
            apparent_bytes: 10,
            items: 1,
            files: 0,
            dirs: 1,
            vanished: 0,
            free_bytes: Some(77),
            purgeable_bytes: Some(0),
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
        unattributed_groups: Vec::new(),
        hidden_groups: 0,
        ignored_shapes: Vec::new(),
        unattributed: Vec::new(),
        alerts: Vec::new(),
        errors: Vec::new(),
        crash_groups: Vec::new(),
        auto_reclaim: Default::default(),
        live_at_unix_secs: 1_900_000_000,
        stopped: Some("the monitor stopped on a panic".into()),
    };
    let alerts: AlertCounts = [("free-disk".to_owned(), 3)].into();
    let text = render(&snap, &alerts);
    assert!(text.contains(
        "cachewatch_root_allocated_bytes{kind=\"temp\",path=\"/tmp/a\\\"b\\\\c\"} 8192\n"
    ));
    assert!(text.contains("# UNIT cachewatch_root_allocated_bytes bytes\n"));
    // A root swapped for a link is down.
    assert!(text.contains("cachewatch_root_up{kind=\"temp\",path=\"/tmp/a\\\"b\\\\c\"} 0\n"));
    assert!(text.contains("cachewatch_volume_free_bytes{mount=\"/\"} 77\n"));
    assert!(text.contains(
        "# TYPE cachewatch_alerts counter\ncachewatch_alerts_total{rule=\"free-disk\"} 3\n"
    ));
    assert!(text.ends_with("# EOF\n"));
    // A stopped monitor says so, and its frozen snapshot's age (hand count: 1000 s).
    let text_later = render_at(&snap, &alerts, 1_900_001_000);
    assert!(
        text_later.contains("\ncachewatch_monitor_up 0\n"),
        "{text_later}"
    );
    assert!(
        text_later.contains("\ncachewatch_snapshot_age_seconds 1000\n"),
        "{text_later}"
    );
    // Every family announced once, with HELP before TYPE.
    for name in [
        "cachewatch_producer_allocated_bytes",
        "cachewatch_producer_items",
        "cachewatch_producer_orphan_bytes",
        "cachewatch_producer_reclaimable_bytes",
        "cachewatch_root_allocated_bytes",
        "cachewatch_root_up",
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
