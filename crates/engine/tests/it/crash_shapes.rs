//! Reports as Apple writes them (issues 9 and 8): every `bug_type` and the legacy text shape, the
//! three CoreAI trap sites as one crash loop, and bad input (FIFOs, huge frame lists).

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use cachewatch::crash::{
    read_report, CrashError, CrashLoopConfig, CrashWatch, ReportKind, Signatures, MAX_FRAMES,
    MAX_MESSAGES, MAX_REPORT_BYTES, MAX_THREAD_NAMES,
};
use cachewatch_testkit::ips::{fixture, template, write_report};

const COREAI: &str = "coreai-ndarray-allocation-cap";
const GENERIC: &str = "crash";

fn at(unix_secs: u64, millis: u32) -> SystemTime {
    UNIX_EPOCH + Duration::new(unix_secs, millis * 1_000_000)
}

fn watch_dir(dir: &Path) -> CrashWatch {
    CrashWatch::with_dirs(
        vec![dir.to_owned()],
        Signatures::builtin(),
        CrashLoopConfig::default(),
    )
}

/// Regression: the capacity check traps with no message; its report was a generic
/// crash. It is the CoreAI cap, known by `_assertionFailure` directly over CoreAIRuntime frames.
#[test]
fn coreai_capacity_check_without_a_message_is_the_coreai_cap() {
    let r = read_report(&fixture("coreai_capacity_check.ips")).unwrap();
    assert!(r.messages.is_empty());
    assert_eq!(r.exception_type.as_deref(), Some("EXC_BREAKPOINT"));
    assert_eq!(
        r.thread_images,
        ["libswiftCore.dylib", "CoreAIRuntime", "embedder", "dyld"]
    );
    assert_eq!(r.threads_named("ANEServicesThread"), 5);
    assert_eq!(r.termination.as_deref(), Some("Trace/BPT trap: 5"));
    let sigs = Signatures::builtin();
    assert_eq!(sigs.classify(&r).map(|s| s.id.as_str()), Some(COREAI));
}

/// A Swift assertion in the app's own code (not over CoreAIRuntime frames) is not the CoreAI cap.
#[test]
fn a_swift_assertion_over_other_frames_is_not_the_coreai_cap() {
    let text =
        template("coreai_capacity_check.ips").replace("\"imageIndex\":2}", "\"imageIndex\":0}");
    let dir = tempfile::tempdir().unwrap();
    let p = write_report(&text, dir.path(), "app", at(1_773_482_400, 0), 1);
    let r = read_report(&p).unwrap();
    assert_eq!(r.thread_images, ["libswiftCore.dylib", "app", "dyld"]);
    let sigs = Signatures::builtin();
    assert_eq!(sigs.classify(&r).map(|s| s.id.as_str()), Some(GENERIC));
}

/// Regression: a worker's crash loop of 20 reports mixing the three trap sites became
/// two groups (CoreAI cap and a generic "repeated-crash"). It is one group and one alert, and the
/// explanation says how many times the model was reloaded (5 ANEServicesThread = 4 reloads).
#[test]
fn twenty_mixed_site_coreai_reports_are_one_crash_loop() {
    let pool = template("coreai_pool.ips");
    let storage = pool.replace(
        "CoreAIRuntime/NDArray+Pool.swift:77: Fatal error",
        "CoreAIRuntime/NDArray+SharedStorage.swift:108: Fatal error: Failed to allocate storage for NDArray",
    );
    let capacity = template("coreai_capacity_check.ips");
    let sites = [&capacity, &pool, &storage];
    let dir = tempfile::tempdir().unwrap();
    let now = at(1_773_482_400, 0);
    for i in 0..20u32 {
        // The newest (i = 19) is a capacity-check report: (19 + 2) % 3 = 0.
        let site = sites[((i + 2) % 3) as usize];
        let t = now - Duration::from_secs(u64::from(19 - i) * 30);
        write_report(site, dir.path(), "worker", t, 9000 + i);
    }
    let mut watch = watch_dir(dir.path());
    let alerts = watch.update(now);
    let groups = watch.group_dtos();
    let got: Vec<(&str, &str, u64)> = groups
        .iter()
        .map(|g| (g.process.as_str(), g.signature.as_str(), g.count))
        .collect();
    assert_eq!(got, [("worker", COREAI, 20)]);
    let detail = groups[0].detail.as_deref().unwrap();
    assert!(
        detail.contains("5 ANEServicesThread threads")
            && detail.contains("reloaded the model 4 times; reloading does not reset the budget"),
        "{detail}"
    );
    assert_eq!(alerts.len(), 1, "{alerts:#?}");
    assert!(
        alerts[0]
            .message
            .starts_with("worker crashed 20 times in the last 10 min"),
        "{}",
        alerts[0].message
    );
    assert!(alerts[0].message.contains("reloaded the model 4 times"));
}

/// Regression: a valid JSON body followed by plain text (macOS 12) was unreadable.
#[test]
fn json_body_followed_by_text_is_read_and_the_text_ignored() {
    let r = read_report(&fixture("json_then_text.ips")).unwrap();
    assert_eq!(r.kind, ReportKind::Crash);
    assert_eq!(r.process, "photo-indexer");
    assert_eq!(r.pid, Some(20417));
    assert_eq!(r.exception_type.as_deref(), Some("EXC_BAD_ACCESS"));
    assert_eq!(r.signal.as_deref(), Some("SIGSEGV"));
    // captureTime "2026-02-20 16:45:08.6021 +0100" = 15:45:08.6021 UTC; `date -u -d` gives
    // 1771602308 for 15:45:08.
    assert_eq!(
        r.time,
        UNIX_EPOCH + Duration::new(1_771_602_308, 602_100_000)
    );
    // faultingThread 1, named "indexer.worker".
    assert_eq!(
        r.thread_symbols,
        ["exif_read_tag", "index_one", "_pthread_start"]
    );
    assert_eq!(r.threads_named("indexer.worker"), 1);
    let sigs = Signatures::builtin();
    assert_eq!(sigs.classify(&r).map(|s| s.id.as_str()), Some(GENERIC));
}

/// Regression: `.ips` files of other `bug_type`s were unreadable (a 288's `exception` is
/// a string; 202 and 145 bodies are text; 211 is newline-delimited JSON). Each is read as its
/// kind, with its process and time; none is a crash.
#[test]
fn each_report_shape_is_parsed_into_its_kind() {
    // (fixture, kind, bug_type, process, time): times from `date -u -d '<UTC time>' +%s`.
    let cases: [(&str, ReportKind, Option<&str>, &str, SystemTime); 9] = [
        (
            "hang_288.ips",
            ReportKind::Hang,
            Some("288"),
            "Notes Helper",
            at(1_773_220_442, 0),
        ),
        (
            "jetsam_298.ips",
            ReportKind::Jetsam,
            Some("298"),
            "model-server",
            at(1_773_355_219, 0),
        ),
        // Text body: its Date/Time (the start of the measured interval) is the time.
        (
            "cpu_resource_202.ips",
            ReportKind::Resource,
            Some("202"),
            "indexer",
            at(1_773_202_360, 118),
        ),
        (
            "sync-agent_2026-03-10-180251_host.diskwrites_resource.diag",
            ReportKind::Resource,
            Some("145"),
            "sync-agent",
            at(1_773_158_571, 4),
        ),
        (
            "Kernel-2026-03-09-221501.ips",
            ReportKind::Panic,
            Some("210"),
            "Kernel",
            at(1_773_094_501, 0),
        ),
        (
            "legacy_panic_151.ips",
            ReportKind::Panic,
            Some("151"),
            "legacy_panic_151",
            at(1_767_323_045, 0),
        ),
        (
            "Analytics-2026-03-12-000014.ips",
            ReportKind::Analytics,
            Some("211"),
            "Analytics",
            at(1_773_273_614, 0),
        ),
        // A spindump text file without a JSON header.
        (
            "Notes Helper_2026-03-11-091402.spin",
            ReportKind::Hang,
            None,
            "Notes Helper",
            at(1_773_220_430, 220),
        ),
        (
            "legacy_109.ips",
            ReportKind::Crash,
            Some("109"),
            "legacyd",
            at(1_773_126_000, 0),
        ),
    ];
    let sigs = Signatures::builtin();
    for (name, kind, bug_type, process, time) in cases {
        let r = read_report(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            (r.kind, r.bug_type.as_deref(), r.process.as_str(), r.time),
            (kind, bug_type, process, time),
            "{name}"
        );
        assert_eq!(
            sigs.classify(&r).is_some(),
            kind == ReportKind::Crash,
            "{name}"
        );
    }
    let pid = read_report(&fixture("cpu_resource_202.ips")).unwrap().pid;
    assert_eq!(pid, Some(4411));
}

/// The reports dir as `crashes` sees it: crashes in groups, the other shapes listed by kind, and
/// only what truly is not a report unreadable.
#[test]
fn a_reports_dir_of_every_shape_has_groups_others_and_only_true_garbage_unreadable() {
    let dir = tempfile::tempdir().unwrap();
    let retired = dir.path().join("Retired");
    std::fs::create_dir(&retired).unwrap();
    for name in [
        "hang_288.ips",
        "jetsam_298.ips",
        "cpu_resource_202.ips",
        "sync-agent_2026-03-10-180251_host.diskwrites_resource.diag",
        "Kernel-2026-03-09-221501.ips",
        "Analytics-2026-03-12-000014.ips",
        "Notes Helper_2026-03-11-091402.spin",
        "json_then_text.ips",
    ] {
        std::fs::copy(fixture(name), dir.path().join(name)).unwrap();
    }
    std::fs::copy(
        fixture("legacy_panic_151.ips"),
        retired.join("legacy_panic_151.ips"),
    )
    .unwrap();
    std::fs::write(dir.path().join("random.crash"), "just some words\n").unwrap();
    let mut watch = watch_dir(dir.path());
    assert!(watch.update(at(1_773_482_400, 0)).is_empty());
    let groups: Vec<(String, String, u64)> = watch
        .groups()
        .iter()
        .map(|g| (g.process.clone(), g.signature.clone(), g.count))
        .collect();
    assert_eq!(
        groups,
        [("photo-indexer".to_owned(), GENERIC.to_owned(), 1)]
    );
    let others: Vec<(ReportKind, &str, u64)> = watch
        .others()
        .iter()
        .map(|o| (o.kind, o.process.as_str(), o.count))
        .collect();
    assert_eq!(
        others,
        [
            (ReportKind::Hang, "Notes Helper", 2),
            (ReportKind::Jetsam, "model-server", 1),
            (ReportKind::Resource, "indexer", 1),
            (ReportKind::Resource, "sync-agent", 1),
            (ReportKind::Panic, "Kernel", 1),
            (ReportKind::Panic, "legacy_panic_151", 1),
            (ReportKind::Analytics, "Analytics", 1),
        ]
    );
    let hang = &watch.others()[0];
    assert_eq!(hang.bug_types, ["288"]);
    let bad: Vec<String> = watch
        .unreadable()
        .iter()
        .map(|u| u.path.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(bad, ["random.crash"]);
}

/// A legacy `.crash` text report (macOS 11 and earlier) is read field by field.
#[test]
fn legacy_crash_text_report_is_read() {
    let path = fixture("embedder_2026-03-14-095501_worker-host.crash");
    let r = read_report(&path).unwrap();
    assert_eq!(r.kind, ReportKind::Crash);
    assert_eq!(r.bug_type, None);
    assert_eq!((r.process.as_str(), r.pid), ("embedder", Some(6988)));
    assert_eq!(
        r.process_path.as_deref(),
        Some("/usr/local/libexec/embedder")
    );
    assert_eq!(r.os_version.as_deref(), Some("macOS 27.0 (27A5218g)"));
    // "2026-03-14 09:55:01.517 +0000": `date -u -d '2026-03-14 09:55:01' +%s` = 1773482101.
    assert_eq!(r.time, at(1_773_482_101, 517));
    assert_eq!(r.exception_type.as_deref(), Some("EXC_BREAKPOINT"));
    assert_eq!(r.signal.as_deref(), Some("SIGTRAP"));
    assert_eq!(
        r.codes.as_deref(),
        Some("0x0000000000000001, 0x00000001a6f01c38")
    );
    assert_eq!(r.termination.as_deref(), Some("Namespace SIGNAL, Code 0x5"));
    assert_eq!(
        r.messages,
        ["CoreAIRuntime/NDArray+Pool.swift:77: Fatal error"]
    );
    assert_eq!(
        r.thread_images,
        ["libswiftCore.dylib", "CoreAIRuntime", "embedder", "dyld"]
    );
    assert_eq!(
        r.thread_symbols,
        [
            "_assertionFailure(_:_:file:line:flags:)",
            "NDArrayPool.allocate(byteCount:)",
            "AIModel.predict(from:options:)",
            "main",
            "start"
        ]
    );
    assert_eq!(r.threads_named("ANEServicesThread"), 3);
}

/// Regression: a legacy `.crash` of a process is
/// grouped with that process's `.ips` reports of the same signature.
#[test]
fn legacy_crash_is_grouped_with_ips_of_the_same_process_and_signature() {
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "coreai_pool.ips",
        "embedder_2026-03-14-095501_worker-host.crash",
    ] {
        std::fs::copy(fixture(name), dir.path().join(name)).unwrap();
    }
    let mut watch = watch_dir(dir.path());
    watch.update(at(1_773_482_600, 0));
    let g = watch.group_dtos();
    assert_eq!(g.len(), 1, "{g:#?}");
    assert_eq!(
        (g[0].process.as_str(), g[0].signature.as_str(), g[0].count),
        ("embedder", COREAI, 2)
    );
    // The .crash at 09:55:01.517, the .ips at 10:02:10.441 (1773482530).
    assert_eq!(
        (g[0].first_unix_secs, g[0].last_unix_secs),
        (1_773_482_101, 1_773_482_530)
    );
    // The newest report (the .ips) has 2 ANEServicesThread threads: one reload.
    assert!(
        g[0].detail
            .as_deref()
            .unwrap()
            .contains("reloaded the model once"),
        "{:?}",
        g[0].detail
    );
    assert!(watch.unreadable().is_empty());
}

/// A single generic crash is "the process crashed", not "a process keeps crashing"; the loop
/// alert is where "keeps crashing" is said.
#[test]
fn a_single_crash_is_not_called_repeated_but_a_loop_is() {
    let sigs = Signatures::builtin();
    let generic = sigs.get(GENERIC).unwrap();
    assert_eq!(generic.title, "The process crashed");
    for text in [&generic.title, &generic.explanation] {
        assert!(
            !text.contains("again and again") && !text.contains("keeps"),
            "{text}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let text = template("sigsegv.ips");
    let now = at(1_773_482_400, 0);
    for i in 0..5u32 {
        let t = now - Duration::from_secs(u64::from(4 - i) * 60);
        let stamp = cachewatch_testkit::ips::ips_time(t);
        let body = text
            .replace("2026-03-12 18:40:05.00 -0500", &stamp)
            .replace("2026-03-12 18:40:04.9001 -0500", &stamp);
        std::fs::write(dir.path().join(format!("thumbnailer-{i}.ips")), body).unwrap();
    }
    let mut watch = watch_dir(dir.path());
    let alerts = watch.update(now);
    assert_eq!(alerts.len(), 1);
    assert_eq!(alerts[0].title, "A process keeps crashing: thumbnailer");
    assert!(alerts[0]
        .message
        .starts_with("thumbnailer crashed 5 times in the last 10 min"));
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

/// Regression: a report swapped for a FIFO while `crashes` ran hung it (3 of 51 runs):
/// the open blocked waiting for a writer. It is refused without waiting.
#[test]
fn fifo_report_is_refused_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("worker-2026-03-14-100000.ips");
    mkfifo(&path);
    let (tx, rx) = std::sync::mpsc::channel();
    let p = path.clone();
    std::thread::spawn(move || tx.send(read_report(&p)).ok());
    // A bound against hanging forever, not a timing assertion.
    let got = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("read_report blocked on a FIFO");
    match got {
        Err(e @ CrashError::NotAFile { .. }) => {
            let text = e.to_string();
            assert!(text.contains("is a FIFO, not a regular file"), "{text}");
            assert!(text.contains("worker-2026-03-14-100000.ips"), "{text}");
        }
        other => panic!("expected NotAFile, got {other:?}"),
    }
    // Listed in a reports dir, it is skipped, not read.
    let mut watch = watch_dir(dir.path());
    watch.update(at(1_773_482_400, 0));
    assert!(watch.groups().is_empty());
}

/// Regression: a 5 MiB report of 150,000 frames on distinct images took 20 s: the
/// image de-dup was quadratic. Correctness is asserted; the time is printed, not asserted. (Only the
/// first `MAX_FRAMES` frames are kept; the others are read and dropped.)
#[test]
fn report_of_150k_frames_on_distinct_images_is_parsed() {
    const N: usize = 150_000;
    let mut text = String::with_capacity(6 << 20);
    text.push_str("{\"app_name\":\"deep\",\"bug_type\":\"309\",\"timestamp\":\"2026-03-14 10:00:00.00 +0000\"}\n");
    text.push_str("{\"procName\":\"deep\",\"exception\":{\"type\":\"EXC_BAD_ACCESS\",\"signal\":\"SIGSEGV\"},\"faultingThread\":0,\"threads\":[{\"triggered\":true,\"frames\":[");
    for i in 0..N {
        if i > 0 {
            text.push(',');
        }
        text.push_str(&format!("{{\"imageIndex\":{i}}}"));
    }
    text.push_str("]}],\"usedImages\":[");
    for i in 0..N {
        if i > 0 {
            text.push(',');
        }
        text.push_str(&format!("{{\"name\":\"l{i}\"}}"));
    }
    text.push_str("]}\n");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deep-2026-03-14-100000.ips");
    std::fs::write(&path, &text).unwrap();
    let started = Instant::now();
    let r = read_report(&path).unwrap();
    eprintln!(
        "parsed a {} byte report of {N} frames in {:?}",
        text.len(),
        started.elapsed()
    );
    assert!(text.len() > 5 << 20, "{}", text.len());
    assert_eq!(r.thread_frames.len(), MAX_FRAMES);
    assert_eq!(r.thread_images.len(), MAX_FRAMES);
    assert_eq!(r.thread_images[0], "l0");
    assert_eq!(
        r.thread_images[MAX_FRAMES - 1],
        format!("l{}", MAX_FRAMES - 1)
    );
    assert_eq!(r.thread_images[277], "l277");
}

/// Regression: three crafted 8 MiB reports of 2.7 million `{}` frames each made
/// `crashes` peak at 515 MB (every frame became a value). The parse keeps what it uses: the
/// crashing thread's first `MAX_FRAMES` frames, at most `MAX_THREAD_NAMES` thread names and
/// `MAX_MESSAGES` messages, whatever the file holds (the peak is measured in the report, not
/// here).
#[test]
fn a_report_of_millions_of_frames_keeps_the_bound_not_the_file() {
    let header = "{\"app_name\":\"flood\",\"bug_type\":\"309\"}\n";
    let open = "{\"procName\":\"flood\",\"exception\":{\"type\":\"EXC_BAD_ACCESS\",\"signal\":\"SIGSEGV\"},\"faultingThread\":0,\"threads\":[{\"triggered\":true,\"frames\":[";
    let close = "]}]}\n";
    let first = "{\"symbol\":\"top\"}";
    let room =
        MAX_REPORT_BYTES as usize - header.len() - open.len() - first.len() - close.len() - 1;
    // The first frame, then `,{}` as many times as fit.
    let frames = room / 3 + 1;
    let mut text = String::with_capacity(MAX_REPORT_BYTES as usize);
    text.push_str(header);
    text.push_str(open);
    text.push_str(first);
    for _ in 1..frames {
        text.push_str(",{}");
    }
    text.push_str(close);
    assert!(text.len() as u64 <= MAX_REPORT_BYTES, "{}", text.len());
    assert!(frames > 2_700_000, "{frames}");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("flood-2026-03-14-100000.ips");
    std::fs::write(&path, &text).unwrap();
    let r = read_report(&path).unwrap();
    assert_eq!(r.kind, ReportKind::Crash);
    assert_eq!(r.exception_type.as_deref(), Some("EXC_BAD_ACCESS"));
    assert_eq!(r.thread_frames.len(), MAX_FRAMES);
    assert_eq!(r.thread_symbols, ["top"]);
}

/// The other lists of a report are bounded too: thousands of threads with names of their own,
/// messages, images and an `exception` that is a huge array. The crashing thread is found even
/// far past the threads kept with their frames (it is `triggered`, with no `faultingThread`), and
/// a real-shaped report still reads whole (see the fixtures above).
#[test]
fn threads_names_and_messages_are_bounded_and_the_triggered_thread_still_found() {
    const THREADS: usize = 5000;
    let mut text =
        String::from("{\"app_name\":\"many\",\"bug_type\":309,\"os_version\":[1,2,3]}\n");
    text.push_str("{\"procName\":\"many\",\"termination\":[");
    for i in 0..100_000 {
        text.push_str(if i == 0 { "{}" } else { ",{}" });
    }
    text.push_str("],\"asi\":{\"x\":[");
    for i in 0..10_000 {
        if i > 0 {
            text.push(',');
        }
        text.push_str(&format!("\"m{i}\""));
    }
    text.push_str("]},\"threads\":[");
    for i in 0..THREADS {
        if i > 0 {
            text.push(',');
        }
        let triggered = i == 4321;
        text.push_str(&format!(
            "{{\"name\":\"t{i}\",\"triggered\":{triggered},\"frames\":[{{\"imageIndex\":1,\"symbol\":\"s{i}\"}}]}}"
        ));
    }
    text.push_str("],\"usedImages\":[");
    for i in 0..20_000 {
        if i > 0 {
            text.push(',');
        }
        text.push_str(&format!("{{\"name\":\"img{i}\"}}"));
    }
    text.push_str("]}\n");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("many-2026-03-14-100000.ips");
    std::fs::write(&path, &text).unwrap();
    let r = read_report(&path).unwrap();
    assert_eq!(r.bug_type.as_deref(), Some("309"), "a number read as text");
    assert_eq!(
        r.os_version, None,
        "a field of the wrong type is dropped, not the report"
    );
    assert_eq!(r.termination, None);
    assert_eq!(r.thread_names.len(), MAX_THREAD_NAMES);
    assert_eq!(r.threads_named("t0"), 1);
    assert_eq!(r.messages.len(), MAX_MESSAGES);
    assert_eq!(r.messages[0], "m0");
    assert_eq!(r.thread_symbols, ["s4321"]);
    assert_eq!(r.thread_images, ["img1"]);
}
