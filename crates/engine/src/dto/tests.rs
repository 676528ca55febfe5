use super::*;

/// The word serde writes for `v`.
fn word<T: Serialize>(v: T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        other => panic!("not a string: {other:?}"),
    }
}

#[test]
fn enum_words_are_the_strings_the_json_held() {
    for r in AlertRule::ALL {
        assert_eq!(word(r), r.as_str());
        assert_eq!(AlertRule::parse(&word(r)), Some(r));
    }
    let rules: Vec<String> = AlertRule::ALL.into_iter().map(word).collect();
    for w in [
        "producer-growth",
        "total-limit",
        "free-disk",
        "disk-full-eta",
        "crash-loop",
        "unexplained-growth",
        "unknown-producer-growth",
        "root-gone",
        "process-leak",
        "monitor-stopped",
        "history-unavailable",
        "auto-reclaim",
    ] {
        assert!(rules.iter().any(|r| r == w), "{w}");
    }
    let triggers = [
        (Trigger::Interval, "interval"),
        (Trigger::Items, "items"),
        (Trigger::Bytes, "bytes"),
        (Trigger::FreeSpace, "free-space"),
        (Trigger::Manual, "manual"),
    ];
    for (t, w) in triggers {
        assert_eq!((word(t), t.as_str()), (w.to_owned(), w));
    }
    let statuses = [
        (RunStatus::Done, "done"),
        (RunStatus::Paused, "paused"),
        (RunStatus::Failed, "failed"),
    ];
    for (s, w) in statuses {
        assert_eq!((word(s), s.as_str()), (w.to_owned(), w));
    }
}

#[test]
fn path_bytes_only_for_a_path_that_is_not_utf8() {
    use std::ffi::OsStr;
    assert_eq!(path_bytes(Path::new("/tmp/caf\u{e9}")), None);
    // "/t/\xff" in standard base64, as `printf '/t/\xff' | base64` writes it.
    let odd = Path::new(OsStr::from_bytes(b"/t/\xff"));
    assert_eq!(path_bytes(odd).as_deref(), Some("L3Qv/w=="));
}
