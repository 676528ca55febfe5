use super::*;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

#[test]
fn a_built_in_rules_id_is_refused_and_nothing_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, "# mine\n").unwrap();
    let names: Vec<String> = (0..20).map(|i| format!("swc-{i:08}")).collect();
    let mut g = shapes::Grouper::new(3);
    for n in &names {
        std::fs::create_dir(dir.path().join(n)).unwrap();
        g.add(OsStr::new(n), true, &Default::default());
    }
    let group = g.finish().groups.remove(0);
    let src = GroupSource {
        root_kind: RootKind::Temp,
        root: dir.path(),
        group: &group,
        writer: None,
        evidence: &[],
        others: &[],
    };
    let builtin = Catalogue::builtin().rules()[0].id.clone();
    let rule = src
        .rule(&src.options(builtin.clone(), None, ReclaimMode::Manual))
        .unwrap();
    let e = add_rule(&path, &src, &rule).unwrap_err();
    assert!(
        matches!(e, ApiError::RuleIdTaken { ref id } if *id == builtin),
        "{e}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "# mine\n");
}

#[test]
fn labels_tell_a_byte_from_its_escape() {
    let byte = shapes::shape_of(OsStr::from_bytes(b"a\xffb"), false);
    let text = shapes::shape_of(OsStr::from_bytes(b"a\\xffb"), false);
    assert_eq!(byte.label(), "a\\xffb");
    assert_eq!(text.label(), "a\\\\xffb");
    assert_ne!(byte.label(), text.label());
    let dir = shapes::shape_of(OsStr::new("tmpAb3xYz12"), true);
    assert_eq!(dir.label(), dir.to_string());
    // A literal `<ts>` in a name is no placeholder.
    let lit = shapes::shape_of(OsStr::new("a-<ts>-x"), false);
    let ts = shapes::shape_of(OsStr::new("a-1700000000-x"), false);
    assert_eq!(
        (lit.label().as_str(), ts.label().as_str()),
        ("a-\\<ts>-x", "a-<ts>-x")
    );
}

#[test]
fn ignoring_keeps_comments_and_unignoring_restores_the_list() {
    let text = "# mine\n[reclaim]\nolder_than = \"3d\" # keep\n";
    let once = edit_ignored(text, "tmp<rand8>/", true).unwrap();
    assert!(once.starts_with(text), "{once}");
    let twice = edit_ignored(&once, "tmp<rand8>/", true).unwrap();
    assert_eq!(once, twice);
    let cfg = config::parse(&twice, Path::new("c.toml")).unwrap();
    assert_eq!(cfg.groups.ignore, vec!["tmp<rand8>/".to_owned()]);
    let back = edit_ignored(&twice, "tmp<rand8>/", false).unwrap();
    let cfg = config::parse(&back, Path::new("c.toml")).unwrap();
    assert!(cfg.groups.ignore.is_empty());
    assert!(back.starts_with(text), "{back}");
}
