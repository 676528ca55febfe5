//! The engine and core items the front ends use, each re-exported under one path of the API.
//! Adding one here is a decision that a front end needs it; the front ends name no other path.

/// Human text of sizes, counts, ages and thresholds, as every front end writes them.
pub mod units {
    pub use crate::units::{
        format_bytes, format_count, format_count_of, format_duration, format_threshold,
        parse_threshold, read_threshold, unix_secs,
    };
}

/// The roots to look at.
pub mod roots {
    pub use crate::roots::{Root, RootError, RootKind};
}

/// The producer rules.
pub mod catalogue {
    pub use crate::catalogue::{is_slug, Catalogue, ProducerKind, ReclaimMode, Rule};
}

/// The config file: read, parse, edit in place.
pub mod config {
    pub use crate::config::{edit_file, load, parse, Config, EditError, LoadedConfig};
}

/// A scan of the roots: what is in them, attributed to producers.
pub mod scan {
    pub use crate::inventory::{IssueKind, Item, Measure, ScanIssue};
    pub use crate::scan::{
        measure_item, scan_root_each, scan_root_each_found, with_scan_threads, RootSummary,
        ScanProgress, Tally, UnattributedGroup,
    };
    pub use crate::watch::live::GroupMember;
}

/// Which processes write where: the evidence behind a producer or an unattributed group.
pub mod process {
    pub use crate::monitor::provenance::{
        evidence_dto, group_evidence, sample_processes, EvidenceKind, ProcessHistory, HISTORY_CAP,
        MEMBERS_LOOKED_AT,
    };
    pub use crate::process::{ProcessProbe, SystemProbe};
}

/// Shapes of unattributed files: groups, their writers, the rules suggested for them.
pub mod shapes {
    pub use crate::shapes::{
        check_rule, rule_for, suggested_id, writers, RuleCheck, RuleOptions, ShapeGroup, Writer,
        GROUP_MIN_BYTES, GROUP_MIN_ITEMS,
    };
}

/// Why an item is (or is not) reclaimable.
pub mod explain {
    pub use crate::explain::{Explanation, Verdict};
    pub use crate::reclaim::{newest_access, read_age_used, AgeClock};
}

/// The monitor: started once, then asked for snapshots and to act.
pub mod monitor {
    pub use crate::monitor::{spawn, MonitorError, MonitorHandle, MonitorOptions};
    pub use crate::snapshot::Snapshot;
}

/// Growth outside the watched roots (volume free space falling unexplained).
pub mod outside {
    pub use crate::outside_growth::{group_by_volume, unexplained_growth, Unexplained};
}

/// The rules of `[[auto_reclaim]]`, run by hand.
pub mod autoreclaim {
    pub use crate::autoreclaim::run::{plan_rule, run_rule, RunContext};
    pub use crate::autoreclaim::{kept_by_code, BATCH_SIZE};
}

/// Crash reports of the producers.
pub mod crash {
    pub use crate::crash::{CrashGroupDto, CrashWatch, OtherReports, ReportKind, Signatures};
}

/// The OpenMetrics endpoint and text file.
pub mod metrics {
    pub use crate::metrics::textfile::{render, ProducerFigures, RootFigures, ScanFigures};
    pub use crate::metrics::{bind, serve_on};
}

/// Files written without following a planted link.
pub mod safe_file {
    pub use crate::safe_file::write_atomically;
}

/// What the platform offers the app's process.
pub mod platform {
    pub use crate::platform::release_free_memory;
}
