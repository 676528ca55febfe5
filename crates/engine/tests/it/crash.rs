//! Crash reports: parsing the `.ips` fixtures, classification with the built-in signatures,
//! grouping, and one crash-loop alert for a burst of reports.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cachewatch::crash::{
    group_reports, read_report, CrashError, CrashLoopConfig, CrashWatch, ReportKind, Signatures,
    CRASH_LOOP_RULE, MAX_REPORT_BYTES,
};
use cachewatch_testkit::ips::{fixture, write_burst};

const COREAI: &str = "coreai-ndarray-allocation-cap";
const GENERIC: &str = "crash";

fn at(unix_secs: u64, millis: u32) -> SystemTime {
    UNIX_EPOCH + Duration::new(unix_secs, millis * 1_000_000)
}

/// File size as `stat` reports it, independently of the code under test.
fn stat_size(path: &Path) -> u64 {
    let out = std::process::Command::new("stat")
        .args(["-c", "%s"])
        .arg(path)
        .output()
        .unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn coreai_shared_storage_report_is_parsed_and_classified() {
    let path = fixture("coreai_shared_storage.ips");
    let r = read_report(&path).unwrap();
    assert_eq!(r.process, "inference-worker");
    assert_eq!(r.pid, Some(48213));
    assert_eq!(r.bug_type.as_deref(), Some("309"));
    assert_eq!(r.os_version.as_deref(), Some("macOS 27.0 (27A5218g)"));
    assert_eq!(
        r.incident_id.as_deref(),
        Some("8C0A4E2B-71D3-4F6A-9B5E-2D7C1A0F3E49")
    );
    assert_eq!(r.exception_type.as_deref(), Some("EXC_BREAKPOINT"));
    assert_eq!(r.signal.as_deref(), Some("SIGTRAP"));
    // captureTime "2026-03-14 09:26:52.8731 +0100" = `date -u -d '2026-03-14 08:26:52' +%s`.
    assert_eq!(
        r.time,
        UNIX_EPOCH + Duration::new(1_773_476_812, 873_100_000)
    );
    // faultingThread 2 (not thread 0): its frames' images in order, each once.
    assert_eq!(
        r.thread_images,
        [
            "libswiftCore.dylib",
            "CoreAIRuntime",
            "inference-worker",
            "libdispatch.dylib"
        ]
    );
    assert_eq!(
        r.thread_symbols[0],
        "_assertionFailure(_:_:file:line:flags:)"
    );
    assert_eq!(
        r.messages,
        ["CoreAIRuntime/NDArray+SharedStorage.swift:108: Fatal error: Failed to allocate storage for NDArray"]
    );
    assert_eq!(r.file_bytes, stat_size(&path));
    let sigs = Signatures::builtin();
    assert_eq!(sigs.classify(&r).map(|s| s.id.as_str()), Some(COREAI));
}

#[test]
fn coreai_pool_report_compact_body_is_classified_by_its_assertion_site() {
    let r = read_report(&fixture("coreai_pool.ips")).unwrap();
    assert_eq!(r.process, "embedder");
    assert_eq!(r.pid, Some(7301));
    // "2026-03-14 10:02:10.4410 +0000".
    assert_eq!(r.time, at(1_773_482_530, 441));
    assert_eq!(
        r.messages,
        ["CoreAIRuntime/NDArray+Pool.swift:77: Fatal error"]
    );
    assert_eq!(
        r.thread_images,
        ["libswiftCore.dylib", "CoreAIRuntime", "embedder", "dyld"]
    );
    let sigs = Signatures::builtin();
    assert_eq!(sigs.classify(&r).map(|s| s.id.as_str()), Some(COREAI));
}

#[test]
fn plain_sigsegv_is_only_a_generic_crash() {
    let r = read_report(&fixture("sigsegv.ips")).unwrap();
    assert_eq!(r.process, "thumbnailer");
    assert_eq!(r.exception_type.as_deref(), Some("EXC_BAD_ACCESS"));
    assert_eq!(r.signal.as_deref(), Some("SIGSEGV"));
    // "2026-03-12 18:40:04.9001 -0500" = 23:40:04.9001 UTC.
    assert_eq!(
        r.time,
        UNIX_EPOCH + Duration::new(1_773_358_804, 900_100_000)
    );
    assert!(r.messages.is_empty());
    let sigs = Signatures::builtin();
    assert_eq!(sigs.classify(&r).map(|s| s.id.as_str()), Some(GENERIC));
}

/// A crash report whose body is not JSON (not cut short: broken) is unreadable, the error naming
/// the path and the cause. (A body cut short counts by its header: `crash_written.rs`.)
#[test]
fn broken_report_is_unreadable_naming_path_and_cause() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken-2026-03-14-100000.ips");
    let text = std::fs::read_to_string(fixture("truncated.ips")).unwrap();
    std::fs::write(&path, format!("{text} ]]] }}")).unwrap();
    match read_report(&path) {
        Err(e @ CrashError::Parse { .. }) => {
            let text = e.to_string();
            assert!(text.contains("broken-2026-03-14-100000.ips"), "{text}");
            assert!(text.contains("body is not JSON"), "{text}");
        }
        other => panic!("expected a parse error, got {other:?}"),
    }
}

/// Regression: a JSON header of `bug_type` 109 over a
/// legacy text body was "unreadable (body is not JSON)"; it is a crash of `legacyd`.
#[test]
fn header_over_legacy_text_body_109_is_a_crash_not_unreadable() {
    let r = read_report(&fixture("legacy_109.ips")).unwrap();
    assert_eq!(r.kind, ReportKind::Crash);
    assert_eq!(r.bug_type.as_deref(), Some("109"));
    assert_eq!(r.process, "legacyd");
    assert_eq!(r.pid, Some(912));
    assert_eq!(r.exception_type.as_deref(), Some("EXC_CRASH"));
    assert_eq!(r.signal.as_deref(), Some("SIGABRT"));
    // "2026-03-10 07:00:00.000 +0000" = `date -u -d '2026-03-10 07:00:00' +%s`.
    assert_eq!(r.time, at(1_773_126_000, 0));
    assert_eq!(
        r.thread_images,
        ["libsystem_kernel.dylib", "libsystem_pthread.dylib"]
    );
    assert_eq!(r.thread_symbols, ["__pthread_kill", "pthread_kill"]);
    let sigs = Signatures::builtin();
    assert_eq!(sigs.classify(&r).map(|s| s.id.as_str()), Some(GENERIC));
}

#[test]
fn huge_report_is_refused_without_reading_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge-2026-03-14-100000.ips");
    let f = std::fs::File::create(&path).unwrap();
    f.set_len(MAX_REPORT_BYTES + 1).unwrap();
    match read_report(&path) {
        Err(CrashError::TooLarge {
            path: p,
            bytes,
            max_bytes,
        }) => {
            assert_eq!(p, path);
            assert_eq!(bytes, 8 * 1024 * 1024 + 1);
            assert_eq!(max_bytes, 8 * 1024 * 1024);
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
    // A header line and nothing else: an error, not a panic.
    std::fs::write(&path, "{\"app_name\":\"x\"}").unwrap();
    assert!(matches!(read_report(&path), Err(CrashError::Parse { .. })));
    std::fs::write(&path, [0xff, 0xfe, b'\n', b'{']).unwrap();
    assert!(matches!(read_report(&path), Err(CrashError::Parse { .. })));
}

#[test]
fn burst_of_20_reports_raises_one_crash_loop_alert_not_20() {
    let dir = tempfile::tempdir().unwrap();
    let now = at(1_773_482_400, 0);
    // 20 reports, 30 s apart, the last one at `now`: all within the 10-minute window.
    let paths = write_burst(
        dir.path(),
        "coreai-worker",
        now - Duration::from_secs(19 * 30),
        Duration::from_secs(30),
        20,
    );
    let mut watch = CrashWatch::with_dirs(
        vec![dir.path().to_owned()],
        Signatures::builtin(),
        CrashLoopConfig::default(),
    );
    let alerts = watch.update(now);
    assert_eq!(alerts.len(), 1, "{alerts:#?}");
    let a = &alerts[0];
    assert_eq!(a.rule, CRASH_LOOP_RULE);
    assert_eq!(
        a.title,
        "CoreAI runtime allocation cap: the process is killed after 16384 outputs"
    );
    assert_eq!(a.producer.as_deref(), Some("diagnostic-reports"));
    assert_eq!(a.time_unix_secs, 1_773_482_400);
    assert!(
        a.message
            .starts_with("coreai-worker crashed 20 times in the last 10 min (20 reports in all"),
        "{}",
        a.message
    );
    assert!(
        a.message.contains("Recycle the worker process"),
        "{}",
        a.message
    );
    assert!(a.message.contains("floor(16384 / N)"), "{}", a.message);

    let groups = watch.group_dtos();
    assert_eq!(groups.len(), 1);
    let g = &groups[0];
    assert_eq!(g.process, "coreai-worker");
    assert_eq!(g.signature, COREAI);
    assert_eq!(g.count, 20);
    assert_eq!(g.first_unix_secs, 1_773_482_400 - 570);
    assert_eq!(g.last_unix_secs, 1_773_482_400);
    let bytes: u64 = paths.iter().map(|p| stat_size(p)).sum();
    assert_eq!(g.report_bytes, bytes);

    // Nothing new, and more reports within the cooldown: silent.
    assert!(watch.update(now + Duration::from_secs(60)).is_empty());
    write_burst(
        dir.path(),
        "coreai-worker",
        now + Duration::from_secs(90),
        Duration::from_secs(10),
        5,
    );
    assert!(watch.update(now + Duration::from_secs(150)).is_empty());
    assert_eq!(watch.groups()[0].count, 25);

    // After the 6 h cooldown, a new loop alerts again; old reports alone do not.
    let later = now + Duration::from_secs(6 * 3600 + 600);
    assert!(watch.update(later).is_empty());
    write_burst(
        dir.path(),
        "coreai-worker",
        later,
        Duration::from_secs(20),
        5,
    );
    let again = watch.update(later + Duration::from_secs(100));
    assert_eq!(again.len(), 1);
    assert!(
        again[0].message.contains("crashed 5 times"),
        "{}",
        again[0].message
    );
}

#[test]
fn reports_below_the_threshold_or_spread_out_do_not_alert() {
    let dir = tempfile::tempdir().unwrap();
    let now = at(1_773_482_400, 0);
    // 4 within 10 minutes: below the default of 5.
    write_burst(
        dir.path(),
        "a",
        now - Duration::from_secs(240),
        Duration::from_secs(60),
        4,
    );
    // 6 spread over 50 minutes: at most 2 in any 10 minutes ending now.
    write_burst(
        dir.path(),
        "b",
        now - Duration::from_secs(3000),
        Duration::from_secs(600),
        6,
    );
    let mut watch = CrashWatch::with_dirs(
        vec![dir.path().to_owned()],
        Signatures::builtin(),
        CrashLoopConfig::default(),
    );
    assert!(watch.update(now).is_empty());
    let counts: Vec<(String, u64)> = watch
        .groups()
        .iter()
        .map(|g| (g.process.clone(), g.count))
        .collect();
    // Newest report first: "a" ends 60 s before now (4th at -240+180), "b" at -3000+3000 = now.
    assert_eq!(counts, [("b".to_owned(), 6), ("a".to_owned(), 4)]);
    // With a threshold of 2 both alert: all 4 of "a", and the 2 of "b" at now - 600 s and now.
    let cfg = CrashLoopConfig {
        crash_loop_reports: 2,
        ..CrashLoopConfig::default()
    };
    let mut low = CrashWatch::with_dirs(vec![dir.path().to_owned()], Signatures::builtin(), cfg);
    let mut fired: Vec<String> = low.update(now).iter().map(|a| a.message.clone()).collect();
    fired.sort();
    assert_eq!(fired.len(), 2, "{fired:#?}");
    assert!(fired[0].starts_with("a crashed 4 times"), "{}", fired[0]);
    assert!(fired[1].starts_with("b crashed 2 times"), "{}", fired[1]);
}

#[test]
fn mixed_reports_dir_groups_by_process_and_signature_and_lists_unreadable() {
    let dir = tempfile::tempdir().unwrap();
    let retired = dir.path().join("Retired");
    std::fs::create_dir(&retired).unwrap();
    for (name, to) in [
        ("coreai_shared_storage.ips", dir.path()),
        ("coreai_pool.ips", retired.as_path()),
        ("sigsegv.ips", dir.path()),
        ("truncated.ips", dir.path()),
        ("legacy_109.ips", retired.as_path()),
    ] {
        std::fs::copy(fixture(name), to.join(name)).unwrap();
    }
    std::fs::write(dir.path().join("notes.txt"), "not a report").unwrap();
    std::fs::write(dir.path().join("garbage.ips"), "hello\nworld\n").unwrap();
    let mut watch = CrashWatch::with_dirs(
        vec![dir.path().to_owned()],
        Signatures::builtin(),
        CrashLoopConfig::default(),
    );
    assert!(watch.update(at(1_773_482_600, 0)).is_empty());
    let got: Vec<(String, String, u64)> = watch
        .groups()
        .iter()
        .map(|g| (g.process.clone(), g.signature.clone(), g.count))
        .collect();
    assert_eq!(
        got,
        [
            ("embedder".to_owned(), COREAI.to_owned(), 1),
            // truncated.ips, counted by its header (its body, and so its signature, is cut).
            ("inference-worker".to_owned(), GENERIC.to_owned(), 1),
            ("inference-worker".to_owned(), COREAI.to_owned(), 1),
            ("thumbnailer".to_owned(), GENERIC.to_owned(), 1),
            ("legacyd".to_owned(), GENERIC.to_owned(), 1),
        ]
    );
    let bad = watch.unreadable();
    let names: Vec<&str> = bad
        .iter()
        .map(|u| u.path.file_name().unwrap().to_str().unwrap())
        .collect();
    assert_eq!(names, ["garbage.ips"]);
    let partial = watch.partial();
    assert_eq!(partial.len(), 1, "{partial:#?}");
    assert!(partial[0].path.ends_with("truncated.ips"));
    assert!(bad
        .iter()
        .all(|u| u.cause.contains(u.path.to_str().unwrap())));

    // The same reports through the pure functions agree.
    let reports: Vec<_> = [
        "coreai_shared_storage.ips",
        "coreai_pool.ips",
        "sigsegv.ips",
    ]
    .iter()
    .map(|n| read_report(&fixture(n)).unwrap())
    .collect();
    let groups = group_reports(&reports, &Signatures::builtin());
    assert_eq!(groups.len(), 3);
}

/// The crash loop replayed into a watched `diagnostic-reports` root while the monitor runs: one
/// CoreAI alert on the broadcast channel and in the snapshot, and the group in the snapshot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_loop_replayed_into_a_watched_reports_dir_alerts_once_through_the_monitor() {
    use std::sync::Arc;

    use cachewatch::alerts::AlertsConfig;
    use cachewatch::dto::MonitorState;
    use cachewatch::monitor::{self, MonitorOptions};
    use cachewatch_core::clock::ManualClock;
    use cachewatch_core::{Catalogue, Root, RootKind};

    let dir = tempfile::tempdir().unwrap();
    let reports = dir.path().join("DiagnosticReports");
    std::fs::create_dir(&reports).unwrap();
    let now = at(1_773_482_400, 0);
    let mut opts = MonitorOptions::new(
        vec![Root::new(RootKind::DiagnosticReports, &reports).unwrap()],
        Arc::new(Catalogue::builtin()),
    );
    opts.clock = Arc::new(ManualClock::new(now));
    opts.debounce = Duration::from_millis(50);
    opts.alerts = AlertsConfig {
        free_disk_min_bytes: 0,
        disk_full_eta_min_hours: 0,
        ..AlertsConfig::default()
    };
    let m = monitor::spawn(opts).unwrap();
    let mut alerts = m.alerts();
    m.subscribe()
        .wait_for(|s| s.state != MonitorState::Scanning)
        .await
        .unwrap();
    m.flush().await.unwrap();
    assert!(m.snapshot().crash_groups.is_empty());

    // 20 reports in 10 minutes, delivered in 4 bursts with a flush after each.
    for k in 0..4u32 {
        write_burst(
            &reports,
            "coreai-worker",
            now - Duration::from_secs(570) + Duration::from_secs(150) * k,
            Duration::from_secs(30),
            5,
        );
        m.flush().await.unwrap();
    }
    let s = m.snapshot();
    let crash_alerts: Vec<_> = s.alerts.iter().filter(|a| a.rule == "crash-loop").collect();
    assert_eq!(crash_alerts.len(), 1, "{:#?}", s.alerts);
    assert_eq!(
        crash_alerts[0].title,
        "CoreAI runtime allocation cap: the process is killed after 16384 outputs"
    );
    // The first burst (5 reports) is already a loop: the alert says so, once.
    assert!(
        crash_alerts[0]
            .message
            .starts_with("coreai-worker crashed 5 times"),
        "{}",
        crash_alerts[0].message
    );
    let mut broadcast = Vec::new();
    while let Ok(a) = alerts.try_recv() {
        broadcast.push(a);
    }
    let broadcast: Vec<_> = broadcast
        .iter()
        .filter(|a| a.rule == "crash-loop")
        .collect();
    assert_eq!(broadcast.len(), 1, "{broadcast:#?}");
    assert_eq!(s.crash_groups.len(), 1);
    let g = &s.crash_groups[0];
    assert_eq!(
        (g.process.as_str(), g.signature.as_str(), g.count),
        ("coreai-worker", COREAI, 20)
    );
    assert_eq!(g.first_unix_secs, 1_773_482_400 - 570);
    assert_eq!(g.last_unix_secs, 1_773_482_400);
    m.shutdown().await;
}
