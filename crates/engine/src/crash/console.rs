//! Reports copied out of Console.app: a "Translated Report (Full Report Below)" preamble (the
//! report rendered as legacy text, between dashed rule lines) before the original `.ips` text,
//! which follows a "Full Report" line. The original (JSON header line and body) is what is read;
//! a copy that kept only the translation is read as legacy text.

/// The title line Console writes first (after a dashed rule line).
const TRANSLATED: &str = "Translated Report (Full Report Below)";
/// The line Console writes before the original report.
const FULL: &str = "Full Report";
/// How many leading lines may come before the title line (rules, blank lines).
const HEAD_LINES: usize = 4;

/// What a Console copy holds to be read.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Copy<'a> {
    /// The original report: from its JSON header line to the end.
    Original(&'a str),
    /// Only the translation (legacy text), from the line after the title.
    Translated(&'a str),
}

/// The part of `text` to read when it is a Console copy (its first lines are dashed rules and the
/// "Translated Report" title); `None` when it is not one.
pub(super) fn strip(text: &str) -> Option<Copy<'_>> {
    let mut title_end = None;
    for (l, _, next) in line_spans(text).take(HEAD_LINES) {
        let t = l.trim();
        if t == TRANSLATED {
            title_end = Some(next);
            break;
        }
        if !rule_or_blank(t) {
            return None;
        }
    }
    let after_title = &text[title_end?..];
    // The original report: the first line that opens a JSON object after a "Full Report" line.
    let mut spans = line_spans(after_title);
    if spans.by_ref().any(|(l, _, _)| l.trim() == FULL) {
        for (l, start, _) in spans {
            let t = l.trim();
            if t.starts_with('{') {
                return Some(Copy::Original(&after_title[start..]));
            }
            if !rule_or_blank(t) {
                break;
            }
        }
    }
    Some(Copy::Translated(after_title))
}

/// True for an empty line or a dashed rule (`-----`).
fn rule_or_blank(line: &str) -> bool {
    line.bytes().all(|b| b == b'-')
}

/// Each line of `text` (without its `\n`), its offset, and the offset just past it (past its
/// `\n`).
fn line_spans(text: &str) -> impl Iterator<Item = (&str, usize, usize)> {
    let mut at = 0;
    std::iter::from_fn(move || {
        if at >= text.len() {
            return None;
        }
        let rest = &text[at..];
        let (line, step) = match rest.find('\n') {
            Some(i) => (&rest[..i], i + 1),
            None => (rest, rest.len()),
        };
        let start = at;
        at += step;
        Some((line, start, at))
    })
}

#[cfg(test)]
mod tests {
    use super::{strip, Copy};

    #[test]
    fn the_original_after_full_report_is_found() {
        let rule = "-".repeat(37);
        let t = format!(
            "{rule}\nTranslated Report (Full Report Below)\n{rule}\n\nProcess: x [1]\n\n\
             -----------\nFull Report\n-----------\n\n{{\"bug_type\":\"309\"}}\n{{\n}}\n"
        );
        assert_eq!(
            strip(&t),
            Some(Copy::Original("{\"bug_type\":\"309\"}\n{\n}\n"))
        );
        // A blank line between the rule and the "Full Report" line, as some copies have.
        let t = format!(
            "{rule}\nTranslated Report (Full Report Below)\n{rule}\nProcess: x\n-----------\n\n\
             Full Report\n-----------\n{{\"a\":1}}"
        );
        assert_eq!(strip(&t), Some(Copy::Original("{\"a\":1}")));
    }

    #[test]
    fn a_copy_without_the_original_is_its_translation() {
        let t = "-----\nTranslated Report (Full Report Below)\n-----\nProcess: x [1]\n";
        assert_eq!(strip(t), Some(Copy::Translated("-----\nProcess: x [1]\n")));
        let t = "-----\nTranslated Report (Full Report Below)\n-----\nFull Report\n---\nno json\n";
        assert!(matches!(strip(t), Some(Copy::Translated(_))));
    }

    #[test]
    fn other_text_is_not_a_console_copy() {
        assert_eq!(strip("{\"bug_type\":\"309\"}\n{}"), None);
        assert_eq!(
            strip("Process: x [1]\nTranslated Report (Full Report Below)"),
            None
        );
        assert_eq!(strip(""), None);
    }
}
