//! Diagnostic reports as macOS writes them (`.ips` of several `bug_type`s, legacy `.crash`,
//! `.diag`, `.spin`), from the fixtures in `crates/testkit/fixtures/ips`.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The path of the fixture report `name` (e.g. `"coreai_pool.ips"`).
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/ips")
        .join(name)
}

/// The time string `.ips` files use (`2026-03-14 10:02:11.00 +0000`), in UTC, computed by `date`.
///
/// # Panics
/// `t` is before 1970, or `date` cannot run.
pub fn ips_time(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).expect("after 1970").as_secs();
    let out = std::process::Command::new("date")
        .args(["-u", "-d", &format!("@{secs}"), "+%Y-%m-%d %H:%M:%S"])
        .output()
        .expect("run date");
    format!(
        "{}.00 +0000",
        String::from_utf8(out.stdout).expect("utf-8").trim()
    )
}

/// The text of the fixture report `name`.
///
/// # Panics
/// The fixture cannot be read.
pub fn template(name: &str) -> String {
    std::fs::read_to_string(fixture(name)).expect("read fixture")
}

/// Writes one report from `template` (a fixture's text using the `coreai_pool.ips` values:
/// process `embedder`, pid 7301, timestamp `2026-03-14 10:02:11.00 +0000`, captureTime
/// `2026-03-14 10:02:10.4410 +0000`) into `dir` for `process`, dated `at`, with `pid`; returns its
/// path (`<process>-<YYYY-MM-DD-HH-MM-SS>.ips`).
///
/// # Panics
/// The report cannot be written.
pub fn write_report(
    template: &str,
    dir: &Path,
    process: &str,
    at: SystemTime,
    pid: u32,
) -> PathBuf {
    let stamp = ips_time(at);
    let text = template
        .replace("2026-03-14 10:02:11.00 +0000", &stamp)
        .replace("2026-03-14 10:02:10.4410 +0000", &stamp)
        .replace("\"embedder\"", &format!("\"{process}\""))
        .replace("\"pid\":7301", &format!("\"pid\":{pid}"));
    let name = format!("{process}-{}.ips", stamp[..19].replace([' ', ':'], "-"));
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write report");
    path
}

/// Writes `n` reports of the `coreai_pool.ips` template into `dir`, for process `process`, the
/// i-th dated `start + i * step` with pid `7301 + i`; returns their paths.
///
/// # Panics
/// The fixture cannot be read or a report cannot be written.
pub fn write_burst(
    dir: &Path,
    process: &str,
    start: SystemTime,
    step: Duration,
    n: u32,
) -> Vec<PathBuf> {
    let template = template("coreai_pool.ips");
    (0..n)
        .map(|i| write_report(&template, dir, process, start + step * i, 7301 + i))
        .collect()
}

/// The one-line JSON header of an `.ips` report of `bug_type` for `process` (`None`: a header
/// naming no process, as stackshots and analytics write), dated `at`.
pub fn header_line(bug_type: &str, process: Option<&str>, at: SystemTime) -> String {
    let names = process.map_or_else(String::new, |p| {
        format!("\"app_name\":\"{p}\",\"name\":\"{p}\",")
    });
    format!(
        "{{{names}\"timestamp\":\"{}\",\"app_version\":\"1.0\",\"platform\":1,\
         \"share_with_app_devs\":0,\"is_first_party\":0,\"bug_type\":\"{bug_type}\",\
         \"os_version\":\"macOS 15.5 (24F74)\",\"incident_id\":\"0F1E2D3C-4B5A-4697-8877-665544332211\"}}",
        ips_time(at)
    )
}

/// A whole `bug_type` 309 crash report of `process` (pid `pid`) dated `at`: a SIGSEGV in the
/// process's own code, pretty-printed body as macOS 12+ writes it.
pub fn segv_report(process: &str, at: SystemTime, pid: u32) -> String {
    let t = ips_time(at);
    format!(
        "{}\n{{\n  \"uptime\" : 4100,\n  \"procRole\" : \"Unspecified\",\n  \"version\" : 2,\n  \
         \"userID\" : 501,\n  \"captureTime\" : \"{t}\",\n  \"pid\" : {pid},\n  \
         \"procName\" : \"{process}\",\n  \"procPath\" : \"/usr/local/bin/{process}\",\n  \
         \"bug_type\" : \"309\",\n  \"exception\" : {{\"codes\":\"0x0000000000000001, 0x0000000000000000\",\
         \"type\":\"EXC_BAD_ACCESS\",\"signal\":\"SIGSEGV\",\"subtype\":\"KERN_INVALID_ADDRESS at 0x0\"}},\n  \
         \"termination\" : {{\"namespace\":\"SIGNAL\",\"indicator\":\"Segmentation fault: 11\",\"code\":11}},\n  \
         \"faultingThread\" : 0,\n  \"threads\" : [{{\"triggered\":true,\"id\":1001,\"queue\":\"com.apple.main-thread\",\
         \"frames\":[{{\"imageOffset\":1200,\"symbol\":\"parse_row\",\"imageIndex\":0}},\
         {{\"imageOffset\":900,\"symbol\":\"main\",\"imageIndex\":0}},\
         {{\"imageOffset\":24,\"symbol\":\"start\",\"imageIndex\":1}}]}},\
         {{\"id\":1002,\"name\":\"worker\",\"frames\":[{{\"imageOffset\":10,\"imageIndex\":1}}]}}],\n  \
         \"usedImages\" : [{{\"source\":\"P\",\"arch\":\"arm64\",\"base\":4294967296,\"name\":\"{process}\",\
         \"path\":\"/usr/local/bin/{process}\"}},{{\"source\":\"P\",\"arch\":\"arm64e\",\"base\":6442450944,\
         \"name\":\"dyld\",\"path\":\"/usr/lib/dyld\"}}]\n}}\n",
        header_line("309", Some(process), at)
    )
}

/// `report` (an `.ips` text) as Console.app copies it: a "Translated Report" preamble (the report
/// as legacy text, here its first lines for `process` and `pid`), then a "Full Report" line and
/// the original.
pub fn console_copy(report: &str, process: &str, pid: u32) -> String {
    let rule = "-".repeat(37);
    format!(
        "{rule}\nTranslated Report (Full Report Below)\n{rule}\n\n\
         Process:               {process} [{pid}]\n\
         Path:                  /usr/local/bin/{process}\n\
         Exception Type:        EXC_BAD_ACCESS (SIGSEGV)\n\
         Termination Reason:    Namespace SIGNAL, Code 11 Segmentation fault: 11\n\n\
         Thread 0 Crashed::  Dispatch queue: com.apple.main-thread\n\
         0   {process}                      \t       0x1000004b0 parse_row + 0\n\n\n\
         -----------\nFull Report\n-----------\n\n{report}"
    )
}

/// A synced CoreAnalytics file (`Analytics-<date>.ips.ca.synced`): a `bug_type` 211 header over
/// `events` newline-delimited JSON events, between metadata and end-of-file markers.
pub fn synced_analytics(at: SystemTime, events: usize) -> String {
    let mut out = header_line("211", None, at);
    out.push_str("\n{\"_marker\":\"<metadata>\",\"startTimestamp\":\"2026-03-11T00:00:00Z\"}\n");
    for i in 0..events {
        out.push_str(&format!(
            "{{\"message\":{{\"Count\":{i}}},\"name\":\"com.example.analytics.event\",\"sampling\":100}}\n"
        ));
    }
    out.push_str("{\"_marker\":\"<end-of-file>\"}\n");
    out
}

/// A stackshot (`stacks-<date>.ips`): a header with `bug_type` (`None`: none at all) and no
/// process over a body listing `processes` by pid (pid = 100 + index).
pub fn stackshot(bug_type: Option<&str>, at: SystemTime, processes: &[&str]) -> String {
    let header = match bug_type {
        Some(b) => header_line(b, None, at),
        None => format!(
            "{{\"timestamp\":\"{}\",\"os_version\":\"macOS 15.5 (24F74)\"}}",
            ips_time(at)
        ),
    };
    let procs: Vec<String> = processes
        .iter()
        .enumerate()
        .map(|(i, p)| {
            format!(
                "\"{pid}\":{{\"pid\":{pid},\"procname\":\"{p}\",\"threadById\":{{}}}}",
                pid = 100 + i
            )
        })
        .collect();
    format!(
        "{header}\n{{\n  \"build\" : \"macOS 15.5 (24F74)\",\n  \"exception\" : \"0xdead10cc\",\n  \
         \"reason\" : \"stackshot taken for a slow spin\",\n  \"processByPid\" : {{{}}}\n}}\n",
        procs.join(",")
    )
}

/// The name macOS gives a report of `process` dated `at`: `<process>-YYYY-MM-DD-HHMMSS.ips`.
pub fn report_name(process: &str, at: SystemTime) -> String {
    let stamp = ips_time(at);
    format!(
        "{process}-{}{}{}.ips",
        &stamp[..11].replace(' ', "-"),
        &stamp[11..13],
        format_args!("{}{}", &stamp[14..16], &stamp[17..19])
    )
}
