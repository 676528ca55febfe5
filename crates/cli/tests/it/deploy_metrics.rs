//! deploy/: the Prometheus rules and the Grafana dashboard parse and name only metrics that a real
//! `cachewatch watch --metrics` serves (a renamed metric breaks this test, not a runner's alerts).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::io::BufReader;
use std::process::{Command, Stdio};
use std::time::Duration;

use cachewatch_testkit::scrape::{self, Reaped};

const RULES: &str = include_str!("../../../../deploy/prometheus/cachewatch.rules.yml");
const DASHBOARD: &str = include_str!("../../../../deploy/grafana/cachewatch.json");

/// The page of a running monitor: `watch --metrics 127.0.0.1:0` on a tree with Metal archives and
/// an `[[auto_reclaim]]` rule, once its first scan is in.
fn real_page() -> String {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("cache");
    cachewatch_testkit::tree::make_archives(&root.join("org.example.app"), "a", 3, 1);
    let config = tmp.path().join("config.toml");
    std::fs::write(
        &config,
        "[[auto_reclaim]]\nname = \"ci-metal\"\nproducers = [\"metal-gpuarchiver\"]\nolder_than = \"1h\"\nevery = \"1h\"\n",
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_cachewatch"))
        .arg("--config")
        .arg(&config)
        .arg("--data-dir")
        .arg(tmp.path().join("data"))
        .args(["watch", "--metrics", "127.0.0.1:0", "--root"])
        .arg(format!("cache={}", root.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let _child = Reaped(child);
    let addr = scrape::metrics_addr(stderr).expect("watch printed its metrics address");
    scrape::wait_for(
        &addr,
        "cachewatch_producer_items{producer=\"metal-gpuarchiver\"} 3",
        Duration::from_secs(60),
    )
}

/// The series names a page offers: every family (`# TYPE`), with `_total` for a counter's samples.
fn served_names(page: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in page.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            names.insert(match kind {
                "counter" => format!("{name}_total"),
                _ => name.to_owned(),
            });
        }
    }
    names
}

/// Every `cachewatch_...` word in `text`.
fn used_names(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("cachewatch_") {
        let word: String = rest[i..]
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        rest = &rest[i + word.len()..];
        out.insert(word);
    }
    out
}

/// Every string in a JSON value (keys and values).
fn json_strings(v: &serde_json::Value, out: &mut String) {
    match v {
        serde_json::Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        serde_json::Value::Array(a) => a.iter().for_each(|v| json_strings(v, out)),
        serde_json::Value::Object(o) => o.iter().for_each(|(k, v)| {
            out.push_str(k);
            out.push('\n');
            json_strings(v, out);
        }),
        _ => {}
    }
}

#[test]
fn the_rules_and_the_dashboard_name_only_metrics_a_running_monitor_serves() {
    // The rules: groups of alerts, each with an expression, a summary and a runbook.
    let rules: serde_yaml::Value = serde_yaml::from_str(RULES).unwrap();
    let mut rule_text = String::new();
    let mut alerts = 0;
    for group in rules["groups"].as_sequence().unwrap() {
        for rule in group["rules"].as_sequence().unwrap() {
            let name = rule["alert"].as_str().unwrap();
            for key in ["summary", "description", "runbook"] {
                assert!(rule["annotations"][key].is_string(), "{name}: no {key}");
            }
            rule_text.push_str(rule["expr"].as_str().unwrap());
            rule_text.push('\n');
            alerts += 1;
        }
    }
    assert!(alerts >= 6, "{alerts} alerts");

    // The dashboard: panels with Prometheus queries.
    let dashboard: serde_json::Value = serde_json::from_str(DASHBOARD).unwrap();
    assert_eq!(dashboard["uid"], "cachewatch-fleet");
    let mut dash_text = String::new();
    json_strings(&dashboard, &mut dash_text);

    let served = served_names(&real_page());
    let in_rules = used_names(&rule_text);
    let in_dashboard = used_names(&dash_text);
    for (what, used) in [("rules", &in_rules), ("dashboard", &in_dashboard)] {
        let unknown: Vec<_> = used.difference(&served).collect();
        assert!(
            unknown.is_empty(),
            "the {what} name {unknown:?}; served: {served:?}"
        );
    }
    // Not vacuous: the rules watch free space, growth and auto-reclaim; the dashboard shows every
    // family the monitor serves.
    for name in [
        "cachewatch_volume_free_bytes",
        "cachewatch_producer_allocated_bytes",
        "cachewatch_auto_reclaim_runs_total",
        "cachewatch_reclaimed_bytes_total",
    ] {
        assert!(in_rules.contains(name), "{name} not in the rules");
    }
    let missing: Vec<_> = served.difference(&in_dashboard).collect();
    assert!(
        missing.is_empty(),
        "a served family has no panel: add one for {missing:?} to deploy/grafana/cachewatch.json"
    );
}
