//! `.ips` reports: a one-line JSON header (with `bug_type`) over a body that is, depending on the
//! `bug_type`, one JSON value (compact or pretty-printed, possibly followed by plain text, as
//! macOS 12 writes), newline-delimited JSON (analytics) or legacy text.

use std::path::Path;

use serde::Deserialize;

use super::legacy;
use super::report::{CrashReport, ReportKind, StackFrame};
use super::time::parse_ips_time;
use super::CrashError;

/// The header line's fields that are used. Read from a JSON object field by field, so a field of
/// an unexpected type (`"bug_type":309` as a number) loses only that field, never the report.
#[derive(Debug, Default)]
pub(super) struct Header {
    app_name: Option<String>,
    name: Option<String>,
    bug_type: Option<String>,
    timestamp: Option<String>,
    os_version: Option<String>,
    incident_id: Option<String>,
}

/// A string field, or a number written as text (`bug_type` is either).
fn text_of(v: Option<&serde_json::Value>) -> Option<String> {
    match v? {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn de_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let v = Option::<serde_json::Value>::deserialize(d)?;
    Ok(text_of(v.as_ref()))
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Body {
    pid: Option<u32>,
    proc_name: Option<String>,
    proc_path: Option<String>,
    capture_time: Option<String>,
    incident: Option<String>,
    #[serde(rename = "bug_type", deserialize_with = "de_text")]
    bug_type: Option<String>,
    /// An object in a crash report; a string in a stackshot (288).
    exception: Option<serde_json::Value>,
    termination: Option<serde_json::Value>,
    faulting_thread: Option<usize>,
    threads: Vec<Thread>,
    used_images: Vec<Image>,
    asi: Option<serde_json::Map<String, serde_json::Value>>,
    /// Jetsam (298): the process that used the most memory.
    largest_process: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Thread {
    triggered: bool,
    name: Option<String>,
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

/// Parses the header line `head`; `None` when it is not a JSON object.
pub(super) fn parse_header(head: &str) -> Option<Header> {
    let head = head.trim();
    if !head.starts_with('{') {
        return None;
    }
    let map: serde_json::Map<String, serde_json::Value> = serde_json::from_str(head).ok()?;
    let get = |k: &str| text_of(map.get(k));
    Some(Header {
        app_name: get("app_name"),
        name: get("name"),
        bug_type: get("bug_type"),
        timestamp: get("timestamp"),
        os_version: get("os_version"),
        incident_id: get("incident_id"),
    })
}

/// Fills `report` from a parsed `header` and the text after the header line.
///
/// # Errors
/// [`CrashError::Parse`] when a crash report's JSON body is truncated or not JSON, or the file
/// has nothing after the header.
pub(super) fn parse(
    header: Header,
    rest: &str,
    path: &Path,
    mut report: CrashReport,
) -> Result<CrashReport, CrashError> {
    let parse_err = |cause: String| CrashError::Parse {
        path: path.to_owned(),
        cause,
    };
    let body_text = rest.trim_start();
    let json_body = body_text.starts_with('{');
    // The header's bug_type names the kind; without one, the file name may.
    let kind = header
        .bug_type
        .as_deref()
        .map(ReportKind::of_bug_type)
        .or_else(|| ReportKind::of_file_name(path));
    let body: Option<Body> = if json_body {
        // The first JSON value; whatever follows it (plain text, more JSON lines) is ignored.
        let mut values = serde_json::Deserializer::from_str(rest).into_iter::<Body>();
        match values.next() {
            Some(Ok(b)) => Some(b),
            Some(Err(e)) if kind.unwrap_or(ReportKind::Crash) == ReportKind::Crash => {
                return Err(parse_err(body_error(&e)))
            }
            _ => None,
        }
    } else {
        None
    };
    if rest.trim().is_empty() && kind.unwrap_or(ReportKind::Crash) == ReportKind::Crash {
        return Err(parse_err("no body after the header line".to_owned()));
    }
    report.kind = kind
        .or_else(|| {
            body.as_ref()
                .and_then(|b| b.bug_type.as_deref())
                .map(ReportKind::of_bug_type)
        })
        .unwrap_or(ReportKind::Other);
    report.bug_type = header
        .bug_type
        .clone()
        .or_else(|| body.as_ref().and_then(|b| b.bug_type.clone()));
    report.os_version = header.os_version.clone();
    report.incident_id = header.incident_id.clone();
    if let Some(p) = header
        .app_name
        .clone()
        .or(header.name.clone())
        .filter(|s| !s.is_empty())
    {
        report.process = p;
    }
    if let Some(t) = header.timestamp.as_deref().and_then(parse_ips_time) {
        report.time = t;
    }
    match body {
        Some(b) => fill_from_body(&mut report, b),
        None if !json_body => {
            // A text body: legacy crash text (109), resource reports (145, 202), legacy panics.
            legacy::fill(&mut report, rest);
        }
        None => {}
    }
    Ok(report)
}

/// The cause of a JSON body error, with the line counted in the file (the body starts on line 2).
fn body_error(e: &serde_json::Error) -> String {
    let what = if e.is_eof() {
        "body is truncated"
    } else {
        "body is not JSON"
    };
    let text = e.to_string();
    let cause = text
        .rsplit_once(" at line ")
        .map_or(text.as_str(), |(c, _)| c);
    format!(
        "{what} (line {}, column {}): {cause}",
        e.line() + 1,
        e.column()
    )
}

fn fill_from_body(report: &mut CrashReport, body: Body) {
    if let Some(p) = body
        .proc_name
        .clone()
        .or(body.largest_process.clone())
        .filter(|s| !s.is_empty())
    {
        report.process = p;
    }
    report.process_path = body.proc_path.clone();
    report.pid = body.pid;
    if report.incident_id.is_none() {
        report.incident_id = body.incident.clone();
    }
    if let Some(t) = body.capture_time.as_deref().and_then(parse_ips_time) {
        report.time = t;
    }
    if let Some(serde_json::Value::Object(ex)) = &body.exception {
        let s = |k: &str| ex.get(k).and_then(|v| v.as_str()).map(str::to_owned);
        report.exception_type = s("type");
        report.signal = s("signal");
        report.codes = s("codes");
    }
    if let Some(serde_json::Value::Object(t)) = &body.termination {
        report.termination = t
            .get("indicator")
            .and_then(|v| v.as_str())
            .map(str::to_owned);
    }
    for t in &body.threads {
        if let Some(n) = t.name.as_deref().filter(|n| !n.is_empty()) {
            *report.thread_names.entry(n.to_owned()).or_insert(0) += 1;
        }
    }
    let thread = body
        .faulting_thread
        .and_then(|i| body.threads.get(i))
        .or_else(|| body.threads.iter().find(|t| t.triggered));
    // Image names resolved once per image, not per frame.
    let image_names: Vec<Option<String>> = body
        .used_images
        .iter()
        .map(|img| {
            img.name.clone().or_else(|| {
                img.path.as_deref().and_then(|p| {
                    Path::new(p)
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                })
            })
        })
        .collect();
    if let Some(t) = thread {
        let frames = t
            .frames
            .iter()
            .map(|f| StackFrame {
                image: f
                    .image_index
                    .and_then(|i| image_names.get(i))
                    .and_then(Clone::clone),
                symbol: f.symbol.clone(),
            })
            .collect();
        report.set_frames(frames);
    }
    if let Some(asi) = &body.asi {
        for value in asi.values() {
            collect_strings(value, &mut report.messages);
        }
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
