//! Fault reports that are not crashes: macOS (26.6 and later) writes a crash-shaped
//! `ExcUserFault_<process>-<date>.ips` for every `os_log_fault` a framework emits, marked
//! `"is_simulated": 1`, while the process goes on running (duckduckgo/apple-browsers#6124). Such
//! a report is listed as [`ReportKind::SimulatedFault`], never counted by the crash-loop detector.

use super::report::{CrashReport, ReportKind};

/// `report` as [`ReportKind::SimulatedFault`] when it is a crash and its text (`text`: the whole
/// file, header line and body) marks it simulated.
pub(super) fn mark(mut report: CrashReport, text: &str) -> CrashReport {
    if report.kind == ReportKind::Crash && is_simulated(text) {
        report.kind = ReportKind::SimulatedFault;
    }
    report
}

/// True when `text` has a JSON key `"is_simulated"` whose value is `1` or `true` (in the header
/// line or the body, with any spacing).
pub(super) fn is_simulated(text: &str) -> bool {
    const KEY: &str = "\"is_simulated\"";
    text.match_indices(KEY).any(|(at, _)| {
        let rest = text[at + KEY.len()..].trim_start();
        rest.strip_prefix(':').is_some_and(|v| {
            let v = v.trim_start();
            v.starts_with('1') && !v[1..].starts_with(|c: char| c.is_ascii_digit())
                || v.starts_with("true")
        })
    })
}

#[cfg(test)]
mod tests {
    use super::is_simulated;

    #[test]
    fn the_flag_is_read_with_any_spacing_and_only_when_set() {
        assert!(is_simulated(r#"{"bug_type":"309","is_simulated":1}"#));
        assert!(is_simulated("{\n  \"is_simulated\" : 1,\n  \"pid\" : 4\n}"));
        assert!(is_simulated(r#"{"is_simulated": true}"#));
        assert!(!is_simulated(r#"{"is_simulated":0}"#));
        assert!(!is_simulated(r#"{"is_simulated":10}"#));
        assert!(!is_simulated(r#"{"is_simulated":false}"#));
        assert!(!is_simulated(r#"{"bug_type":"309"}"#));
    }
}
