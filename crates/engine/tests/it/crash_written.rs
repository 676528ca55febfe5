//! Reports as a reports dir really holds them, and as the monitor catches them: a report read
//! while macOS writes it (header line, body cut short or not yet there) counts by its header and
//! is read whole when it grows; a Console.app copy is read past its "Translated Report" preamble;
//! synced analytics (`.ips.ca.synced`) and stackshots never count as crashes.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cachewatch::crash::{
    read_report, CrashError, CrashLoopConfig, CrashWatch, ReportKind, Signatures, MAX_REPORT_BYTES,
};
use cachewatch_testkit::ips::{
    console_copy, fixture, header_line, report_name, segv_report, stackshot, synced_analytics,
    template, write_report,
};

const COREAI: &str = "coreai-ndarray-allocation-cap";
const GENERIC: &str = "crash";

fn at(unix_secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(unix_secs)
}

fn watch_dir(dir: &Path) -> CrashWatch {
    CrashWatch::with_dirs(
        vec![dir.to_owned()],
        Signatures::builtin(),
        CrashLoopConfig::default(),
    )
}

/// (process, signature, count) of each group.
fn groups(w: &CrashWatch) -> Vec<(String, String, u64)> {
    w.groups()
        .iter()
        .map(|g| (g.process.clone(), g.signature.clone(), g.count))
        .collect()
}

/// Regression: the truncated fixture was unreadable ("body is truncated"); it is a crash of
/// `inference-worker` at its header's time, marked partial with the cause.
#[test]
fn a_truncated_body_counts_by_its_header() {
    let r = read_report(&fixture("truncated.ips")).unwrap();
    assert_eq!(r.kind, ReportKind::Crash);
    assert_eq!(r.bug_type.as_deref(), Some("309"));
    assert_eq!(r.process, "inference-worker");
    // "2026-03-14 09:26:53.00 +0100" = `date -u -d '2026-03-14 08:26:53' +%s`.
    assert_eq!(r.time, at(1_773_476_813));
    let cause = r.partial.as_deref().unwrap();
    assert!(cause.contains("body is truncated"), "{cause}");
    // Nothing of the body was used.
    assert_eq!(r.exception_type, None);
    assert!(r.thread_frames.is_empty());
}

/// The moment a report appears: its header line and nothing else (with or without the newline).
#[test]
fn a_header_with_no_body_yet_counts_by_its_header() {
    let dir = tempfile::tempdir().unwrap();
    let t = at(1_773_482_400);
    for (name, text) in [
        (
            "a-2026-03-14-100000.ips",
            header_line("309", Some("svc"), t),
        ),
        (
            "b-2026-03-14-100000.ips",
            format!("{}\n", header_line("309", Some("svc"), t)),
        ),
    ] {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        let r = read_report(&p).unwrap();
        assert_eq!(
            (r.kind, r.process.as_str(), r.time),
            (ReportKind::Crash, "svc", t),
            "{name}"
        );
        assert_eq!(
            r.partial.as_deref(),
            Some("no body after the header line yet")
        );
    }
    // A header that does not say what the file is, and nothing else: still unreadable.
    let p = dir.path().join("c-2026-03-14-100000.ips");
    std::fs::write(&p, "{\"app_name\":\"svc\"}\n").unwrap();
    match read_report(&p) {
        Err(e @ CrashError::Parse { .. }) => {
            assert!(e.to_string().contains("no bug_type"), "{e}")
        }
        other => panic!("expected a parse error, got {other:?}"),
    }
    // A body that is not JSON at all is not "being written": unreadable.
    std::fs::write(
        &p,
        format!(
            "{}\n{{ \"pid\" : oops }}\n",
            header_line("309", Some("svc"), t)
        ),
    )
    .unwrap();
    assert!(matches!(read_report(&p), Err(CrashError::Parse { .. })));
}

/// A report cut at every line of its body reads as the same crash (kind, process, time), partial,
/// and the whole file reads complete with its frames.
#[test]
fn a_report_cut_anywhere_in_its_body_is_the_same_crash() {
    let dir = tempfile::tempdir().unwrap();
    let t = at(1_773_482_400);
    let text = segv_report("ingest", t, 4242);
    let p = dir.path().join(report_name("ingest", t));
    let header_end = text.find('\n').unwrap() + 1;
    let cuts: Vec<usize> = text[header_end..]
        .match_indices('\n')
        .map(|(i, _)| header_end + i)
        .collect();
    assert!(cuts.len() >= 10, "{cuts:?}");
    for &cut in &cuts[..cuts.len() - 1] {
        std::fs::write(&p, &text[..cut]).unwrap();
        let r = read_report(&p).unwrap();
        assert_eq!(
            (r.kind, r.process.as_str(), r.time),
            (ReportKind::Crash, "ingest", t),
            "cut at {cut}"
        );
        assert!(r.partial.is_some(), "cut at {cut}");
    }
    std::fs::write(&p, &text).unwrap();
    let r = read_report(&p).unwrap();
    assert_eq!(r.partial, None);
    assert_eq!(r.pid, Some(4242));
    assert_eq!(r.signal.as_deref(), Some("SIGSEGV"));
    assert_eq!(r.thread_symbols, ["parse_row", "main", "start"]);
}

/// Regression: a Console copy (preamble before the JSON) was not read as its report. The
/// original after "Full Report" is read: the same report as the `.ips` itself; a copy of the
/// translation alone is read as legacy text.
#[test]
fn a_console_copy_is_read_past_its_preamble() {
    let dir = tempfile::tempdir().unwrap();
    let t = at(1_773_482_400);
    let original = template("coreai_pool.ips");
    let ips = write_report(&original, dir.path(), "embedder", t, 7301);
    let copy_path = dir.path().join("embedder copy.crash");
    let ips_text = std::fs::read_to_string(&ips).unwrap();
    std::fs::write(&copy_path, console_copy(&ips_text, "embedder", 7301)).unwrap();
    let (a, b) = (read_report(&ips).unwrap(), read_report(&copy_path).unwrap());
    assert_eq!(b.kind, ReportKind::Crash);
    assert_eq!(b.partial, None);
    assert_eq!(
        (&b.process, b.pid, b.time, &b.thread_frames, &b.messages),
        (&a.process, a.pid, a.time, &a.thread_frames, &a.messages)
    );
    let sigs = Signatures::builtin();
    assert_eq!(sigs.classify(&b).map(|s| s.id.as_str()), Some(COREAI));

    let translated = console_copy("", "ingest", 51);
    let cut = translated.find("-----------\nFull Report").unwrap();
    let only = dir.path().join("ingest copy.crash");
    std::fs::write(&only, &translated[..cut]).unwrap();
    let r = read_report(&only).unwrap();
    assert_eq!(
        (r.kind, r.process.as_str(), r.pid),
        (ReportKind::Crash, "ingest", Some(51))
    );
    assert_eq!(r.signal.as_deref(), Some("SIGSEGV"));
}

/// Synced analytics are analytics whatever their header says, and are read for their header
/// only: one larger than the report cap is listed, not unreadable. Stackshots (with or without a
/// `bug_type`, whole or cut short) are hangs.
#[test]
fn synced_analytics_and_stackshots_are_never_crashes() {
    let dir = tempfile::tempdir().unwrap();
    let t = at(1_773_482_400);
    let small = dir.path().join("Analytics-2026-03-14-100000.ips.ca.synced");
    std::fs::write(&small, synced_analytics(t, 3)).unwrap();
    let r = read_report(&small).unwrap();
    assert_eq!(
        (r.kind, r.bug_type.as_deref()),
        (ReportKind::Analytics, Some("211"))
    );
    // A synced file whose header claims a crash is still analytics.
    let odd = dir.path().join("Analytics-2026-03-14-100001.ips.ca.synced");
    std::fs::write(&odd, segv_report("svc", t, 1)).unwrap();
    assert_eq!(read_report(&odd).unwrap().kind, ReportKind::Analytics);
    let big = dir.path().join("Analytics-2026-03-14-100002.ips.ca.synced");
    let mut text = synced_analytics(t, 0);
    while (text.len() as u64) <= MAX_REPORT_BYTES {
        text.push_str(&synced_analytics(t, 20_000)[200..]);
    }
    std::fs::write(&big, &text).unwrap();
    let r = read_report(&big).unwrap();
    assert_eq!(r.kind, ReportKind::Analytics);
    assert_eq!(r.file_bytes, text.len() as u64);
    assert_eq!(r.partial, None);

    let procs = ["WindowServer", "svc", "launchd"];
    let whole = stackshot(Some("288"), t, &procs);
    let bare = stackshot(None, t, &procs);
    for (i, text) in [whole.clone(), bare, whole[..whole.len() / 2].to_owned()]
        .iter()
        .enumerate()
    {
        let p = dir.path().join(format!("stacks-2026-03-14-10000{i}.ips"));
        std::fs::write(&p, text).unwrap();
        let r = read_report(&p).unwrap();
        assert_eq!(r.kind, ReportKind::Hang, "stackshot {i}");
    }
}

/// Every shape in one dir: the crashes are grouped (a partial one and a Console copy included),
/// the rest listed by kind, only garbage unreadable; no loop from the non-crashes even when they
/// are many and recent.
#[test]
fn a_dir_of_every_shape_groups_only_the_real_crashes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let now = at(1_773_482_400);
    // Crashes: two whole, one cut short, one header only, one Console copy.
    for i in 0..2u64 {
        let t = now - Duration::from_secs(60 * (i + 1));
        std::fs::write(
            d.join(report_name("ingest", t)),
            segv_report("ingest", t, 10 + i as u32),
        )
        .unwrap();
    }
    let t = now - Duration::from_secs(30);
    let text = segv_report("ingest", t, 12);
    std::fs::write(d.join(report_name("ingest", t)), &text[..text.len() / 2]).unwrap();
    let t = now - Duration::from_secs(20);
    std::fs::write(
        d.join(report_name("ingest", t)),
        header_line("309", Some("ingest"), t),
    )
    .unwrap();
    let t = now - Duration::from_secs(10);
    let pool = std::fs::read_to_string(write_report(
        &template("coreai_pool.ips"),
        d,
        "embedder",
        t,
        7301,
    ))
    .unwrap();
    std::fs::write(
        d.join("embedder copy.ips"),
        console_copy(&pool, "embedder", 7301),
    )
    .unwrap();
    // Not crashes, each many times within the loop window.
    for i in 0..6u64 {
        let t = now - Duration::from_secs(30 * i);
        std::fs::write(
            d.join(format!("Analytics-2026-03-14-0959{i:02}.ips.ca.synced")),
            synced_analytics(t, 2),
        )
        .unwrap();
        std::fs::write(
            d.join(format!("stacks-2026-03-14-0959{i:02}.ips")),
            stackshot(Some("288"), t, &["ingest", "launchd"]),
        )
        .unwrap();
        std::fs::write(
            d.join(format!("stacks+x-2026-03-14-0959{i:02}.ips")),
            stackshot(None, t, &["ingest"]),
        )
        .unwrap();
    }
    std::fs::write(d.join("garbage.ips"), "hello\nworld\n").unwrap();

    let mut w = watch_dir(d);
    let alerts = w.update(now);
    assert!(alerts.is_empty(), "{alerts:#?}");
    assert_eq!(
        groups(&w),
        [
            ("embedder".to_owned(), COREAI.to_owned(), 2),
            ("ingest".to_owned(), GENERIC.to_owned(), 4),
        ]
    );
    let others: Vec<(ReportKind, String, u64)> = w
        .others()
        .iter()
        .map(|o| (o.kind, o.process.clone(), o.count))
        .collect();
    assert_eq!(
        others,
        [
            (ReportKind::Hang, "stacks".to_owned(), 6),
            (ReportKind::Hang, "stacks+x".to_owned(), 6),
            (ReportKind::Analytics, "Analytics".to_owned(), 6),
        ]
    );
    let bad: Vec<String> = w
        .unreadable()
        .iter()
        .map(|u| u.path.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(bad, ["garbage.ips"]);
    assert_eq!(w.partial().len(), 2, "{:#?}", w.partial());
}

/// The monitor catches a report in two halves: after the first it is one crash counted by its
/// header (generic: its body is not there yet), after the second the same one crash, now
/// classified; with four earlier reports of the same loop, the loop alert fires once, when the
/// fifth is complete, saying 5.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_written_in_two_halves_is_counted_once_through_the_monitor() {
    use std::sync::Arc;

    use cachewatch::alerts::AlertsConfig;
    use cachewatch::dto::MonitorState;
    use cachewatch::monitor::{self, MonitorOptions};
    use cachewatch_core::clock::ManualClock;
    use cachewatch_core::{Catalogue, Root, RootKind};

    let dir = tempfile::tempdir().unwrap();
    let reports = dir.path().join("DiagnosticReports");
    std::fs::create_dir(&reports).unwrap();
    let now = at(1_773_482_400);
    let pool = template("coreai_pool.ips");
    for i in 0..4u64 {
        write_report(
            &pool,
            &reports,
            "worker",
            now - Duration::from_secs(60 * (5 - i)),
            100 + i as u32,
        );
    }
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
    m.subscribe()
        .wait_for(|s| s.state != MonitorState::Scanning)
        .await
        .unwrap();
    m.flush().await.unwrap();
    let counts = |s: &cachewatch::snapshot::Snapshot| -> Vec<(String, String, u64)> {
        s.crash_groups
            .iter()
            .map(|g| (g.process.clone(), g.signature.clone(), g.count))
            .collect()
    };
    assert_eq!(
        counts(&m.snapshot()),
        [("worker".to_owned(), COREAI.to_owned(), 4)]
    );

    // The fifth, in two halves: the header and part of the body, then the rest.
    let dir2 = tempfile::tempdir().unwrap();
    let whole_path = write_report(&pool, dir2.path(), "worker", now, 104);
    let whole = std::fs::read(&whole_path).unwrap();
    let target = reports.join(whole_path.file_name().unwrap());
    let half = whole.len() / 2;
    {
        use std::io::Write as _;
        let mut f = std::fs::File::create(&target).unwrap();
        f.write_all(&whole[..half]).unwrap();
        f.flush().unwrap();
        m.flush().await.unwrap();
        let s = m.snapshot();
        assert_eq!(
            counts(&s),
            [
                ("worker".to_owned(), GENERIC.to_owned(), 1),
                ("worker".to_owned(), COREAI.to_owned(), 4),
            ]
        );
        assert!(
            !s.alerts.iter().any(|a| a.rule == "crash-loop"),
            "{:#?}",
            s.alerts
        );
        f.write_all(&whole[half..]).unwrap();
        f.flush().unwrap();
    }
    // A later mtime, as the second write of a real report has.
    let f = std::fs::File::options().write(true).open(&target).unwrap();
    f.set_modified(SystemTime::now() + Duration::from_secs(2))
        .unwrap();
    drop(f);
    m.flush().await.unwrap();
    let s = m.snapshot();
    assert_eq!(counts(&s), [("worker".to_owned(), COREAI.to_owned(), 5)]);
    let loops: Vec<_> = s.alerts.iter().filter(|a| a.rule == "crash-loop").collect();
    assert_eq!(loops.len(), 1, "{:#?}", s.alerts);
    assert!(
        loops[0].message.starts_with("worker crashed 5 times"),
        "{}",
        loops[0].message
    );
    m.shutdown().await;
}
