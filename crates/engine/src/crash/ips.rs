//! Parsing of macOS `.ips` crash reports: a one-line JSON header followed by a JSON body (compact
//! or pretty-printed).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Deserialize;

use super::CrashError;

/// The most of a report file that is read: larger files are reported as unreadable, never parsed.
/// Real crash reports are tens to hundreds of KiB.
pub const MAX_REPORT_BYTES: u64 = 8 * 1024 * 1024;

/// What a crash report says, reduced to what classification and grouping need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrashReport {
    /// The report file.
    pub path: PathBuf,
    /// Size of the report file, bytes (apparent).
    pub file_bytes: u64,
    /// The crashed process's name: the body's `procName`, else the header's `app_name` or `name`.
    pub process: String,
    /// The executable path (`procPath`), when given.
    pub process_path: Option<String>,
    /// The process id, when given.
    pub pid: Option<u32>,
    /// The header's `bug_type` (`309` for a crash), when given.
    pub bug_type: Option<String>,
    /// The header's `os_version`, when given.
    pub os_version: Option<String>,
    /// The header's `incident_id` (or the body's `incident`), when given.
    pub incident_id: Option<String>,
    /// When the crash happened: the body's `captureTime`, else the header's `timestamp`, else the
    /// file's mtime.
    pub time: SystemTime,
    /// `exception.type`, e.g. `EXC_BREAKPOINT`; `None` for a report that is not a crash.
    pub exception_type: Option<String>,
    /// `exception.signal`, e.g. `SIGTRAP`.
    pub signal: Option<String>,
    /// `exception.codes`, as written.
    pub codes: Option<String>,
    /// Names of the images (`usedImages[].name`) of the frames of the crashing thread, in frame
    /// order, each once.
    pub thread_images: Vec<String>,
    /// Symbols of the crashing thread's frames, in frame order.
    pub thread_symbols: Vec<String>,
    /// Application-specific information (`asi`): every message, in image-name order.
    pub messages: Vec<String>,
}

impl CrashReport {
    /// True when the report describes a crash (it has an exception).
    pub fn is_crash(&self) -> bool {
        self.exception_type.is_some() || self.signal.is_some()
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Header {
    app_name: Option<String>,
    name: Option<String>,
    bug_type: Option<String>,
    timestamp: Option<String>,
    os_version: Option<String>,
    incident_id: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Body {
    pid: Option<u32>,
    proc_name: Option<String>,
    proc_path: Option<String>,
    capture_time: Option<String>,
    incident: Option<String>,
    exception: Option<Exception>,
    faulting_thread: Option<usize>,
    threads: Vec<Thread>,
    used_images: Vec<Image>,
    asi: Option<serde_json::Map<String, serde_json::Value>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Exception {
    #[serde(rename = "type")]
    kind: Option<String>,
    signal: Option<String>,
    codes: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Thread {
    triggered: bool,
    frames: Vec<Frame>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Frame {
    image_index: Option<usize>,
    symbol: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Image {
    name: Option<String>,
    path: Option<String>,
}

/// Reads and parses the report at `path`, reading at most [`MAX_REPORT_BYTES`].
///
/// # Errors
/// [`CrashError::Read`] when the file cannot be opened or read, [`CrashError::TooLarge`] past the
/// cap, [`CrashError::Parse`] when the header or the body is not the expected JSON (truncated,
/// not JSON).
pub fn read_report(path: &Path) -> Result<CrashReport, CrashError> {
    let read_err = |source| CrashError::Read {
        path: path.to_owned(),
        source,
    };
    let file = std::fs::File::open(path).map_err(read_err)?;
    let meta = file.metadata().map_err(read_err)?;
    if meta.len() > MAX_REPORT_BYTES {
        return Err(CrashError::TooLarge {
            path: path.to_owned(),
            bytes: meta.len(),
            max_bytes: MAX_REPORT_BYTES,
        });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    // The file may grow between stat and read: read one byte more than the cap to notice.
    file.take(MAX_REPORT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(read_err)?;
    if bytes.len() as u64 > MAX_REPORT_BYTES {
        return Err(CrashError::TooLarge {
            path: path.to_owned(),
            bytes: bytes.len() as u64,
            max_bytes: MAX_REPORT_BYTES,
        });
    }
    let mtime = meta.modified().unwrap_or(UNIX_EPOCH);
    parse_report(&bytes, path, bytes.len() as u64, mtime)
}

/// Parses report bytes; `path` names the report in errors and in the result, `file_bytes` is its
/// size and `mtime` the fallback time.
///
/// # Errors
/// [`CrashError::Parse`] naming the path and what is wrong.
pub fn parse_report(
    bytes: &[u8],
    path: &Path,
    file_bytes: u64,
    mtime: SystemTime,
) -> Result<CrashReport, CrashError> {
    let parse_err = |cause: String| CrashError::Parse {
        path: path.to_owned(),
        cause,
    };
    let text = std::str::from_utf8(bytes).map_err(|e| parse_err(format!("not UTF-8: {e}")))?;
    let text = text.trim_start_matches('\u{feff}');
    let (head, rest) = text
        .split_once('\n')
        .ok_or_else(|| parse_err("no body after the header line".to_owned()))?;
    let header: Header = serde_json::from_str(head.trim_end())
        .map_err(|e| parse_err(format!("header line is not JSON: {e}")))?;
    if rest.trim().is_empty() {
        return Err(parse_err("no body after the header line".to_owned()));
    }
    let body: Body = serde_json::from_str(rest).map_err(|e| {
        let what = if e.is_eof() {
            "body is truncated"
        } else {
            "body is not JSON"
        };
        // The body starts on line 2 of the file; serde's own position is body-relative.
        let text = e.to_string();
        let cause = text
            .rsplit_once(" at line ")
            .map_or(text.as_str(), |(c, _)| c);
        parse_err(format!(
            "{what} (line {}, column {}): {cause}",
            e.line() + 1,
            e.column()
        ))
    })?;
    Ok(build(header, body, path, file_bytes, mtime))
}

fn build(
    header: Header,
    body: Body,
    path: &Path,
    file_bytes: u64,
    mtime: SystemTime,
) -> CrashReport {
    let process = body
        .proc_name
        .clone()
        .or(header.app_name.clone())
        .or(header.name.clone())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| process_from_file_name(path));
    let time = body
        .capture_time
        .as_deref()
        .and_then(parse_ips_time)
        .or_else(|| header.timestamp.as_deref().and_then(parse_ips_time))
        .unwrap_or(mtime);
    let thread = body
        .faulting_thread
        .and_then(|i| body.threads.get(i))
        .or_else(|| body.threads.iter().find(|t| t.triggered));
    let mut thread_images = Vec::new();
    let mut thread_symbols = Vec::new();
    if let Some(t) = thread {
        for f in &t.frames {
            if let Some(img) = f.image_index.and_then(|i| body.used_images.get(i)) {
                let name = img.name.clone().or_else(|| {
                    img.path.as_deref().and_then(|p| {
                        Path::new(p)
                            .file_name()
                            .map(|n| n.to_string_lossy().into_owned())
                    })
                });
                if let Some(n) = name {
                    if !thread_images.contains(&n) {
                        thread_images.push(n);
                    }
                }
            }
            if let Some(s) = &f.symbol {
                thread_symbols.push(s.clone());
            }
        }
    }
    let mut messages = Vec::new();
    if let Some(asi) = &body.asi {
        for value in asi.values() {
            collect_strings(value, &mut messages);
        }
    }
    let exception = body.exception.unwrap_or_default();
    CrashReport {
        path: path.to_owned(),
        file_bytes,
        process,
        process_path: body.proc_path,
        pid: body.pid,
        bug_type: header.bug_type,
        os_version: header.os_version,
        incident_id: header.incident_id.or(body.incident),
        time,
        exception_type: exception.kind,
        signal: exception.signal,
        codes: exception.codes,
        thread_images,
        thread_symbols,
        messages,
    }
}

/// `asi` values are lists of strings; accept a bare string or nested lists too.
fn collect_strings(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(a) => a.iter().for_each(|x| collect_strings(x, out)),
        _ => {}
    }
}

/// The process part of a report's file name (`python3.12-2025-06-01-102233.ips` → `python3.12`).
fn process_from_file_name(path: &Path) -> String {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    match regex_lite_date_split(&stem) {
        Some(p) => p.to_owned(),
        None => stem,
    }
}

/// Splits `<proc>-YYYY-MM-DD-HHMMSS…` at the date; `None` when there is no such date.
fn regex_lite_date_split(stem: &str) -> Option<&str> {
    let b = stem.as_bytes();
    // "-YYYY-MM-DD-HHMMSS" is 18 bytes.
    (0..b.len().saturating_sub(17)).find_map(|i| {
        let s = &b[i..i + 18];
        let digits = |r: std::ops::Range<usize>| s[r].iter().all(u8::is_ascii_digit);
        let ok = s[0] == b'-'
            && digits(1..5)
            && s[5] == b'-'
            && digits(6..8)
            && s[8] == b'-'
            && digits(9..11)
            && s[11] == b'-'
            && digits(12..18);
        (ok && i > 0).then(|| &stem[..i])
    })
}

/// Parses an `.ips` time such as `2025-06-01 10:22:33.00 +0200` (fraction and zone optional;
/// no zone means UTC). `None` when it is not in that form.
pub fn parse_ips_time(s: &str) -> Option<SystemTime> {
    let s = s.trim();
    let (date, rest) = s.split_once(' ')?;
    let mut d = date.split('-');
    let year: i64 = d.next()?.parse().ok()?;
    let month: u32 = d.next()?.parse().ok()?;
    let day: u32 = d.next()?.parse().ok()?;
    if d.next().is_some() || !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let (clock, zone) = match rest.split_once(' ') {
        Some((c, z)) => (c, Some(z.trim())),
        None => (rest, None),
    };
    let (hms, frac) = match clock.split_once('.') {
        Some((h, f)) => (h, Some(f)),
        None => (clock, None),
    };
    let mut t = hms.split(':');
    let hour: i64 = t.next()?.parse().ok()?;
    let minute: i64 = t.next()?.parse().ok()?;
    let second: i64 = t.next()?.parse().ok()?;
    if t.next().is_some() || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let nanos = match frac {
        Some(f) if !f.is_empty() && f.len() <= 9 && f.bytes().all(|b| b.is_ascii_digit()) => {
            let n: u32 = f.parse().ok()?;
            n * 10u32.pow(9 - f.len() as u32)
        }
        Some(_) => return None,
        None => 0,
    };
    let offset_secs: i64 = match zone {
        None => 0,
        Some(z) => {
            let (sign, digits) = match z.as_bytes().first()? {
                b'+' => (1, &z[1..]),
                b'-' => (-1, &z[1..]),
                _ => return None,
            };
            let digits = digits.replace(':', "");
            if digits.len() != 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let h: i64 = digits[..2].parse().ok()?;
            let m: i64 = digits[2..].parse().ok()?;
            sign * (h * 3600 + m * 60)
        }
    };
    let days = days_from_civil(year, month, day);
    let local = days * 86_400 + hour * 3600 + minute * 60 + second;
    let unix = local - offset_secs;
    let secs = u64::try_from(unix).ok()?;
    Some(UNIX_EPOCH + Duration::new(secs, nanos))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn ips_time_with_zone_and_fraction() {
        // 2025-06-01 08:22:33.25 UTC; `date -u -d '2025-06-01 08:22:33' +%s` = 1748766153.
        let t = parse_ips_time("2025-06-01 10:22:33.25 +0200").unwrap();
        assert_eq!(
            t.duration_since(UNIX_EPOCH).unwrap(),
            Duration::new(1_748_766_153, 250_000_000)
        );
        let t = parse_ips_time("2024-02-29 23:59:59 -0130").unwrap();
        // 2024-03-01 01:29:59 UTC = 1709256599.
        assert_eq!(
            t.duration_since(UNIX_EPOCH).unwrap().as_secs(),
            1_709_256_599
        );
        assert_eq!(parse_ips_time("1970-01-01 00:00:00").unwrap(), UNIX_EPOCH);
    }

    #[test]
    fn ips_time_rejects_garbage() {
        for bad in [
            "",
            "yesterday",
            "2025-13-01 00:00:00",
            "2025-06-01 25:00:00",
            "2025-06-01 10:00:00 CEST",
        ] {
            assert_eq!(parse_ips_time(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn process_name_from_file_name() {
        let p = |s: &str| process_from_file_name(Path::new(s));
        assert_eq!(p("/r/python3.12-2025-06-01-102233.ips"), "python3.12");
        assert_eq!(p("/r/my-worker-2025-06-01-102233.ips"), "my-worker");
        assert_eq!(p("/r/odd.ips"), "odd");
    }
}
