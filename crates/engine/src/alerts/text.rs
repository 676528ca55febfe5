//! The words of the alerts: short, naming the producer, the amount, the rate and what to do.

use crate::dto::{AlertDto, SuggestedReclaim};

/// The `--older-than` to suggest for a producer, seconds: at least an hour, and at least its
/// rule's floor, in whole hours.
pub(crate) fn suggested_older_than_secs(min_age_secs: u64) -> u64 {
    min_age_secs.max(3600).div_ceil(3600) * 3600
}

/// Where the sentence of a suggested reclaim starts in an alert's message.
const RECLAIM_SENTENCE: &str = " Reclaim: cachewatch reclaim --producer ";

/// The sentence of `message` that tells a terminal user how to reclaim what `s` suggests:
/// ` Reclaim: cachewatch reclaim --producer ID --older-than 2d.` ([`suggestion_in`] reads it
/// back). The age is the window's unit ([`crate::units::format_threshold`]: `2 d`, `36 h`) written
/// without its space, so the command can be pasted as is (never humantime's `2days`/`86400s`).
pub(crate) fn reclaim_sentence(s: &SuggestedReclaim) -> String {
    let older = crate::units::format_threshold(s.older_than_secs).replace(' ', "");
    format!("{RECLAIM_SENTENCE}{} --older-than {older}.", s.producer)
}

/// The reclaim `message` suggests, read from its [`reclaim_sentence`] (alerts read back from the
/// history database carry only their text, older ones humantime's `2days`); `None` when it
/// suggests none.
pub fn suggestion_in(message: &str) -> Option<SuggestedReclaim> {
    let rest = &message[message.find(RECLAIM_SENTENCE)? + RECLAIM_SENTENCE.len()..];
    let (producer, rest) = rest.split_once(" --older-than ")?;
    let older = rest.split_once(". ").map_or(rest, |(d, _)| d);
    let older = older.strip_suffix('.').unwrap_or(older);
    Some(SuggestedReclaim {
        producer: producer.to_owned(),
        older_than_secs: humantime::parse_duration(older).ok()?.as_secs(),
    })
}

impl AlertDto {
    /// An alert (row id 0) with its window text ([`for_app`]) and suggested reclaim
    /// ([`suggestion_in`]) read from `message`: every alert is made here, so they always agree.
    pub fn new(
        time_unix_secs: u64,
        rule: crate::dto::AlertRule,
        producer: Option<String>,
        title: impl Into<String>,
        message: impl Into<String>,
    ) -> AlertDto {
        let message = message.into();
        AlertDto {
            id: 0,
            time_unix_secs,
            rule,
            producer,
            title: title.into(),
            app_message: for_app(&message),
            suggested_reclaim: suggestion_in(&message),
            message,
        }
    }
}

/// `message` as the app shows it: without the sentences that tell a terminal user which
/// `cachewatch` command to run (the app offers the action as a button instead). Each such
/// sentence starts at " Reclaim: cachewatch " or " See `cachewatch " and ends at its full stop.
pub fn for_app(message: &str) -> String {
    let mut out = message.to_owned();
    for start in [" Reclaim: cachewatch ", " See `cachewatch "] {
        while let Some(i) = out.find(start) {
            let end = out[i + 1..]
                .find(". ")
                .map_or(out.len(), |j| i + 1 + j + 1)
                .min(out.len());
            out.replace_range(i..end, "");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Notifications told a GUI user to run `cachewatch reclaim …`.
    #[test]
    fn the_app_text_has_no_command_to_run() {
        let m = "Metal gpuarchiver grew 105.0 MiB and 40 items in 3m (2.0 GiB/h); now 1.1 GiB in \
                 400 items. Reclaim: cachewatch reclaim --producer metal-gpuarchiver --older-than 1h. \
                 Upstream: https://example.org/1";
        assert_eq!(
            for_app(m),
            "Metal gpuarchiver grew 105.0 MiB and 40 items in 3m (2.0 GiB/h); now 1.1 GiB in 400 \
             items. Upstream: https://example.org/1"
        );
        let t =
            "The watched dirs hold 9.0 GiB, above the limit of 8.0 GiB. See `cachewatch status` \
                 for the largest producers and `cachewatch reclaim` to free space.";
        assert_eq!(
            for_app(t),
            "The watched dirs hold 9.0 GiB, above the limit of 8.0 GiB."
        );
        assert_eq!(for_app("Free space is low."), "Free space is low.");
    }

    /// The window's button and the notification's action read the suggestion as fields; an
    /// alert read back from the database (text only) carries the same.
    #[test]
    fn the_suggested_reclaim_reads_back_from_the_message() {
        let s = SuggestedReclaim {
            producer: "metal-gpuarchiver".into(),
            older_than_secs: 2 * 86_400,
        };
        let m = format!(
            "X grew 1.0 GiB.{} Upstream: https://example.org/1",
            reclaim_sentence(&s)
        );
        assert!(
            m.contains(
                "Reclaim: cachewatch reclaim --producer metal-gpuarchiver --older-than 2d. "
            ),
            "{m}"
        );
        assert_eq!(suggestion_in(&m), Some(s.clone()));
        let end = format!("X grew 1.0 GiB.{}", reclaim_sentence(&s));
        assert_eq!(suggestion_in(&end), Some(s));
        assert_eq!(suggestion_in("Free space is low."), None);
        let a = AlertDto::new(
            5,
            crate::dto::AlertRule::ProducerGrowth,
            Some("p".into()),
            "t",
            m.clone(),
        );
        assert_eq!(a.app_message, for_app(&m));
        assert_eq!(
            a.suggested_reclaim.map(|s| s.older_than_secs),
            Some(172_800)
        );
        // Alerts of earlier versions, read back from the database, said `2days`.
        let old = "X grew. Reclaim: cachewatch reclaim --producer p --older-than 2days.";
        assert_eq!(suggestion_in(old).map(|s| s.older_than_secs), Some(172_800));
        let h = SuggestedReclaim {
            producer: "p".into(),
            older_than_secs: 36 * 3600,
        };
        assert!(reclaim_sentence(&h).ends_with("--older-than 36h."));
        assert_eq!(suggestion_in(&reclaim_sentence(&h)), Some(h));
        assert_eq!(suggested_older_than_secs(0), 3600);
        assert_eq!(suggested_older_than_secs(3601), 7200);
    }
}
