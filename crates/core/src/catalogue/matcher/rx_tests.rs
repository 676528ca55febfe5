use super::*;

fn run(rx: &Rx, text: &str) -> Option<Captures> {
    let mut out = Captures::default();
    rx.apply(&mut out, text.as_bytes()).map(|()| out)
}

/// The Unicode regex alone, as the matcher ran before the ASCII twin.
fn unicode_only(rx: &Rx, text: &str) -> Option<Captures> {
    let plain = Rx {
        ascii: None,
        plan: None,
        dfa: None,
        ..rx.clone()
    };
    run(&plain, text)
}

#[test]
fn the_ascii_twin_captures_what_the_unicode_regex_does() {
    let cases: &[(&str, &[&str])] = &[
        (
            r"^(?:(?P<bundle>[^/]+)/)?com\.apple\.gpuarchiver/gpuarchiver-[^/]+$",
            &[
                "com.apple.gpuarchiver/gpuarchiver-a1",
                "julia/com.apple.gpuarchiver/gpuarchiver-x",
                "a/b/com.apple.gpuarchiver/gpuarchiver-1",
                "com.apple.gpuarchiver/other",
                "café/com.apple.gpuarchiver/gpuarchiver-1",
            ],
        ),
        (
            r"(?i)^(?P<bundle>\w+)\.(?P<pid>\d+)\.(?P<ts>\d{10,13})\.tmp$",
            &[
                "Kelvin.12.1718000000.TMP",
                "x.1.1540372541734.tmp",
                "é.1.1718000000.tmp",
            ],
        ),
        (r"^\S+\s\W.$", &["a b !x", "a\tb", "ab"]),
        (r"^[^a](?P<pid>\d+)?$", &["b12", "a12", "b", "ä12"]),
    ];
    for (pattern, texts) in cases {
        let rx = Rx::new(Regex::new(pattern).unwrap());
        assert!(rx.ascii.is_some(), "{pattern}");
        for text in *texts {
            assert_eq!(
                run(&rx, text),
                unicode_only(&rx, text),
                "{pattern} on {text}"
            );
        }
    }
    let gpu = Rx::new(Regex::new(cases[0].0).unwrap());
    let got = run(&gpu, "julia/com.apple.gpuarchiver/gpuarchiver-x").unwrap();
    assert_eq!(got.bundle.as_deref(), Some("julia"));
    let got = run(&gpu, "café/com.apple.gpuarchiver/gpuarchiver-x").unwrap();
    assert_eq!(got.bundle.as_deref(), Some("café"));
    assert_eq!(
        run(&gpu, "com.apple.gpuarchiver/gpuarchiver-x")
            .unwrap()
            .bundle,
        None
    );
}

/// Paths as the scan asks them: `<prefix><name>`, each dir's names in a row, so the prefix is
/// settled from its second name on.
#[test]
fn settled_prefixes_capture_what_a_capture_search_does() {
    let patterns = [
        r"^(?:(?P<bundle>[^/]+)/)?com\.apple\.gpuarchiver/gpuarchiver-[^/]+$",
        // The name steers which alternative (and so which captures) matches.
        r"^(?:(?P<bundle>[^/]+)/b|[^/]+/c)$",
        r"^(?:(?P<bundle>a)/|a/)b.*$",
        // Unanchored: a match may start in the name.
        r"(?P<bundle>[a-z]+)/x",
        r"(?P<ts>\d+)$",
        // A match ending inside the prefix.
        r"^(?P<bundle>[^/]+)/",
        r"^(?P<bundle>[^/]+)/(?P<pid>\d+)?[^/]*$",
        r"^a/(?:(?P<bundle>x)|y)*/?z",
        r"^(?P<bundle>\w+)\b/.*$",
        r"^(?P<pid>\d+)/(?P<ts>\d+)/(?P<bundle>[^/]+)$",
        r"^[^/]+/(?P<bundle>[^/]*)$",
    ];
    let prefixes = [
        "a/",
        "a/b/",
        "x/",
        "12/",
        "12/345/",
        "a/x/y/",
        "julia/com.apple.gpuarchiver/",
        "com.apple.gpuarchiver/",
        "a/b/com.apple.gpuarchiver/",
    ];
    let names = [
        "b",
        "c",
        "z",
        "x",
        "12",
        "gpuarchiver-1",
        "zz9",
        "abc",
        "b1",
        "x-9",
    ];
    for pattern in patterns {
        let rx = Rx::new(Regex::new(pattern).unwrap());
        assert!(rx.plan.is_some(), "{pattern}");
        for prefix in prefixes {
            for round in 0..2 {
                for name in names {
                    let text = format!("{prefix}{name}");
                    let mut got = Captures::default();
                    let got = rx.apply_path(&mut got, text.as_bytes()).map(|()| got);
                    let want = unicode_only(&rx, &text);
                    assert_eq!(got, want, "{pattern} on {text} (round {round})");
                }
            }
        }
    }
}

proptest::proptest! {
    /// Random dirs and names over a small alphabet, so that names do steer the tricky patterns.
    #[test]
    fn settled_prefixes_agree_on_random_paths(
        parts in proptest::collection::vec("[abx1]{1,3}", 1..4),
        names in proptest::collection::vec("[abxz1c]{1,3}", 1..6),
    ) {
        let patterns = [
            r"^(?:(?P<bundle>[^/]+)/b|[^/]+/c)$",
            r"^(?:(?P<bundle>a)/|a/)b.*$",
            r"(?P<bundle>[a-z]+)/x",
            r"^(?P<bundle>[^/]+)/(?P<pid>\d+)?[^/]*$",
            r"^a/(?:(?P<bundle>x)|b)*/?z",
            r"^(?:(?P<bundle>[ab]+)/)?(?:x/)*(?P<pid>1)?[abcxz1]+$",
            r"(?P<bundle>b+)(?:/a)?/(?P<ts>1)?c?$",
        ];
        let prefix = format!("{}/", parts.join("/"));
        for pattern in patterns {
            let rx = Rx::new(Regex::new(pattern).unwrap());
            for name in names.iter().chain(names.iter()) {
                let text = format!("{prefix}{name}");
                let mut got = Captures::default();
                let got = rx.apply_path(&mut got, text.as_bytes()).map(|()| got);
                proptest::prop_assert_eq!(got, unicode_only(&rx, &text), "{} on {}", pattern, text);
            }
        }
    }
}

#[test]
fn the_gpuarchiver_prefixes_settle_their_bundle() {
    let rx = Rx::new(
        Regex::new(r"^(?:(?P<bundle>[^/]+)/)?com\.apple\.gpuarchiver/gpuarchiver-[^/]+$").unwrap(),
    );
    let plan = rx.plan.as_ref().unwrap();
    assert_eq!(
        plan.settle(b"com.apple.gpuarchiver/"),
        Settled::Fixed(vec![None, None])
    );
    assert_eq!(
        plan.settle(b"julia/com.apple.gpuarchiver/"),
        Settled::Fixed(vec![Some(0), Some(5)])
    );
    assert_eq!(plan.settle(b"a/b/com.apple.gpuarchiver/"), Settled::Never);
    assert_eq!(plan.settle(b"julia/other/"), Settled::Never);
}

#[test]
fn a_pattern_without_an_ascii_form_uses_the_unicode_regex() {
    let rx = Rx::new(Regex::new(r"^\p{Greek}+-(?P<pid>\d+)$").unwrap());
    assert!(rx.ascii.is_none());
    assert_eq!(run(&rx, "αβ-12").unwrap().pid, Some(12));
    assert!(run(&rx, "ab-12").is_none());
}

#[test]
fn capture_locations_are_not_mixed_up_between_regexes() {
    let a = Rx::new(Regex::new(r"^(?P<pid>\d+)-(?P<bundle>\w+)$").unwrap());
    let b = Rx::new(Regex::new(r"^(?P<bundle>\w+)$").unwrap());
    for _ in 0..3 {
        let x = run(&a, "12-app").unwrap();
        assert_eq!((x.pid, x.bundle.as_deref()), (Some(12), Some("app")));
        let y = run(&b, "other").unwrap();
        assert_eq!((y.pid, y.bundle.as_deref()), (None, Some("other")));
    }
}
