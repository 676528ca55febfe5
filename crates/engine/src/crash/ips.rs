//! `.ips` reports: a one-line JSON header (with `bug_type`) over a body that is, depending on the
//! `bug_type`, one JSON value (compact or pretty-printed, possibly followed by plain text, as
//! macOS 12 writes), newline-delimited JSON (analytics) or legacy text.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use super::legacy;
use super::report::{
    CrashReport, ReportKind, StackFrame, MAX_FRAMES, MAX_MESSAGES, MAX_THREAD_NAMES,
};
use super::time::parse_ips_time;
use super::CrashError;

/// Threads whose frames are kept while the body is read (besides the first triggered one): the
/// crashing thread is `faultingThread` or the triggered one, and real reports have it early.
pub(crate) const MAX_KEPT_THREADS: usize = 64;
/// Images kept from `usedImages` (frames name theirs by index); real reports list hundreds.
pub(crate) const MAX_IMAGES: usize = 4096;

/// The header line's fields that are used, a field of an unexpected type (`"bug_type":309` as a
/// number, an object) losing only that field, never the report. Other fields are skipped unread.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Header {
    #[serde(deserialize_with = "de_text")]
    app_name: Option<String>,
    #[serde(deserialize_with = "de_text")]
    name: Option<String>,
    #[serde(deserialize_with = "de_text")]
    bug_type: Option<String>,
    #[serde(deserialize_with = "de_text")]
    timestamp: Option<String>,
    #[serde(deserialize_with = "de_text")]
    os_version: Option<String>,
    #[serde(deserialize_with = "de_text")]
    incident_id: Option<String>,
}

/// A string, or a number written as text (`bug_type` is either); anything else is skipped (read
/// without being kept) and gives `None`.
struct Text;

impl<'de> Visitor<'de> for Text {
    type Value = Option<String>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(v.to_owned()))
    }
    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Some(v))
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }
    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(Text)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}

fn de_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    d.deserialize_any(Text)
}

/// An object read for some of its fields (`T`, unknown fields skipped unread); any other value
/// (a string in a stackshot's `exception`, an array) is skipped and gives `None`.
struct ObjectOr<T>(std::marker::PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectOr<T> {
    type Value = Option<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        T::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(Some)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

fn de_object<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    d.deserialize_any(ObjectOr(std::marker::PhantomData))
}

/// A JSON array of which the first `N` elements are kept; the rest are read and skipped, so a
/// report of millions of frames costs the memory of `N`.
struct Capped<T, const N: usize>(Vec<T>);

impl<T, const N: usize> Default for Capped<T, N> {
    fn default() -> Self {
        Capped(Vec::new())
    }
}

impl<'de, T: Deserialize<'de>, const N: usize> Deserialize<'de> for Capped<T, N> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T, const N: usize>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>, const N: usize> Visitor<'de> for V<T, N> {
            type Value = Capped<T, N>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(N).min(64));
                while out.len() < N {
                    match seq.next_element::<T>()? {
                        Some(x) => out.push(x),
                        None => return Ok(Capped(out)),
                    }
                }
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Capped(out))
            }
        }
        d.deserialize_seq(V::<T, N>(std::marker::PhantomData))
    }
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
    #[serde(deserialize_with = "de_object")]
    exception: Option<Exception>,
    #[serde(deserialize_with = "de_object")]
    termination: Option<Termination>,
    faulting_thread: Option<usize>,
    threads: Threads,
    used_images: Capped<Image, MAX_IMAGES>,
    asi: Messages,
    /// Jetsam (298): the process that used the most memory.
    largest_process: Option<String>,
    /// Stackshots (288): every process of the system by pid, present (the rest is not read).
    process_by_pid: Option<IgnoredAny>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Exception {
    #[serde(rename = "type", deserialize_with = "de_text")]
    kind: Option<String>,
    #[serde(deserialize_with = "de_text")]
    signal: Option<String>,
    #[serde(deserialize_with = "de_text")]
    codes: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Termination {
    #[serde(deserialize_with = "de_text")]
    indicator: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Thread {
    triggered: bool,
    name: Option<String>,
    frames: Capped<Frame, MAX_FRAMES>,
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

impl fmt::Debug for Capped<Frame, MAX_FRAMES> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} frames", self.0.len())
    }
}

impl fmt::Debug for Capped<Image, MAX_IMAGES> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} images", self.0.len())
    }
}

/// `threads`, read one at a time: the first [`MAX_KEPT_THREADS`] and the first triggered one are
/// kept with their frames (at most [`MAX_FRAMES`] each); of the others only the name is counted
/// (at most [`MAX_THREAD_NAMES`] names).
#[derive(Debug, Default)]
struct Threads {
    /// `(index in the report, thread)`, in report order.
    kept: Vec<(usize, Thread)>,
    /// Threads per name.
    names: BTreeMap<String, u32>,
}

impl Threads {
    fn get(&self, i: usize) -> Option<&Thread> {
        self.kept.iter().find(|(j, _)| *j == i).map(|(_, t)| t)
    }
}

impl<'de> Deserialize<'de> for Threads {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Threads;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of threads")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Threads, A::Error> {
                let mut out = Threads::default();
                let mut i = 0usize;
                let mut triggered_kept = false;
                while let Some(mut t) = seq.next_element::<Thread>()? {
                    if let Some(n) = t.name.as_deref().filter(|n| !n.is_empty()) {
                        count_name(&mut out.names, n);
                    }
                    let first_triggered = t.triggered && !triggered_kept;
                    if i < MAX_KEPT_THREADS || first_triggered {
                        triggered_kept |= t.triggered;
                        t.name = None;
                        out.kept.push((i, t));
                    }
                    i += 1;
                }
                Ok(out)
            }
        }
        d.deserialize_seq(V)
    }
}

/// Counts a thread named `name`: a name seen already, or one of the first [`MAX_THREAD_NAMES`].
pub(super) fn count_name(names: &mut BTreeMap<String, u32>, name: &str) {
    if let Some(n) = names.get_mut(name) {
        *n = n.saturating_add(1);
    } else if names.len() < MAX_THREAD_NAMES {
        names.insert(name.to_owned(), 1);
    }
}

/// `asi`: an object whose values are lists of strings (a bare string or nested lists accepted);
/// the first [`MAX_MESSAGES`] strings are kept.
#[derive(Debug, Default)]
struct Messages(Vec<String>);

impl<'de> Deserialize<'de> for Messages {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut out = Vec::new();
        d.deserialize_any(Strings(&mut out))?;
        Ok(Messages(out))
    }
}

/// Collects the strings of a value into a bounded list; everything else is skipped unread.
struct Strings<'a>(&'a mut Vec<String>);

impl<'de> DeserializeSeed<'de> for Strings<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strings<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<(), E> {
        if self.0.len() < MAX_MESSAGES {
            self.0.push(v.to_owned());
        }
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Strings(&mut *self.0))?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_key::<IgnoredAny>()?.is_some() {
            map.next_value_seed(Strings(&mut *self.0))?;
        }
        Ok(())
    }
    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        Ok(())
    }
}

/// Parses the header line `head`; `None` when it is not a JSON object.
pub(super) fn parse_header(head: &str) -> Option<Header> {
    let head = head.trim();
    if !head.starts_with('{') {
        return None;
    }
    serde_json::from_str(head).ok()
}

/// Fills `report` from a parsed `header` and the text after the header line.
///
/// A header with a `bug_type` over a JSON body cut short, or over nothing, gives the report of
/// that kind with [`CrashReport::partial`] set (what the header says, nothing of the body).
///
/// # Errors
/// [`CrashError::Parse`] when a crash report's JSON body is not JSON, or is cut short or absent
/// under a header with no `bug_type` (nothing says what the file is).
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
    // A header that says what the report is: enough to count it while its body is still being
    // written (or was cut short).
    let countable = header.bug_type.is_some();
    let crash_or_unknown = kind.unwrap_or(ReportKind::Crash) == ReportKind::Crash;
    let body: Option<Body> = if json_body {
        // The first JSON value; whatever follows it (plain text, more JSON lines) is ignored.
        let mut values = serde_json::Deserializer::from_str(rest).into_iter::<Body>();
        match values.next() {
            Some(Ok(b)) => Some(b),
            Some(Err(e)) if e.is_eof() && countable => {
                report.partial = Some(body_error(&e));
                None
            }
            Some(Err(e)) if crash_or_unknown => return Err(parse_err(body_error(&e))),
            _ => None,
        }
    } else {
        None
    };
    if rest.trim().is_empty() {
        if countable {
            report.partial = Some("no body after the header line yet".to_owned());
        } else if crash_or_unknown {
            return Err(parse_err(
                "no body after the header line, and no bug_type in it".to_owned(),
            ));
        }
    }
    // A stackshot (hang, spin) names every process of the system; never a crash of one.
    let stackshot = body.as_ref().is_some_and(|b| b.process_by_pid.is_some());
    let kind = match kind {
        Some(ReportKind::Crash) | None if stackshot => Some(ReportKind::Hang),
        k => k,
    };
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
    if let Some(ex) = body.exception {
        report.exception_type = ex.kind;
        report.signal = ex.signal;
        report.codes = ex.codes;
    }
    if let Some(t) = body.termination {
        report.termination = t.indicator;
    }
    let threads = body.threads;
    let thread = body
        .faulting_thread
        .and_then(|i| threads.get(i))
        .or_else(|| threads.kept.iter().map(|(_, t)| t).find(|t| t.triggered));
    // Image names resolved once per image, not per frame.
    let image_names: Vec<Option<String>> = body
        .used_images
        .0
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
            .0
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
    report.thread_names = threads.names;
    report.messages = body.asi.0;
}
