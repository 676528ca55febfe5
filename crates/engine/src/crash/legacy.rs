//! Legacy text reports: `.crash` files (macOS 11 and earlier, still written by some tools), the
//! text bodies of `.ips` files of `bug_type` 109 (crash), 145 and 202 (resource) and 151 (panic),
//! and `.diag`/`.spin`/`.hang` files. Read: `Process:`, `Path:`, `Date/Time:`, `OS Version:`,
//! `Exception Type:`, `Exception Codes:`, the termination reason, `Application Specific
//! Information:`, thread names and the crashed thread's frames.

use super::report::{CrashReport, StackFrame};
use super::report::{MAX_FRAMES, MAX_MESSAGES};
use super::time::parse_ips_time;

/// True when `text` looks like a legacy report: it has a `Process:` or an `Exception Type:` line,
/// or a `Date/Time:` line and an `Event:` line (resource reports).
pub(super) fn looks_like_report(text: &str) -> bool {
    let mut date = false;
    let mut event = false;
    for line in text.lines().take(200) {
        let l = line.trim_start();
        if l.starts_with("Process:") || l.starts_with("Exception Type:") {
            return true;
        }
        date |= l.starts_with("Date/Time:");
        event |= l.starts_with("Event:");
    }
    date && event
}

/// Fills `report` from the legacy text `text`. Fields already set by a JSON header are kept
/// unless the text has them.
pub(super) fn fill(report: &mut CrashReport, text: &str) {
    let mut crashed: Option<String> = None;
    let mut in_frames = false;
    let mut in_asi = false;
    let mut frames: Vec<StackFrame> = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if in_asi {
            if trimmed.is_empty() {
                in_asi = false;
            } else if report.messages.len() < MAX_MESSAGES {
                report.messages.push(trimmed.to_owned());
            }
            continue;
        }
        if in_frames {
            match parse_frame(trimmed) {
                Some(f) => {
                    if frames.len() < MAX_FRAMES {
                        frames.push(f);
                    }
                    continue;
                }
                None => in_frames = false,
            }
        }
        if let Some(rest) = trimmed.strip_prefix("Thread ") {
            if let Some(n) = thread_name(rest) {
                super::ips::count_name(&mut report.thread_names, n);
            }
            if is_crashed_thread_header(rest, crashed.as_deref()) && frames.is_empty() {
                in_frames = true;
            }
            continue;
        }
        let Some((key, value)) = trimmed.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match key {
            "Process" => {
                let (name, pid) = name_and_pid(value);
                if !name.is_empty() {
                    report.process = name.to_owned();
                }
                report.pid = pid.or(report.pid);
            }
            // Resource and spin reports (`.diag`, `.spin`) say `Command:` and `PID:`.
            "Command" if !value.is_empty() => report.process = value.to_owned(),
            "PID" => report.pid = value.parse().ok().or(report.pid),
            "Path" if !value.is_empty() => report.process_path = Some(value.to_owned()),
            "Date/Time" => {
                if let Some(t) = parse_ips_time(value) {
                    report.time = t;
                }
            }
            "OS Version" if !value.is_empty() => report.os_version = Some(value.to_owned()),
            "Exception Type" => {
                let (kind, signal) = name_and_paren(value);
                report.exception_type = Some(kind.to_owned()).filter(|s| !s.is_empty());
                report.signal = signal.map(str::to_owned);
            }
            "Exception Codes" => report.codes = Some(value.to_owned()),
            "Termination Reason" => report.termination = Some(value.to_owned()),
            "Termination Signal" if report.termination.is_none() => {
                report.termination = Some(value.to_owned());
            }
            "Crashed Thread" => {
                crashed = value.split_whitespace().next().map(str::to_owned);
            }
            "Application Specific Information" => {
                in_asi = true;
                if !value.is_empty() && report.messages.len() < MAX_MESSAGES {
                    report.messages.push(value.to_owned());
                }
            }
            _ => {}
        }
    }
    if !frames.is_empty() {
        report.set_frames(frames);
    }
}

/// `name [123]` → (`name`, 123).
fn name_and_pid(value: &str) -> (&str, Option<u32>) {
    match value.rsplit_once('[') {
        Some((name, pid)) => (name.trim(), pid.trim_end_matches(']').trim().parse().ok()),
        None => (value, None),
    }
}

/// `EXC_BAD_ACCESS (SIGSEGV)` → (`EXC_BAD_ACCESS`, `SIGSEGV`).
fn name_and_paren(value: &str) -> (&str, Option<&str>) {
    match value.split_once('(') {
        Some((name, rest)) => (
            name.trim(),
            Some(rest.trim_end().trim_end_matches(')').trim()).filter(|s| !s.is_empty()),
        ),
        None => (value.trim(), None),
    }
}

/// The thread's name from the text after `Thread `: `3:: ANEServicesThread` or
/// `3 name:  ANEServicesThread`; a dispatch queue is not a name.
fn thread_name(rest: &str) -> Option<&str> {
    let name = if let Some((_, n)) = rest.split_once("::") {
        n
    } else if let Some((_, n)) = rest.split_once(" name:") {
        n
    } else {
        return None;
    };
    let name = name.trim();
    (!name.is_empty() && !name.starts_with("Dispatch queue:")).then_some(name)
}

/// True for `0 Crashed:` / `0 Crashed:: ...` (the thread `crashed`, when the report says which).
fn is_crashed_thread_header(rest: &str, crashed: Option<&str>) -> bool {
    let mut words = rest.split_whitespace();
    let number = words.next().unwrap_or("");
    let flag = words.next().unwrap_or("");
    flag.starts_with("Crashed:") && crashed.map_or(true, |c| c == number)
}

/// `0   libswiftCore.dylib   0x1a2b3c _assertionFailure(_:_:file:line:flags:) + 228`.
fn parse_frame(line: &str) -> Option<StackFrame> {
    let (index, rest) = line.split_once(char::is_whitespace)?;
    if index.is_empty() || !index.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let addr_at = rest.find(" 0x").or_else(|| rest.find("\t0x"))?;
    let image = rest[..addr_at].trim();
    let after = rest[addr_at..].trim_start();
    let symbol = after
        .split_once(char::is_whitespace)
        .map(|(_, s)| s.trim())
        .unwrap_or("");
    let symbol = match symbol.rsplit_once(" + ") {
        Some((s, off)) if off.bytes().all(|b| b.is_ascii_digit()) => s.trim(),
        _ => symbol,
    };
    Some(StackFrame {
        image: Some(image.to_owned()).filter(|s| !s.is_empty()),
        symbol: Some(symbol.to_owned()).filter(|s| !s.is_empty() && !s.starts_with("0x")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_lines_with_spaces_in_the_image_name() {
        let f = parse_frame("12  Example Helper Framework   \t0x0000000104a1c2d0 run_loop + 40")
            .unwrap();
        assert_eq!(f.image.as_deref(), Some("Example Helper Framework"));
        assert_eq!(f.symbol.as_deref(), Some("run_loop"));
        let f = parse_frame("3   worker   0x100a04000 0x100a00000 + 16384").unwrap();
        assert_eq!(f.image.as_deref(), Some("worker"));
        assert_eq!(f.symbol, None);
        assert!(parse_frame("Thread 1:").is_none());
        assert!(parse_frame("").is_none());
    }

    #[test]
    fn exception_and_process_lines() {
        assert_eq!(
            name_and_paren("EXC_BAD_ACCESS (SIGSEGV)"),
            ("EXC_BAD_ACCESS", Some("SIGSEGV"))
        );
        assert_eq!(name_and_paren("EXC_CRASH"), ("EXC_CRASH", None));
        assert_eq!(name_and_pid("my worker [4120]"), ("my worker", Some(4120)));
        assert_eq!(
            thread_name("7:: ANEServicesThread"),
            Some("ANEServicesThread")
        );
        assert_eq!(
            thread_name("7 name:  ANEServicesThread"),
            Some("ANEServicesThread")
        );
        assert_eq!(
            thread_name("0 Crashed:: Dispatch queue: com.apple.main-thread"),
            None
        );
    }
}
