//! The check of the config file's `[[auto_reclaim]]` rules (as written:
//! [`RuleConfig`](crate::autoreclaim::config::RuleConfig)) against the catalogue: an unknown
//! producer id, one listed twice in a rule, a rule with no producer or no trigger is an error
//! naming the config file and the line.

use super::{ConfigError, LoadedConfig};
use crate::autoreclaim::AutoRule;
use crate::catalogue::Catalogue;
use crate::toml_lines::line_at;

impl LoadedConfig {
    /// The file's `[[auto_reclaim]]` rules, checked against `catalogue`.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] naming this file and the line: an id the catalogue does not know,
    /// a rule with no producer or with no trigger, a producer listed twice in one rule, an empty
    /// name, two rules with one name (an `every` or `older_than` out of range is refused while the
    /// file is read: `crate::bounds`).
    pub fn auto_reclaim(&self, catalogue: &Catalogue) -> Result<Vec<AutoRule>, ConfigError> {
        let invalid = |at: usize, message: String| ConfigError::Invalid {
            path: self.path.clone(),
            line: line_at(&self.text, at),
            message,
        };
        let mut out = Vec::new();
        for r in &self.config.auto_reclaim {
            let at = r.producers.span().start;
            if r.producers.get_ref().is_empty() {
                return Err(invalid(at, "[[auto_reclaim]] lists no producer: name at least one catalogue id (`cachewatch producers` lists them)".into()));
            }
            for (i, id) in r.producers.get_ref().iter().enumerate() {
                // Listed twice is a slip (a copy-paste, a typo for another id): say so.
                if r.producers.get_ref()[..i]
                    .iter()
                    .any(|o| o.get_ref() == id.get_ref())
                {
                    return Err(invalid(
                        id.span().start,
                        format!(
                            "[[auto_reclaim]] lists producer {:?} twice: remove the second (or fix the id you meant)",
                            id.get_ref()
                        ),
                    ));
                }
                match catalogue.rule(id.get_ref()) {
                    None => {
                        return Err(invalid(
                            id.span().start,
                            format!(
                                "unknown producer {:?} in [[auto_reclaim]]: `cachewatch producers` lists the ids",
                                id.get_ref()
                            ),
                        ))
                    }
                    // A rule that can never delete anything is a mistake, not a no-op to run forever.
                    Some(rule) if !rule.reclaimable() => {
                        return Err(invalid(
                            id.span().start,
                            format!(
                                "producer {:?} in [[auto_reclaim]] is never reclaimed (reclaim = \"never\" or kind = \"system\"): remove it from the rule",
                                id.get_ref()
                            ),
                        ));
                    }
                    Some(_) => {}
                }
            }
            let triggers = [
                r.every.is_some(),
                r.when_items_over.is_some(),
                r.when_bytes_over.is_some(),
                r.when_free_below.is_some(),
            ];
            if !triggers.contains(&true) {
                return Err(invalid(at, "[[auto_reclaim]] has no trigger: add every, when_items_over, when_bytes_over or when_free_below".into()));
            }
            let producers: Vec<String> = r
                .producers
                .get_ref()
                .iter()
                .map(|s| s.get_ref().clone())
                .collect();
            let name = r.name.clone().unwrap_or_else(|| producers.join("+"));
            if name.trim().is_empty() {
                return Err(invalid(
                    at,
                    "[[auto_reclaim]] name = \"\": give the rule a name, or leave the key out"
                        .into(),
                ));
            }
            // The name labels the rule's metrics, status line and history rows: two rules with
            // one name would print two `cachewatch_auto_reclaim_runs_total{rule=...}` series
            // with the same labels, which Prometheus refuses.
            if out.iter().any(|o: &AutoRule| o.name == name) {
                return Err(invalid(
                    at,
                    format!(
                        "a second [[auto_reclaim]] rule is named {name:?}{}: give each rule its own name",
                        if r.name.is_none() {
                            " (the name of a rule without one: its producer ids joined with +)"
                        } else {
                            ""
                        }
                    ),
                ));
            }
            out.push(AutoRule {
                name,
                producers,
                older_than: r.older_than,
                every: r.every,
                when_items_over: r.when_items_over,
                when_bytes_over: r.when_bytes_over,
                when_free_below: r.when_free_below,
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::path::Path;
    use std::time::Duration;

    use super::*;
    use crate::config::parse;

    fn loaded(text: &str) -> LoadedConfig {
        LoadedConfig {
            config: parse(text, Path::new("/etc/c.toml")).unwrap(),
            path: "/etc/c.toml".into(),
            text: text.into(),
        }
    }

    #[test]
    fn a_full_rule_parses_and_defaults_are_no_rules() {
        let text = "[[auto_reclaim]]\nproducers = [\"metal-gpuarchiver\"]\nolder_than = \"1h\"\nevery = \"10m\"\nwhen_items_over = 20000\nwhen_bytes_over = 10737418240\nwhen_free_below = 21474836480\n";
        let rules = loaded(text).auto_reclaim(&Catalogue::builtin()).unwrap();
        assert_eq!(
            rules,
            vec![AutoRule {
                name: "metal-gpuarchiver".into(),
                producers: vec!["metal-gpuarchiver".into()],
                older_than: Duration::from_secs(3600),
                every: Some(Duration::from_secs(600)),
                when_items_over: Some(20_000),
                when_bytes_over: Some(10 << 30),
                when_free_below: Some(20 << 30),
            }]
        );
        assert!(loaded("")
            .auto_reclaim(&Catalogue::builtin())
            .unwrap()
            .is_empty());
    }

    /// Two rules named "a" printed `cachewatch_auto_reclaim_runs_total{rule="a"}` twice on
    /// /metrics (a scrape Prometheus refuses); two unnamed rules over the same producers too.
    #[test]
    fn two_rules_with_one_name_are_refused_naming_the_second_ones_line() {
        let rule = |name: &str, older: &str| {
            format!("[[auto_reclaim]]\n{name}producers = [\"metal-gpuarchiver\"]\nolder_than = \"{older}\"\nevery = \"1h\"\n")
        };
        for (text, line, what) in [
            (
                rule("name = \"a\"\n", "1h") + &rule("name = \"a\"\n", "2h"),
                8,
                "named \"a\"",
            ),
            (
                rule("", "1h") + &rule("", "2h"),
                6,
                "named \"metal-gpuarchiver\" (the name of a rule without one",
            ),
            (rule("name = \" \"\n", "1h"), 3, "name = \"\""),
        ] {
            match loaded(&text).auto_reclaim(&Catalogue::builtin()) {
                Err(ConfigError::Invalid {
                    line: l, message, ..
                }) => {
                    assert_eq!(l, line, "{text}");
                    assert!(message.contains(what), "{message}");
                }
                other => panic!("expected Invalid, got {other:?}"),
            }
        }
        let ok = rule("name = \"a\"\n", "1h") + &rule("", "2h");
        assert_eq!(
            loaded(&ok)
                .auto_reclaim(&Catalogue::builtin())
                .unwrap()
                .len(),
            2
        );
    }

    #[test]
    fn an_unknown_id_names_the_file_and_its_line() {
        // Hand count: the unknown id is on line 4.
        let text = "[[auto_reclaim]]\nproducers = [\n  \"metal-gpuarchiver\",\n  \"no-such-thing\",\n]\nolder_than = \"1h\"\nevery = \"1m\"\n";
        let e = loaded(text)
            .auto_reclaim(&Catalogue::builtin())
            .unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, ConfigError::Invalid { line: 4, .. }), "{msg}");
        assert!(
            msg.contains("/etc/c.toml") && msg.contains("no-such-thing"),
            "{msg}"
        );
    }

    /// A rule naming a `never` producer was accepted and "kept 1 never" on every run for ever.
    #[test]
    fn a_never_reclaimed_producer_in_a_rule_is_refused_at_its_line() {
        let never = Catalogue::builtin()
            .rules()
            .iter()
            .find(|r| r.reclaim == crate::catalogue::ReclaimMode::Never)
            .map(|r| r.id.clone())
            .unwrap();
        let text = format!(
            "[[auto_reclaim]]\nproducers = [\"{never}\"]\nolder_than = \"1h\"\nevery = \"1m\"\n"
        );
        let e = loaded(&text)
            .auto_reclaim(&Catalogue::builtin())
            .unwrap_err();
        assert!(matches!(e, ConfigError::Invalid { line: 2, .. }), "{e}");
        assert!(e.to_string().contains("never reclaimed"), "{e}");
    }

    #[test]
    fn a_rule_without_trigger_names_its_line() {
        let text = "roots = []\n\n[[auto_reclaim]]\nproducers = [\"metal-gpuarchiver\"]\nolder_than = \"1h\"\n";
        let e = loaded(text)
            .auto_reclaim(&Catalogue::builtin())
            .unwrap_err();
        assert!(matches!(e, ConfigError::Invalid { line: 4, .. }), "{e}");
        assert!(e.to_string().contains("no trigger"), "{e}");
    }

    /// A rule naming the same producer twice was accepted silently.
    #[test]
    fn a_producer_listed_twice_in_a_rule_is_refused_at_the_second() {
        // Hand count: the second "metal-gpuarchiver" is on line 4.
        let text = "[[auto_reclaim]]\nproducers = [\n  \"metal-gpuarchiver\",\n  \"metal-gpuarchiver\",\n]\nolder_than = \"1h\"\nevery = \"1m\"\n";
        let e = loaded(text)
            .auto_reclaim(&Catalogue::builtin())
            .unwrap_err();
        assert!(matches!(e, ConfigError::Invalid { line: 4, .. }), "{e}");
        assert!(
            e.to_string()
                .contains("lists producer \"metal-gpuarchiver\" twice"),
            "{e}"
        );
    }
}
