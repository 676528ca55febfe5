//! A report for upstream: a Markdown draft a user can paste into the tracker of the program that
//! leaves a group of entries (or a catalogue producer's items) behind, with the figures it is made
//! from. Nothing is sent anywhere: the draft is returned, the front end shows or copies it.
//!
//! [`report_draft`] scans the roots once (as `scan` does), finds the subject — a group by its
//! template as `scan` and `rules suggest` print it (`tmp<rand8>/`), or a producer by its rule id —
//! and gathers: counts and bytes (allocated and apparent), growth per day (from the history
//! database when the producer has two samples there, else from the members' birth times, saying
//! which), the oldest and newest member, the writer with its version and the evidence naming it
//! (one sample of the process table, as `scan`), and the OS name and version.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::catalogue::Rule;
use crate::dto::EvidenceDto;
use crate::history::{History, Series};
use crate::monitor::provenance::{evidence_dto, Evidence};
use crate::roots::Root;
use crate::scan::{scan_root_each_found, Found, ScanProgress, Tally, UnattributedGroup};
use crate::units::unix_secs;

use super::{ApiError, Session};

/// What a report is about.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReportSubject {
    /// A group of unattributed entries of one template (an unknown producer).
    Group,
    /// A catalogue producer's items.
    Producer,
}

/// Where a growth figure comes from.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GrowthSource {
    /// Two samples of the producer in the history database: its growth between them.
    History,
    /// The members' birth times: what was born between the oldest and the newest birth, spread
    /// over at least a day.
    Births,
}

/// Growth per day, and how it was measured.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrowthFigures {
    /// Where the figure comes from.
    pub source: GrowthSource,
    /// Allocated bytes a day (negative when it shrank).
    pub bytes_per_day: i64,
    /// Items a day (negative when it shrank).
    pub items_per_day: i64,
    /// Seconds between the two samples, or between the oldest and the newest birth (whole
    /// seconds).
    pub span_secs: u64,
}

/// The program named as the writer.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportWriter {
    /// Executable name (the bundle id for evidence "in the path").
    pub name: String,
    /// Executable path, where known.
    pub exe: Option<String>,
    /// Its app's version (macOS app bundles), where it can be read.
    pub version: Option<String>,
}

/// The OS the report was drafted on.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OsDto {
    /// `macOS`, or the Linux distribution's name.
    pub name: String,
    /// Its version, where readable.
    pub version: Option<String>,
    /// The kernel's release, where readable.
    pub kernel: Option<String>,
}

/// A report draft: the Markdown text and the figures it was made from.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportDraft {
    /// Group or producer.
    pub subject: ReportSubject,
    /// The template: the group's shape (`tmp<rand8>/`), or the producer's item globs joined by
    /// `, `.
    pub template: String,
    /// The producer's rule id (producers only).
    pub producer_id: Option<String>,
    /// The producer's human name (producers only).
    pub producer_name: Option<String>,
    /// The root kind(s) the items lie in (`temp`), joined by `, `.
    pub root_kind: String,
    /// The roots' paths (lossy UTF-8), each once.
    pub roots: Vec<String>,
    /// Number of items (members).
    pub items: u64,
    /// Allocated bytes.
    pub allocated_bytes: u64,
    /// Apparent bytes.
    pub apparent_bytes: u64,
    /// Growth per day; `None` when there is neither history nor birth times.
    pub growth: Option<GrowthFigures>,
    /// The oldest member's newest mtime, Unix seconds.
    pub oldest_unix_secs: Option<u64>,
    /// The newest member's newest mtime, Unix seconds.
    pub newest_unix_secs: Option<u64>,
    /// Up to three examples: a group's first member names (escaped as a label escapes
    /// literals: a backslash `\\`, a byte that is not UTF-8 `\xNN`), a producer's first item paths
    /// relative to their root (lossy UTF-8) (byte order).
    pub examples: Vec<String>,
    /// The writer, when evidence names one (groups only).
    pub writer: Option<ReportWriter>,
    /// The evidence naming the writer, strongest first.
    pub evidence: Vec<EvidenceDto>,
    /// The OS.
    pub os: OsDto,
    /// The draft, Markdown.
    pub markdown: String,
}

/// Why no report could be drafted.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The session failed (config, catalogue, roots).
    #[error(transparent)]
    Api(#[from] ApiError),
    /// Neither a group's template nor a producer id.
    #[error(
        "{target:?} is neither a group of the roots scanned nor a producer id; groups: {}; \
         `cachewatch scan` lists the groups (UNKNOWN PRODUCERS, quote the template), \
         `cachewatch producers` the producer ids",
        list_some(.groups)
    )]
    Unknown {
        /// What was asked for.
        target: String,
        /// The templates of the groups found.
        groups: Vec<String>,
    },
    /// The template names more than one group (in several roots, or of one root).
    #[error(transparent)]
    Ambiguous(#[from] super::groups::AmbiguousShape),
    /// The history database cannot be read.
    #[error(transparent)]
    History(#[from] crate::history::HistoryError),
}

/// Groups an error names, at most.
const GROUPS_NAMED: usize = 10;

/// `items` joined by `, `, at most [`GROUPS_NAMED`] of them and how many more; `none` for none.
fn list_some(items: &[String]) -> String {
    if items.is_empty() {
        return "none".to_owned();
    }
    let mut out = items
        .iter()
        .take(GROUPS_NAMED)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > GROUPS_NAMED {
        out.push_str(&format!(" and {} more", items.len() - GROUPS_NAMED));
    }
    out
}

/// How far back the history's growth looks.
const GROWTH_WINDOW: Duration = Duration::from_secs(30 * 86_400);

const DAY_SECS: u64 = 86_400;

/// Drafts the report on `target` (a group's template or a producer id) in `roots` of `session`,
/// at `now`.
///
/// # Errors
/// [`ReportError::Unknown`] when `target` is neither (listing the groups found);
/// [`ReportError::Ambiguous`] when the template names several groups; the session's errors
/// (an invalid user rule); [`ReportError::History`] when the history database cannot be read.
pub fn report_draft(
    session: &Session,
    roots: &[Root],
    target: &str,
    now: SystemTime,
) -> Result<ReportDraft, ReportError> {
    let catalogue = session.catalogue()?;
    let rule = catalogue.rule(target).cloned();
    let progress = ScanProgress::new();
    let mut tally = Tally::new(0);
    let mut p = ProducerFigures::default();
    for root in roots {
        // With the groups one level down, as `scan` lists them.
        scan_root_each_found(root, &catalogue, &progress, |found| {
            if let Found::Item(item) = &found {
                if rule.is_some() && item.producer.as_deref() == Some(target) {
                    p.add(root, item);
                }
            }
            tally.add_found(root, &found);
        });
    }
    let os = os_dto();
    if let Some(rule) = rule {
        let growth = match history_growth(session, &rule.id, now)? {
            Some(g) => Some(g),
            None => births_growth(p.births, p.items, p.measure.allocated_bytes),
        };
        return Ok(producer_draft(&rule, p, growth, os));
    }
    let groups = tally.unattributed_groups();
    let g = match super::groups::pick_group(&groups, |g| g, target)? {
        Some(g) => g,
        None => {
            return Err(ReportError::Unknown {
                target: target.to_owned(),
                groups: groups
                    .iter()
                    .map(|g| super::groups::one_line_label(&g.group))
                    .collect(),
            })
        }
    };
    let (_, births) = super::rules::members_of(&g.root, &g.group);
    // The writers the monitor remembers name the group as in the window; a history that
    // cannot be read leaves them out, the draft does not fail.
    let stored = session
        .db_path()
        .ok()
        .and_then(|db| super::rules::stored_writers(&db).ok())
        .unwrap_or_default();
    let evidence = super::rules::writers_remembered(std::slice::from_ref(g), &stored)
        .pop()
        .map(|w| w.evidence)
        .unwrap_or_default();
    let growth = births_growth(births, g.group.items, g.group.measure.allocated_bytes);
    Ok(group_draft(g, evidence, growth, os))
}

/// The report on the monitor's group `label` of root `root` (the window's "Copy report"): the
/// monitor's own figures and evidence (writers remembered across restarts included, and births
/// after launches, which one sample cannot tell), growth from the members' births. No rescan.
///
/// # Errors
/// [`ApiError::NoGroup`] when the monitor shows no such group now, the monitor's errors.
pub async fn group_report(
    monitor: &crate::monitor::MonitorHandle,
    root: &str,
    label: &str,
) -> Result<ReportDraft, ApiError> {
    let g = super::groups::group_of(monitor, root, label).await?;
    super::groups::blocking(move || {
        let (_, births) = super::rules::members_of(&g.root, &g.group);
        let growth = births_growth(births, g.group.items, g.group.measure.allocated_bytes);
        let group = UnattributedGroup {
            root: g.root.clone(),
            root_kind: g.root_kind,
            group: g.group.clone(),
        };
        Ok(group_draft(&group, g.evidence.clone(), growth, os_dto()))
    })
    .await
}

fn os_dto() -> OsDto {
    let os = crate::platform::os_release();
    OsDto {
        name: os.name,
        version: os.version,
        kernel: os.kernel,
    }
}

/// What the scan shows of a producer's items.
#[derive(Default)]
struct ProducerFigures {
    items: u64,
    measure: crate::inventory::Measure,
    /// Oldest and newest of the items' newest mtimes.
    mtimes: Option<(SystemTime, SystemTime)>,
    /// Oldest and newest of the items' birth times.
    births: Option<(SystemTime, SystemTime)>,
    roots: Vec<(PathBuf, String)>,
    /// The smallest item paths relative to their root (lossy UTF-8), at most three.
    examples: Vec<String>,
}

fn widen(range: &mut Option<(SystemTime, SystemTime)>, t: SystemTime) {
    *range = Some(match *range {
        None => (t, t),
        Some((lo, hi)) => (lo.min(t), hi.max(t)),
    });
}

impl ProducerFigures {
    fn add(&mut self, root: &Root, item: &crate::inventory::Item) {
        self.items += 1;
        self.measure.add(&item.measure);
        if let Some(t) = item.measure.newest_mtime {
            widen(&mut self.mtimes, t);
        }
        if let Some(t) = item.measure.birth_time {
            widen(&mut self.births, t);
        }
        let rel = item
            .path
            .strip_prefix(&root.canonical)
            .unwrap_or(&item.path);
        let rel = rel.to_string_lossy();
        if self.examples.len() < 3 || self.examples.last().is_some_and(|l| **l > *rel) {
            let at = self.examples.partition_point(|e| **e < *rel);
            self.examples.insert(at, rel.into_owned());
            self.examples.truncate(3);
        }
        if !self.roots.iter().any(|(p, _)| *p == root.canonical) {
            self.roots
                .push((root.canonical.clone(), root.kind.to_string()));
        }
    }
}

/// The producer's growth over the last [`GROWTH_WINDOW`] of the history database, when it has
/// two samples there.
fn history_growth(
    session: &Session,
    id: &str,
    now: SystemTime,
) -> Result<Option<GrowthFigures>, ReportError> {
    let Ok(db) = session.db_path() else {
        return Ok(None);
    };
    if !db.exists() {
        return Ok(None);
    }
    // A history that cannot be read (older schema the monitor has not upgraded yet, locked,
    // damaged): the draft falls back to the births, it does not fail.
    let Ok(h) = History::open_read_only(&db) else {
        return Ok(None);
    };
    // Reclaims kept out: a producer CacheWatch reclaims does not read as shrinking upstream.
    let Ok(Some(g)) = h.observed_growth(&Series::Producer(id.to_owned()), GROWTH_WINDOW, now)
    else {
        return Ok(None);
    };
    let day = Duration::from_secs(DAY_SECS);
    let (Some(bytes), Some(items)) = (g.bytes_per(day), g.items_per(day)) else {
        return Ok(None);
    };
    Ok(Some(GrowthFigures {
        source: GrowthSource::History,
        bytes_per_day: bytes,
        items_per_day: items,
        span_secs: g.span().as_secs(),
    }))
}

/// Growth from births: the items and bytes born between the oldest and the newest birth (whole
/// seconds), over that span or a day, whichever is longer (a burst within minutes is not
/// scaled up to a day's worth of bursts).
fn births_growth(
    births: Option<(SystemTime, SystemTime)>,
    items: u64,
    bytes: u64,
) -> Option<GrowthFigures> {
    let (oldest, newest) = births?;
    let span = unix_secs(newest).saturating_sub(unix_secs(oldest));
    let per_day = |n: u64| {
        let v = u128::from(n) * u128::from(DAY_SECS) / u128::from(span.max(DAY_SECS));
        i64::try_from(v).unwrap_or(i64::MAX)
    };
    Some(GrowthFigures {
        source: GrowthSource::Births,
        bytes_per_day: per_day(bytes),
        items_per_day: per_day(items),
        span_secs: span,
    })
}

fn writer_of(evidence: &[Evidence]) -> Option<ReportWriter> {
    let e = evidence.first()?;
    Some(ReportWriter {
        name: e.name.clone(),
        exe: e.exe.as_ref().map(|p| p.to_string_lossy().into_owned()),
        version: e
            .exe
            .as_deref()
            .and_then(crate::platform::app_version_of_exe),
    })
}

fn group_draft(
    g: &UnattributedGroup,
    evidence: Vec<Evidence>,
    growth: Option<GrowthFigures>,
    os: OsDto,
) -> ReportDraft {
    let group = &g.group;
    let mut d = ReportDraft {
        subject: ReportSubject::Group,
        template: group.shown(),
        producer_id: None,
        producer_name: None,
        root_kind: g.root_kind.to_string(),
        roots: vec![g.root.to_string_lossy().into_owned()],
        items: group.items,
        allocated_bytes: group.measure.allocated_bytes,
        apparent_bytes: group.measure.apparent_bytes,
        growth,
        oldest_unix_secs: group.oldest_mtime.map(unix_secs),
        newest_unix_secs: group.newest_mtime.map(unix_secs),
        examples: group
            .examples
            .iter()
            .map(|e| super::groups::example_shown(e))
            .collect(),
        writer: writer_of(&evidence),
        evidence: evidence.iter().map(evidence_dto).collect(),
        os,
        markdown: String::new(),
    };
    let noun = if group.shape.dir { "dirs" } else { "files" };
    d.markdown = markdown(&d, noun, &evidence);
    d
}

fn producer_draft(
    rule: &Rule,
    p: ProducerFigures,
    growth: Option<GrowthFigures>,
    os: OsDto,
) -> ReportDraft {
    let mut kinds: Vec<String> = p.roots.iter().map(|(_, k)| k.clone()).collect();
    kinds.dedup();
    if kinds.is_empty() {
        kinds.push(rule.root.to_string());
    }
    let mut d = ReportDraft {
        subject: ReportSubject::Producer,
        template: rule.item.join(", "),
        producer_id: Some(rule.id.clone()),
        producer_name: Some(rule.name.clone()),
        root_kind: kinds.join(", "),
        roots: p
            .roots
            .iter()
            .map(|(r, _)| r.to_string_lossy().into_owned())
            .collect(),
        items: p.items,
        allocated_bytes: p.measure.allocated_bytes,
        apparent_bytes: p.measure.apparent_bytes,
        growth,
        oldest_unix_secs: p.mtimes.map(|(lo, _)| unix_secs(lo)),
        newest_unix_secs: p.mtimes.map(|(_, hi)| unix_secs(hi)),
        examples: p.examples,
        writer: None,
        evidence: Vec::new(),
        os,
        markdown: String::new(),
    };
    d.markdown = markdown(&d, "items", &[]);
    d
}

mod markdown;

#[cfg(test)]
use markdown::code;
use markdown::markdown;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_spans_hold_backticks_and_pipes() {
        assert_eq!(code("tmp<rand8>/"), "`tmp<rand8>/`");
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("`x"), "`` `x ``");
        assert_eq!(code("a|b"), "`a|b`");
        assert_eq!(code(" a "), "`  a  `");
        assert_eq!(code("  "), "`  `");
        assert_eq!(markdown::table_cell(&code("a|b")), "`a\\|b`");
    }

    #[test]
    fn births_spread_over_a_day_at_least() {
        let t = |s: u64| std::time::UNIX_EPOCH + Duration::from_secs(1_800_000_000 + s);
        // Two days apart: half a day's worth each day.
        let g = births_growth(Some((t(0), t(2 * DAY_SECS))), 10, 4000).unwrap();
        assert_eq!(
            (g.items_per_day, g.bytes_per_day, g.span_secs),
            (5, 2000, 2 * DAY_SECS)
        );
        // A burst within a minute counts as one day's worth, not 1,440 bursts.
        let g = births_growth(Some((t(0), t(60))), 10, 4000).unwrap();
        assert_eq!(
            (g.items_per_day, g.bytes_per_day, g.span_secs),
            (10, 4000, 60)
        );
        assert_eq!(births_growth(None, 10, 4000), None);
    }

    #[test]
    fn an_error_names_ten_groups_at_most() {
        let groups: Vec<String> = (0..12).map(|i| format!("g{i}")).collect();
        assert_eq!(list_some(&groups[..2]), "g0, g1");
        assert!(list_some(&groups).ends_with("g9 and 2 more"));
        assert_eq!(list_some(&[]), "none");
    }
}
