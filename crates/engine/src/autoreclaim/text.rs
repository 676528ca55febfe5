//! The words of auto-reclaim: the kept counts by reason code, the one-line announcement of a
//! run, and the "freed nothing" note.

use crate::catalogue::Catalogue;
use crate::reclaim::{KeepReason, PlanSummary};
use crate::units::{format_bytes, format_count, format_threshold};
use std::collections::BTreeMap;

use super::AutoRun;

/// The announcement of `runs` (one run, or the runs of one rule since the last announcement):
/// `Reclaimed 1.2 GiB: 3,412 Metal binary archive harvests items older than 1 h`. `None` when
/// they deleted nothing.
pub fn announcement(runs: &[AutoRun], catalogue: &Catalogue) -> Option<String> {
    let items: u64 = runs.iter().map(|r| r.deleted_items).sum();
    if items == 0 {
        return None;
    }
    let bytes: u64 = runs.iter().map(|r| r.freed_bytes).sum();
    let last = runs.last()?;
    let names: Vec<&str> = last
        .producers
        .iter()
        .map(|id| catalogue.rule(id).map_or(id.as_str(), |r| r.name.as_str()))
        .collect();
    let older = format_threshold(last.older_than_secs);
    let mut text = format!(
        "Reclaimed {}: {} items of {} older than {older}",
        format_bytes(i128::from(bytes)),
        format_count(items),
        names.join(", ")
    );
    if runs.len() > 1 {
        text.push_str(&format!(" ({} runs)", runs.len()));
    }
    Some(text)
}

/// The note of a run that freed nothing and kept everything it saw, naming the reasons with
/// their counts: `rule metal-gpuarchiver freed nothing: kept 12 (owner alive 10, too young 2)`.
/// `None` when the run deleted something or saw nothing.
pub fn nothing_freed(run: &AutoRun) -> Option<String> {
    let kept: u64 = run.kept.values().sum();
    if run.deleted_items > 0 || kept == 0 {
        return None;
    }
    let mut by: Vec<(&String, &u64)> = run.kept.iter().collect();
    by.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let reasons: Vec<String> = by
        .iter()
        .map(|(code, n)| format!("{} {n}", code.replace('-', " ")))
        .collect();
    Some(format!(
        "auto-reclaim rule {} freed nothing: kept {} ({})",
        run.rule,
        kept,
        reasons.join(", ")
    ))
}

/// Counts of `reasons` by code.
pub(super) fn count_reasons<'a>(
    reasons: impl Iterator<Item = &'a KeepReason>,
) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for r in reasons {
        *out.entry(r.code().to_owned()).or_insert(0) += 1;
    }
    out
}

/// The kept items of a streamed plan's `summary`, by reason code ([`KeepReason::code`]).
pub fn kept_by_code(summary: &PlanSummary) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for g in summary.kept.values() {
        *out.entry(g.example.code().to_owned()).or_insert(0) += g.items;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn announcement_reads_as_the_issue_says() {
        let run = AutoRun {
            rule: "gpu".into(),
            producers: vec!["metal-gpuarchiver".into()],
            older_than_secs: 3600,
            deleted_items: 3412,
            freed_bytes: 1288490189, // 1.2 GiB
            ..AutoRun::default()
        };
        let text = announcement(std::slice::from_ref(&run), &Catalogue::builtin());
        assert_eq!(
            text.as_deref(),
            Some("Reclaimed 1.2 GiB: 3,412 items of Metal binary archive harvests older than 1 h")
        );
        let two = announcement(&[run.clone(), run], &Catalogue::builtin()).unwrap_or_default();
        assert!(two.starts_with("Reclaimed 2.4 GiB: 6,824 items"), "{two}");
        assert!(two.ends_with("(2 runs)"), "{two}");
    }

    #[test]
    fn nothing_freed_names_the_reasons_most_first() {
        let mut run = AutoRun {
            rule: "gpu".into(),
            ..AutoRun::default()
        };
        run.kept.insert("too-young".into(), 2);
        run.kept.insert("owner-alive".into(), 10);
        assert_eq!(
            nothing_freed(&run).as_deref(),
            Some("auto-reclaim rule gpu freed nothing: kept 12 (owner alive 10, too young 2)")
        );
        run.deleted_items = 1;
        assert_eq!(nothing_freed(&run), None);
        assert_eq!(format_count(999), "999");
        assert_eq!(format_count(1_000_000), "1,000,000");
    }
}
