//! `ExcUserFault_*.ips` reports marked `"is_simulated": 1` (macOS 26.6 writes one per
//! `os_log_fault`, the process goes on running; duckduckgo/apple-browsers#6124) are listed as
//! simulated faults and never make a crash loop; legacy panic text starting with
//! `panic(cpu N caller 0x...)` is read as a kernel panic, not left unreadable.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cachewatch::crash::{read_report, CrashLoopConfig, CrashWatch, ReportKind, Signatures};
use cachewatch_testkit::ips::{ips_time, template};

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

/// `n` reports of the `sigsegv.ips` crash, one a minute up to `now`, as `ExcUserFault_<proc>`
/// files; `simulated` adds `"is_simulated":1` to the header line as macOS 26.6 does.
fn write_faults(dir: &Path, now: SystemTime, n: u32, simulated: bool) {
    let text = template("sigsegv.ips");
    for i in 0..n {
        let t = now - Duration::from_secs(u64::from(n - 1 - i) * 60);
        let stamp = ips_time(t);
        let mut body = text
            .replace("2026-03-12 18:40:05.00 -0500", &stamp)
            .replace("2026-03-12 18:40:04.9001 -0500", &stamp);
        if simulated {
            body = body.replacen(
                "\"bug_type\":\"309\"",
                "\"bug_type\":\"309\",\"is_simulated\":1",
                1,
            );
        }
        let name = format!("ExcUserFault_thumbnailer-2026-03-12-1840{i:02}.ips");
        std::fs::write(dir.join(name), body).unwrap();
    }
}

#[test]
fn simulated_fault_reports_are_listed_and_never_make_a_crash_loop() {
    let dir = tempfile::tempdir().unwrap();
    let now = at(1_773_482_400);
    write_faults(dir.path(), now, 8, true);
    let one = std::fs::read_dir(dir.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    assert_eq!(read_report(&one).unwrap().kind, ReportKind::SimulatedFault);

    let mut watch = watch_dir(dir.path());
    assert!(
        watch.update(now).is_empty(),
        "a crash loop of simulated faults"
    );
    assert!(watch.groups().is_empty(), "{:#?}", watch.groups());
    let others = watch.others();
    assert_eq!(others.len(), 1, "{others:#?}");
    assert_eq!(others[0].kind, ReportKind::SimulatedFault);
    assert_eq!(others[0].count, 8);
    assert_eq!(others[0].kind.as_str(), "simulated-fault");
}

#[test]
fn the_same_reports_without_the_flag_are_a_crash_loop() {
    let dir = tempfile::tempdir().unwrap();
    let now = at(1_773_482_400);
    write_faults(dir.path(), now, 8, false);
    let mut watch = watch_dir(dir.path());
    let alerts = watch.update(now);
    assert_eq!(alerts.len(), 1, "{alerts:#?}");
    assert_eq!(watch.groups()[0].count, 8);
}

#[test]
fn legacy_panic_text_is_a_kernel_panic() {
    let dir = tempfile::tempdir().unwrap();
    // Shapes of the two unreadable reports of the issue: a DCP SError on an M1 mini and an AMD
    // framebuffer power-state timeout (Intel, with the older lines before the panic line).
    let dcp = dir.path().join("Kernel-2022-04-10-091502.panic");
    std::fs::write(
        &dcp,
        "panic(cpu 4 caller 0xfffffe0028b1c7a8): DCP DART SError (apple_dcp_dart) \n\
         Debugger message: panic\nMemory ID: 0x6\nOS release type: User\nOS version: 21E258\n\
         Kernel version: Darwin Kernel Version 21.4.0\nPanicked task 0xfffffe1b3f8e8678: 0 pages, \
         pid 0: kernel_task\n",
    )
    .unwrap();
    let amd = dir.path().join("Kernel_2019-11-02-101112_mac.panic");
    std::fs::write(
        &amd,
        "Anonymous UUID:       4C1E9C5A-1D1E-5C3F-9A0B-6F0E1C2D3E4F\n\n\
         Sat Nov  2 10:11:12 2019\n\n*** Panic Report ***\n\
         panic(cpu 2 caller 0xffffff7f8a9b2c3d): \"AMD framebuffer power state timeout\"\n\
         Backtrace (CPU 2), Frame : Return Address\n\
         Mac OS version:\n19B88\n",
    )
    .unwrap();
    for p in [&dcp, &amd] {
        let r = read_report(p).unwrap_or_else(|e| panic!("{p:?}: {e}"));
        assert_eq!(r.kind, ReportKind::Panic, "{p:?}");
        assert_eq!(r.process, "kernel");
        assert!(r.messages[0].starts_with("panic(cpu "), "{:?}", r.messages);
    }
    let mut watch = watch_dir(dir.path());
    watch.update(at(1_773_482_400));
    assert!(watch.unreadable().is_empty(), "{:#?}", watch.unreadable());
    assert_eq!(watch.others()[0].kind, ReportKind::Panic);
    assert_eq!(watch.others()[0].count, 2);
}
