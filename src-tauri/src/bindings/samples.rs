//! Sample values of every DTO, as serde writes them, for `ui/tests/generated/samples.ts`.

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cachewatch::api::catalogue::{ProducerKind, ReclaimMode};
use cachewatch::api::groups::{GroupRuleAdded, GroupRuleDto, GroupRulePreview};
use cachewatch::api::reclaim::{DeletedItem, KeepReason, KeptItem, PlannedItem, ReclaimErrorEntry};
use cachewatch::api::report::{
    GrowthFigures, GrowthSource, OsDto, ReportDraft, ReportSubject, ReportWriter,
};
use cachewatch::api::roots::RootKind;
use cachewatch::crash::CrashGroupDto;
use cachewatch::dto::{
    AlertDto, AlertRule, ItemDto, MonitorState, ProducerDto, RootDto, RootStatus, ScanProgressDto,
    UnattributedDto, UnattributedGroupDto, WatchMode, WriterDto,
};
use cachewatch::dto::{EvidenceDto, EvidenceKindDto};
use cachewatch::dto::{KeptGroupDto, PreviewProducer, ReclaimPreview, ReclaimResult};
use cachewatch::snapshot::Snapshot;
use serde_json::{to_value, Value};

use crate::commands::Settings;
use crate::error::{ErrorCode, IpcError};
use crate::ui_state::{ReclaimJob, UiState, UiView};

mod history;
mod reclaim;
use history::{group_history, producer_history, reclaim_run};
use reclaim::{preview, result};

const NOW: u64 = 1_764_000_000;

fn at(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

pub(crate) fn snapshot() -> Snapshot {
    Snapshot {
        taken_at_unix_secs: NOW,
        state: MonitorState::Watching,
        scan_progress: ScanProgressDto {
            roots_done: 2,
            roots_total: 2,
            entries_done: 20_003,
        },
        threshold_secs: 86_400,
        total_allocated_bytes: 5 << 30,
        total_apparent_bytes: 4 << 30,
        disk_full_eta_secs: Some(3 * 86_400),
        disk_full_eta_span_secs: Some(2 * 3600),
        total_growth: None,
        unexplained_growth: vec![{
            let mut u = cachewatch::outside_growth::Unexplained {
                mount: "/".to_owned(),
                from_unix_secs: NOW - 6 * 3600,
                to_unix_secs: NOW,
                free_fall_bytes: 42 << 30,
                roots_growth_bytes: 1288490188,
                unexplained_bytes: (42 << 30) - 1288490188,
                left_out_secs: 0,
                notable: true,
                message: String::new(),
            };
            u.message = u.message();
            u
        }],
        roots: RootKind::ALL
            .iter()
            .map(|k| RootDto {
                kind: *k,
                path: format!("/roots/{}", k.as_str()),
                // A root whose name is not UTF-8: its text is lossy, its bytes exact.
                path_bytes: (*k == RootKind::Other).then(|| "L3Jvb3RzL/8=".to_owned()),
                canonical: format!("/private/roots/{}", k.as_str()),
                canonical_bytes: (*k == RootKind::Other)
                    .then(|| "L3ByaXZhdGUvcm9vdHMv/w==".to_owned()),
                bundle: (*k == RootKind::ContainerTemp).then(|| "com.example.App".to_owned()),
                state: match k {
                    RootKind::Other => RootStatus::ReplacedByLink,
                    _ => RootStatus::Ok,
                },
                allocated_bytes: 1 << 20,
                apparent_bytes: 1 << 19,
                items: 3,
                files: 5,
                dirs: 2,
                vanished: 0,
                free_bytes: Some(10 << 30),
                purgeable_bytes: Some(if *k == RootKind::Temp { 3 << 30 } else { 0 }),
                volume_bytes: (*k != RootKind::Other).then_some(100 << 30),
                mount: (*k != RootKind::Other).then(|| "/".to_owned()),
                watch_mode: match k {
                    RootKind::Other => WatchMode::Off,
                    RootKind::Cache => WatchMode::Polling,
                    _ => WatchMode::Events,
                },
                watch_error: (*k == RootKind::Other).then(|| "no events".to_owned()),
                unreadable: 1,
                unreadable_paths: vec![format!("/roots/{}/locked", k.as_str())],
                unwatched_paths: Vec::new(),
                rescans: 2,
            })
            .collect(),
        producers: vec![ProducerDto {
            id: "gpuarchiver".to_owned(),
            name: "GPU archiver".to_owned(),
            kind: ProducerKind::Leak,
            reclaim: ReclaimMode::Auto,
            reclaimable: true,
            allocated_bytes: 4 << 30,
            apparent_bytes: 3 << 30,
            items: 700_000,
            files: 1_400_000,
            growth_bytes_per_hour: Some(-1024),
            growth_bytes_per_day: None,
            growth_items_per_day: Some(5000),
            growth: Some(cachewatch::dto::ObservedGrowth {
                bytes: 105 << 20,
                items: 3412,
                span_secs: 180,
            }),
            orphan_bytes: 1 << 30,
            reclaimable_bytes: 2 << 30,
            reclaimable_items: 1000,
            evidence: vec!["https://github.com/owner/repo/issues/1".to_owned()],
            notes: "leaks one dir per launch".to_owned(),
            managed_by: None,
            top_items: vec![ItemDto {
                path: "/roots/temp/gpuarchiver-1".to_owned(),
                allocated_bytes: 4096,
                age_secs: 90_000,
            }],
            history: vec![(NOW - 3600, 1 << 30), (NOW, 4 << 30)],
        }],
        unattributed_groups: vec![UnattributedGroupDto {
            shape: ".<hex16>-<digits8>.dylib".to_owned(),
            label: ".<hex16>-<digits8>.dylib".to_owned(),
            root_kind: RootKind::Temp,
            root: "/roots/temp".to_owned(),
            root_bytes: None,
            items: 81_653,
            allocated_bytes: 190 << 30,
            apparent_bytes: 189 << 30,
            oldest_mtime: Some(NOW - 21 * 86_400),
            newest_mtime: None,
            examples: vec![".1a2b3c4d5e6f7a8b-00012345.dylib".to_owned()],
            writers: vec![WriterDto {
                pid: 4242,
                name: "bun".to_owned(),
            }],
            evidence: vec![EvidenceDto {
                kind: EvidenceKindDto::PidInName,
                name: "bun".to_owned(),
                exe: Some("/opt/homebrew/bin/bun".to_owned()),
                app: None,
                agree: 28,
                total: 30,
                orphans: Some(27),
                alive: true,
                last_seen_unix_secs: Some(NOW - 60),
            }],
            confirmed_leak: false,
            history_key: "2f726f6f74732f74656d70006600".to_owned(),
        }],
        hidden_groups: 1,
        ignored_shapes: vec!["swc\\xff-<uuid>/".to_owned()],
        unattributed: vec![UnattributedDto {
            path: "/roots/temp/odd\u{fffd}".to_owned(),
            path_bytes: Some("L3Jvb3RzL3RlbXAvb2Rk/w==".to_owned()),
            root_kind: RootKind::ContainerTemp,
            allocated_bytes: 8192,
            apparent_bytes: 100,
        }],
        alerts: vec![
            AlertDto {
                id: 7,
                ..AlertDto::new(
                    NOW - 60,
                    AlertRule::ProducerGrowth,
                    Some("gpuarchiver".to_owned()),
                    "GPU archiver grew",
                    "GPU archiver grew 1.0 GiB in 1 h. Reclaim: cachewatch reclaim --producer \
                     gpuarchiver --older-than 1h. Upstream: https://example.org/1",
                )
            },
            AlertDto::new(
                NOW - 120,
                AlertRule::FreeDisk,
                None,
                "Disk almost full",
                "Only 9.0 GiB free, below 10.0 GiB. See `cachewatch status` for what can be \
                 reclaimed.",
            ),
        ],
        crash_groups: vec![
            CrashGroupDto {
                process: "Preview".to_owned(),
                signature: "crash".to_owned(),
                title: "A process keeps crashing".to_owned(),
                count: 6,
                first_unix_secs: NOW - 600,
                last_unix_secs: NOW - 60,
                report_bytes: 120_000,
                detail: None,
            },
            CrashGroupDto {
                process: "Photos".to_owned(),
                signature: "coreai-ndarray-allocation-cap".to_owned(),
                title: "Core AI allocation cap".to_owned(),
                count: 2,
                first_unix_secs: NOW - 6000,
                last_unix_secs: NOW - 600,
                report_bytes: 40_000,
                detail: Some("reloaded the model 4 times".to_owned()),
            },
        ],
        errors: vec!["history unavailable".to_owned()],
        auto_reclaim: auto_reclaim(),
        live_at_unix_secs: NOW,
        stopped: None,
    }
}

fn auto_reclaim() -> cachewatch::autoreclaim::AutoReclaimDto {
    use cachewatch::autoreclaim::{
        AutoReclaimDto, AutoReclaimProgress, AutoRuleDto, AutoRun, ProducerFreed, ReclaimedDto,
        RunStatus, Trigger,
    };
    let run = AutoRun {
        rule: "metal".to_owned(),
        trigger: Trigger::Interval,
        status: RunStatus::Done,
        producers: vec!["metal-gpuarchiver".to_owned()],
        older_than_secs: 3600,
        started_unix_secs: NOW - 60,
        finished_unix_secs: NOW - 58,
        planned_items: 3,
        deleted_items: 2,
        freed_bytes: 8192,
        already_gone: 0,
        kept: [("in-use".to_owned(), 1)].into_iter().collect(),
        errors: 0,
        first_error: None,
        by_producer: [(
            "metal-gpuarchiver".to_owned(),
            ProducerFreed {
                items: 2,
                bytes: 8192,
            },
        )]
        .into_iter()
        .collect(),
    };
    AutoReclaimDto {
        enabled: true,
        progress: Some(AutoReclaimProgress {
            rule: "metal".to_owned(),
            items_done: 1024,
            items_total: 3000,
            deleted_items: 1000,
            deleted_bytes: 4 << 20,
        }),
        rules: vec![AutoRuleDto {
            rule: "metal".to_owned(),
            producers: vec!["metal-gpuarchiver".to_owned()],
            older_than_secs: 3600,
            runs: 4,
            last_run: Some(run),
            note: Some("freed nothing: kept 1 (in use)".to_owned()),
        }],
        reclaimed: vec![ReclaimedDto {
            producer: "metal-gpuarchiver".to_owned(),
            items: 8,
            bytes: 32768,
        }],
    }
}

fn planned(path: &str, with_times: bool) -> PlannedItem {
    PlannedItem {
        path: PathBuf::from(path),
        root: PathBuf::from("/roots/temp"),
        producer: "gpuarchiver".to_owned(),
        allocated_bytes: 4096,
        apparent_bytes: 100,
        freeable_bytes: 4096,
        age_secs: 90_000,
        dev: 66,
        ino: 1234,
        is_symlink: false,
        newest_mtime: with_times.then(|| at(NOW - 90_000)),
        name_ts: with_times.then(|| at(NOW - 95_000)),
        owner_pid: with_times.then_some(4321),
        owner_app: None,
        birth_time: with_times.then(|| at(NOW - 95_000)),
        born: with_times.then(|| at(NOW - 95_000)),
    }
}

fn kept(reason: KeepReason) -> KeptItem {
    KeptItem {
        path: PathBuf::from("/roots/temp/kept"),
        producer: "gpuarchiver".to_owned(),
        reason,
    }
}

/// One of each [`KeepReason`]; the `match` fails to compile when a variant is added, so the
/// list stays complete.
fn every_keep_reason() -> Vec<KeepReason> {
    let all = vec![
        KeepReason::TooYoung {
            age_secs: 60,
            needed_secs: 86_400,
        },
        KeepReason::OwnerAlive { pid: 1 },
        KeepReason::InUse {
            pid: 2,
            path: PathBuf::from("/roots/temp/kept/open.db"),
        },
        KeepReason::AppRunning {
            name: "Xcode".to_owned(),
        },
        KeepReason::Never,
        KeepReason::Manual,
        KeepReason::Structure,
        KeepReason::Changed {
            what: "inode".to_owned(),
        },
        KeepReason::UnknownProducer,
        KeepReason::HoldsRoot {
            root: PathBuf::from("/roots/cache"),
        },
        KeepReason::HoldsMount {
            path: PathBuf::from("/roots/temp/kept/mnt"),
        },
        KeepReason::HoldsProtected {
            path: PathBuf::from("/home/user"),
        },
        KeepReason::NewestCloneOfRunningApp {
            app: "Google Chrome".to_owned(),
        },
        KeepReason::NewestVersion {
            version: "14.5.1".to_owned(),
        },
        KeepReason::StagedUpdate {
            staged: Some("5.3 (530)".to_owned()),
            installed: Some("5.2 (520)".to_owned()),
        },
        KeepReason::Unreadable {
            path: PathBuf::from("/roots/temp/kept/private"),
        },
        KeepReason::NotDeletable {
            path: PathBuf::from("/roots/temp/kept/root-owned"),
        },
        KeepReason::NotChecked {
            path: PathBuf::from("/roots/temp/kept/deep/level-9"),
            error: "Too many open files (os error 24)".to_owned(),
        },
    ];
    for r in &all {
        match r {
            KeepReason::TooYoung { .. }
            | KeepReason::OwnerAlive { .. }
            | KeepReason::InUse { .. }
            | KeepReason::AppRunning { .. }
            | KeepReason::Never
            | KeepReason::Manual
            | KeepReason::Structure
            | KeepReason::Changed { .. }
            | KeepReason::UnknownProducer
            | KeepReason::HoldsRoot { .. }
            | KeepReason::HoldsMount { .. }
            | KeepReason::HoldsProtected { .. }
            | KeepReason::NewestCloneOfRunningApp { .. }
            | KeepReason::NewestVersion { .. }
            | KeepReason::StagedUpdate { .. }
            | KeepReason::Unreadable { .. }
            | KeepReason::NotDeletable { .. }
            | KeepReason::NotChecked { .. } => {}
        }
    }
    all
}

fn group_rule_preview(made: bool) -> GroupRulePreview {
    GroupRulePreview {
        root: "/roots/temp".to_owned(),
        root_kind: RootKind::Temp,
        label: if made {
            "swc-<uuid>/"
        } else {
            "swc\\xff-<uuid>/"
        }
        .to_owned(),
        shape: if made {
            "swc-<uuid>/"
        } else {
            "swc\\xff-<uuid>/"
        }
        .to_owned(),
        members: 24,
        allocated_bytes: 98_304,
        apparent_bytes: 61_000,
        rule: made.then(|| GroupRuleDto {
            id: "local-swc".to_owned(),
            name: "Unknown producer of swc-<uuid>/".to_owned(),
            glob: "swc-*".to_owned(),
            regex:
                "^swc-[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$"
                    .to_owned(),
            toml: "[[producer]]\nid = \"local-swc\"\n".to_owned(),
        }),
        refused: (!made)
            .then(|| "the names of group \"swc\\xff-<uuid>/\" are not UTF-8 text".to_owned()),
        claimed: if made { 24 } else { 0 },
        wrongly_claimed: Vec::new(),
        missed: Vec::new(),
    }
}

fn settings() -> Settings {
    let mut config = cachewatch::api::settings::ConfigSettings::default();
    config.alerts.total_limit_bytes = Some(20 << 30);
    Settings {
        sizes: cachewatch::api::settings::size_texts(&config),
        config,
        open_at_login: true,
    }
}

fn report_draft() -> ReportDraft {
    ReportDraft {
        subject: ReportSubject::Group,
        template: "wrk_<digits2-6>_<digits1>_<ts>/".to_owned(),
        producer_id: None,
        producer_name: None,
        root_kind: "temp".to_owned(),
        roots: vec!["/tmp".to_owned()],
        items: 24,
        allocated_bytes: 96 * 1024,
        apparent_bytes: 61_000,
        growth: Some(GrowthFigures {
            source: GrowthSource::Births,
            bytes_per_day: 48 * 1024,
            items_per_day: 12,
            span_secs: 2 * 86_400,
        }),
        oldest_unix_secs: Some(NOW - 2 * 86_400),
        newest_unix_secs: Some(NOW - 600),
        examples: vec!["wrk_4242_0_1764900000/".to_owned()],
        writer: Some(ReportWriter {
            name: "leakwriter".to_owned(),
            exe: Some("/usr/local/bin/leakwriter".to_owned()),
            version: None,
        }),
        evidence: Vec::new(),
        os: OsDto {
            name: "macOS".to_owned(),
            version: Some("26.1".to_owned()),
            kernel: Some("25.1.0".to_owned()),
        },
        markdown: "## Leftover `wrk_<digits2-6>_<digits1>_<ts>/` in the temp dir\n".to_owned(),
    }
}

/// `(constant name, TypeScript type, serde JSON)` of each sample.
pub fn all() -> Vec<(&'static str, &'static str, Value)> {
    let v = |r: Result<Value, serde_json::Error>| r.expect("a sample serializes");
    vec![
        ("SNAPSHOT", "Snapshot", v(to_value(snapshot()))),
        ("PREVIEW", "ReclaimPreview", v(to_value(preview()))),
        ("RESULT", "ReclaimResult", v(to_value(result()))),
        ("SETTINGS", "Settings", v(to_value(settings()))),
        (
            "GROUP_RULE_PREVIEW",
            "GroupRulePreview",
            v(to_value(group_rule_preview(true))),
        ),
        (
            "GROUP_RULE_REFUSED",
            "GroupRulePreview",
            v(to_value(group_rule_preview(false))),
        ),
        (
            "GROUP_RULE_ADDED",
            "GroupRuleAdded",
            v(to_value(GroupRuleAdded {
                id: "local-swc".to_owned(),
                claimed: 24,
                config: "/home/me/.config/cachewatch/config.toml".to_owned(),
            })),
        ),
        (
            "PRODUCER_HISTORY",
            "ProducerHistory",
            v(to_value(producer_history())),
        ),
        (
            "GROUP_HISTORY",
            "GroupHistory",
            v(to_value(group_history())),
        ),
        ("REPORT_DRAFT", "ReportDraft", v(to_value(report_draft()))),
        (
            "RECLAIM_RUN_BY_RULE",
            "ReclaimRun",
            v(to_value(reclaim_run(true))),
        ),
        (
            "RECLAIM_RUN_ASKED",
            "ReclaimRun",
            v(to_value(reclaim_run(false))),
        ),
        (
            "DEFAULT_SETTINGS",
            "Settings",
            v(to_value(Settings {
                config: cachewatch::api::settings::ConfigSettings::default(),
                open_at_login: false,
                sizes: cachewatch::api::settings::size_texts(
                    &cachewatch::api::settings::ConfigSettings::default(),
                ),
            })),
        ),
        (
            "IPC_ERROR",
            "IpcError",
            v(to_value(IpcError::new(
                ErrorCode::UnknownPlan,
                "no plan \"x\"",
            ))),
        ),
        (
            "IPC_ERROR_OF_A_FIELD",
            "IpcError",
            v(to_value(IpcError::from(
                cachewatch::api::ApiError::BadSize {
                    field: "alerts.total_limit_bytes".to_owned(),
                    message: "bad size \"50 MB\": decimal units are ambiguous".to_owned(),
                },
            ))),
        ),
        ("UI_STATE_IDLE", "UiState", v(to_value(UiState::default()))),
        (
            "UI_STATE_EXECUTING",
            "UiState",
            v(to_value(UiState {
                view: UiView {
                    scope: Some("metal-gpuarchiver".into()),
                    expanded: vec!["metal-gpuarchiver".into()],
                    threshold_secs: Some(86_400),
                    focus: Some("metal-gpuarchiver".into()),
                },
                reclaim: ReclaimJob::Executing { plan: preview() },
            })),
        ),
        (
            "UI_STATE_DONE",
            "UiState",
            v(to_value(UiState {
                view: UiView::default(),
                reclaim: ReclaimJob::Done {
                    plan: preview(),
                    report: result(),
                },
            })),
        ),
        (
            "UI_STATE_FAILED",
            "UiState",
            v(to_value(UiState {
                view: UiView::default(),
                reclaim: ReclaimJob::Failed {
                    plan: preview(),
                    error: IpcError::new(ErrorCode::JobFailed, "the reclaim job failed"),
                },
            })),
        ),
    ]
}
