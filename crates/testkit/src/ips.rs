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
