//! The report draft as Markdown: a title, a table of the figures, the evidence, what the
//! program should do. Paths under the home dir are written `~/...`; code spans survive backticks
//! and pipes.

use std::time::Duration;

use super::{GrowthFigures, GrowthSource, OsDto, ReportDraft, DAY_SECS};
use crate::monitor::provenance::{Evidence, EvidenceKind};
use crate::units::format_bytes;

/// `path` with the home dir written `~`: a draft meant for a public tracker does not carry the
/// user's account name in every path.
fn shown(path: &str) -> String {
    let home = std::env::var("HOME").unwrap_or_default();
    let home = home.trim_end_matches('/');
    match path.strip_prefix(home) {
        Some(rest) if !home.is_empty() && (rest.is_empty() || rest.starts_with('/')) => {
            format!("~{rest}")
        }
        _ => path.to_owned(),
    }
}

/// `text` as a Markdown code span: fenced with one backtick more than its longest run of
/// backticks (and spaced when it starts or ends with one, or starts and ends with a space, which
/// CommonMark would strip), so a name holding backticks stays one span. A `|` is left as is: a
/// table cell escapes it ([`table_cell`]), a paragraph must not.
pub(super) fn code(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let spaced = text.starts_with(' ') && text.ends_with(' ') && text.trim() != "";
    let pad = if text.starts_with('`') || text.ends_with('`') || spaced {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// `text` as a table cell: each `|` escaped `\|` (in a code span too: a table splits its rows
/// on pipes before it reads the spans).
pub(super) fn table_cell(text: &str) -> String {
    text.replace('|', "\\|")
}

fn time_text(t: Option<u64>) -> String {
    match t {
        Some(s) => {
            humantime::format_rfc3339_seconds(std::time::UNIX_EPOCH + Duration::from_secs(s))
                .to_string()
        }
        None => "unknown".to_owned(),
    }
}

fn bytes_text(n: u64) -> String {
    format!("{} ({n} bytes)", format_bytes(i128::from(n)))
}

fn growth_text(g: Option<&GrowthFigures>) -> String {
    let Some(g) = g else {
        return "unknown (no history and no birth times)".to_owned();
    };
    let days = g.span_secs as f64 / DAY_SECS as f64;
    let source = match g.source {
        GrowthSource::History => format!("from CacheWatch's history, over {days:.1} days"),
        GrowthSource::Births => format!(
            "from the members' birth times, born over {days:.1} days; a span under a day counts \
             as one"
        ),
    };
    format!(
        "{} and {} items a day ({source})",
        format_bytes(i128::from(g.bytes_per_day)),
        g.items_per_day
    )
}

fn os_text(os: &OsDto) -> String {
    let mut out = os.name.clone();
    if let Some(v) = &os.version {
        out.push(' ');
        out.push_str(v);
    }
    if let Some(k) = &os.kernel {
        out.push_str(&format!(" (kernel {k})"));
    }
    out
}

fn evidence_line(e: &Evidence) -> String {
    let mut out = format!(
        "- {}: {}, {} of {} members",
        e.kind.label(),
        code(&e.name),
        e.agree,
        e.total
    );
    if let Some(o) = e.orphans {
        out.push_str(&format!(", {o} left by processes that have exited"));
    }
    out.push_str(if e.alive {
        "; it is running now"
    } else {
        "; it is not running now"
    });
    out
}

/// The Markdown draft of `d`; `noun` is what the items are (`dirs`, `files`, `items`).
pub(super) fn markdown(d: &ReportDraft, noun: &str, evidence: &[Evidence]) -> String {
    let who = match (&d.writer, &d.producer_name) {
        (Some(w), _) => code(&w.name),
        (None, Some(name)) => name.clone(),
        (None, None) => "An unknown program".to_owned(),
    };
    let writer = match &d.writer {
        Some(w) => {
            let mut s = format!(
                "{} {}",
                code(&w.name),
                w.version.as_deref().unwrap_or("(version unknown)")
            );
            if let Some(exe) = &w.exe {
                s.push_str(&format!(", {}", code(&shown(exe))));
            }
            s
        }
        None => match &d.producer_id {
            Some(id) => format!("{who} (CacheWatch rule {})", code(id)),
            None => "not known".to_owned(),
        },
    };
    let mut m = String::new();
    m.push_str(&format!(
        "## {who} leaves {} {noun} behind in the {} dir ({})\n\n",
        d.items,
        d.root_kind,
        format_bytes(i128::from(d.allocated_bytes))
    ));
    m.push_str("| | |\n| --- | --- |\n");
    let mut row = |k: &str, v: String| m.push_str(&format!("| {k} | {} |\n", table_cell(&v)));
    row("Template", code(&d.template));
    let wheres: Vec<String> = d.roots.iter().map(|r| code(&shown(r))).collect();
    row(
        "Where",
        if wheres.is_empty() {
            "nowhere now".to_owned()
        } else {
            wheres.join(", ")
        },
    );
    row("Items", d.items.to_string());
    row("Allocated on disk", bytes_text(d.allocated_bytes));
    row("Apparent size", bytes_text(d.apparent_bytes));
    row("Growth", growth_text(d.growth.as_ref()));
    row("Oldest", time_text(d.oldest_unix_secs));
    row("Newest", time_text(d.newest_unix_secs));
    row("Writer", writer);
    row("OS", os_text(&d.os));
    if !evidence.is_empty() {
        m.push_str("\nWhat names the writer:\n\n");
        for e in evidence {
            m.push_str(&evidence_line(e));
            m.push('\n');
        }
    }
    if !d.examples.is_empty() {
        let ex: Vec<String> = d
            .examples
            .iter()
            .map(|e| code(&crate::api::groups::escape_controls(e)))
            .collect();
        m.push_str(&format!("\nExamples: {}\n", ex.join(", ")));
    }
    m.push_str("\n### What would fix it\n\n");
    let pid = evidence.iter().find(|e| e.kind == EvidenceKind::PidInName);
    match pid {
        Some(e) => m.push_str(&format!(
            "These {noun} are named with the pid of the process that made them, and {} of the {} \
             looked at were left by processes that have exited. Please remove each one when the \
             process that made it is done with it (on teardown or exit), or keep them within \
             the program's own lifetime: at start, remove those whose pid no longer runs.\n",
            e.orphans.unwrap_or(0),
            e.total
        )),
        None => m.push_str(&format!(
            "Nothing removes these {noun}: {} have piled up. Please remove each one on teardown, \
             when the run that made it is done, or keep them within the program's own lifetime \
             (one dir reused across runs, or old ones removed at start).\n",
            d.items
        )),
    }
    m.push_str(
        "\n_Drafted by CacheWatch from a scan of this machine; nothing was sent anywhere._\n",
    );
    m
}
