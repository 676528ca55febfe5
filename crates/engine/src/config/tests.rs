use super::*;

/// Regression: `--config` at a FIFO hung waiting for a writer; it is refused.
#[test]
fn config_at_a_fifo_is_refused_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("config.toml");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let (tx, rx) = std::sync::mpsc::channel();
    let p = fifo.clone();
    std::thread::spawn(move || tx.send(load(&p).map(|_| ())).ok());
    // A bound against hanging forever, not a timing assertion.
    let got = rx
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("load blocked on a FIFO");
    match got {
        Err(e @ ConfigError::NotAFile { .. }) => {
            let text = e.to_string();
            assert!(text.contains("is a FIFO, not a regular file"), "{text}");
            assert!(text.contains("config.toml"), "{text}");
        }
        other => panic!("expected NotAFile, got {other:?}"),
    }
}

/// Regression: `--config /dev/zero` read ~1 GiB and died out of memory.
#[test]
fn config_at_dev_zero_is_refused_and_big_files_are_capped() {
    match load(Path::new("/dev/zero")) {
        Err(ConfigError::NotAFile { file_type, .. }) => {
            assert_eq!(file_type, "character device");
        }
        other => panic!("expected NotAFile, got {other:?}"),
    }
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.toml");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(MAX_CONFIG_BYTES + 1)
        .unwrap();
    assert!(
        matches!(load(&big), Err(ConfigError::TooLarge { max_bytes, .. }) if max_bytes == 1_048_576)
    );
}

#[test]
fn missing_file_gives_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = load(&dir.path().join("none.toml")).unwrap();
    assert_eq!(loaded.config, Config::default());
    assert_eq!(
        loaded.config.reclaim.older_than,
        Duration::from_secs(259_200)
    );
    assert_eq!(loaded.config.watch.debounce_ms, 500);
}

#[test]
fn full_file_parses() {
    let text = r#"
roots = [{ kind = "temp", path = "/tmp" }, { kind = "cache", path = "/var/cache" }]

[reclaim]
older_than = "90m"

[watch]
debounce_ms = 250

[[producer]]
id = "x"
"#;
    let c = parse(text, Path::new("c.toml")).unwrap();
    assert_eq!(c.roots.len(), 2);
    assert_eq!(c.roots[1].kind, RootKind::Cache);
    assert_eq!(c.reclaim.older_than, Duration::from_secs(5400));
    assert_eq!(c.watch.debounce_ms, 250);
    assert_eq!(c.producers.len(), 1);
}

#[test]
fn unknown_key_names_its_line() {
    // Line 1 is empty, line 2 the table header, line 3 the bad key.
    let text = "\n[watch]\ndebounce_msec = 3\n";
    match parse(text, Path::new("/x/c.toml")) {
        Err(ConfigError::Invalid {
            path,
            line,
            message,
        }) => {
            assert_eq!(path, Path::new("/x/c.toml"));
            assert_eq!(line, 3);
            assert!(message.contains("debounce_msec"), "{message}");
        }
        other => panic!("expected Invalid, got {other:?}"),
    }
}

#[test]
fn bad_duration_names_its_line() {
    let text = "[reclaim]\n\nolder_than = \"three days\"\n";
    match parse(text, Path::new("c.toml")) {
        Err(ConfigError::Invalid { line, message, .. }) => {
            assert_eq!(line, 3);
            assert!(message.contains("three days"), "{message}");
        }
        other => panic!("expected Invalid, got {other:?}"),
    }
}

#[test]
fn alert_sizes_read_as_bytes_or_as_text_in_binary_units() {
    let text = "[alerts]\ntotal_limit_bytes = \"20 GiB\"\nfree_disk_min_bytes = 1024\nproducer_growth_bytes = \"512 MiB\"\n";
    let c = parse(text, Path::new("c.toml")).unwrap();
    assert_eq!(c.alerts.total_limit_bytes, Some(20 << 30));
    assert_eq!(c.alerts.free_disk_min_bytes, 1024);
    assert_eq!(c.alerts.producer_growth_bytes, 512 << 20);
    match parse(
        "[alerts]\n\nfree_disk_min_bytes = \"10 GB\"\n",
        Path::new("c.toml"),
    ) {
        Err(ConfigError::Invalid { line, message, .. }) => {
            assert_eq!(line, 3);
            assert!(message.contains("bad size \"10 GB\""), "{message}");
        }
        other => panic!("expected Invalid, got {other:?}"),
    }
}

/// `unexplained_growth_min_bytes = "1 GiB"` was refused ("invalid type: string, expected u64")
/// while every other `[alerts]` size took text; the `[[auto_reclaim]]` byte triggers too.
#[test]
fn every_size_key_reads_text() {
    let text = "[alerts]\nunexplained_growth_min_bytes = \"1.5 GiB\"\n\n\
        [[auto_reclaim]]\nproducers = [\"metal-gpuarchiver\"]\nolder_than = \"1h\"\n\
        when_bytes_over = \"512 MiB\"\nwhen_free_below = 21474836480\n";
    let c = parse(text, Path::new("c.toml")).unwrap();
    assert_eq!(c.alerts.unexplained_growth_min_bytes, 3 << 29);
    assert_eq!(c.auto_reclaim[0].when_bytes_over, Some(512 << 20));
    assert_eq!(c.auto_reclaim[0].when_free_below, Some(20 << 30));
    match parse(
        "[[auto_reclaim]]\nproducers = [\"metal-gpuarchiver\"]\nolder_than = \"1h\"\nwhen_free_below = \"20 GB\"\n",
        Path::new("c.toml"),
    ) {
        Err(ConfigError::Invalid { line, message, .. }) => {
            assert_eq!(line, 4);
            assert!(message.contains("bad size \"20 GB\""), "{message}");
        }
        other => panic!("expected Invalid, got {other:?}"),
    }
}

/// A relative root path in the config resolved against the current dir: `cd / && cachewatch
/// --config /x/rel.toml scan` failed ("root cache \"c\" cannot be used"), so cron and launchd jobs
/// (whose current dir is `/`) broke. It is relative to the config file's dir.
#[test]
fn relative_root_paths_are_relative_to_the_config_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("c")).unwrap();
    let path = dir.path().join("rel.toml");
    std::fs::write(&path, "roots = [{ kind = \"cache\", path = \"c\" }]\n").unwrap();
    let loaded = load(&path).unwrap();
    let roots = loaded.roots().unwrap();
    assert_eq!(roots.len(), 1);
    assert_eq!(roots[0].path, dir.path().join("c"));
    let home = directories::BaseDirs::new()
        .unwrap()
        .home_dir()
        .to_path_buf();
    assert_eq!(loaded.config_relative(Path::new("~/x")), home.join("x"));
    assert_eq!(loaded.config_relative(Path::new("/abs")), Path::new("/abs"));
}

/// Regression: `every = "18446744073709551615s"` passed the check and panicked the
/// monitor task adding it to an instant; `every = "1ms"` was accepted though `0s` said "at least
/// 1s" (80 runs in 20 s). Every duration and count is bounded, and the error says the range.
#[test]
fn out_of_range_durations_and_counts_are_refused_naming_key_range_and_line() {
    let rule = |every: &str| {
        format!("roots = []\n\n[[auto_reclaim]]\nproducers = [\"metal-gpuarchiver\"]\nolder_than = \"1h\"\nevery = \"{every}\"\n")
    };
    for every in ["18446744073709551615s", "1ms", "0s", "999ms", "366d"] {
        match parse(&rule(every), Path::new("/etc/c.toml")) {
            Err(ConfigError::Invalid { line, message, .. }) => {
                assert_eq!(line, 6, "{every}: {message}");
                assert!(
                    message.contains(&format!("every = \"{every}\" is out of range"))
                        && message.contains("between 1s and 365d"),
                    "{every}: {message}"
                );
            }
            other => panic!("{every}: expected Invalid, got {other:?}"),
        }
    }
    for every in ["1s", "365d", "10m"] {
        parse(&rule(every), Path::new("/etc/c.toml")).unwrap();
    }
    // (text, line, what the message says): one per bounded key, just past its bound.
    let cases = [
        ("[reclaim]\nolder_than = \"3651d\"\n", 2, "older_than = \"3651d\" is out of range: write a duration between 0s and 3650d"),
        ("[watch]\ndebounce_ms = 600001\n", 2, "debounce_ms = 600001 is out of range: write a number between 0 and 600000"),
        ("[monitor]\nsample_interval_secs = 0\n", 2, "sample_interval_secs = 0 is out of range: write a number between 1 and 604800"),
        ("[monitor]\nsample_interval_secs = 18446744073709551615\n", 2, "between 1 and 604800"),
        ("[alerts]\ncooldown = \"366d\"\n", 2, "cooldown = \"366d\" is out of range: write a duration between 0s and 365d"),
        ("[alerts]\nproducer_growth_window = \"1s\"\n", 2, "between 1m and 30d"),
        ("[alerts]\nunexplained_growth_window = \"31d\"\n", 2, "between 1m and 30d"),
        ("[alerts]\ndisk_full_eta_min_hours = 8761\n", 2, "between 0 and 8760"),
        ("[alerts]\nproducer_growth_items = 1000000001\n", 2, "between 0 and 1000000000"),
        ("[alerts]\nunexplained_growth_min_ratio = 1001\n", 2, "between 0 and 1000"),
        ("[alerts.crash_loop]\ncrash_loop_reports = 10001\n", 2, "between 0 and 10000"),
        ("[alerts.crash_loop]\ncrash_loop_window = \"0s\"\n", 2, "between 1s and 30d"),
        ("[alerts.crash_loop]\ncrash_loop_cooldown = \"400d\"\n", 2, "between 0s and 365d"),
        ("[[process_watch]]\nname = \"x\"\nsample_interval_secs = 0\n", 3, "between 1 and 86400"),
        ("[[process_watch]]\nname = \"x\"\nwindow_secs = 604801\n", 3, "between 1 and 604800"),
        ("[[process_watch]]\nname = \"x\"\nmin_thread_rise = 0\n", 3, "between 1 and 1000000"),
        ("[[auto_reclaim]]\nproducers = [\"metal-gpuarchiver\"]\nolder_than = \"18446744073709551615s\"\nevery = \"1h\"\n", 3, "between 0s and 3650d"),
    ];
    for (text, want_line, what) in cases {
        match parse(text, Path::new("/etc/c.toml")) {
            Err(ConfigError::Invalid { line, message, .. }) => {
                assert_eq!(line, want_line, "{text}: {message}");
                assert!(message.contains(what), "{text}: {message}");
            }
            other => panic!("{text}: expected Invalid, got {other:?}"),
        }
    }
    // The bounds themselves are accepted, and the defaults are within them.
    let edges = "[reclaim]\nolder_than = \"0s\"\n[watch]\ndebounce_ms = 600000\n[monitor]\nsample_interval_secs = 604800\n[alerts]\ncooldown = \"365d\"\nproducer_growth_window = \"1m\"\n";
    parse(edges, Path::new("/etc/c.toml")).unwrap();
    let defaults = toml::to_string(&Config::default()).unwrap();
    assert_eq!(
        parse(&defaults, Path::new("/d.toml")).unwrap(),
        Config::default()
    );
}

/// Regression: a non-UTF-8 config was reported with a byte offset; it names the line and column.
#[test]
fn a_non_utf8_config_names_the_line_and_column_of_the_bad_byte() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    // Hand count: the 0xff is on line 3, after `nämé = "` (8 characters).
    std::fs::write(
        &path,
        b"[reclaim]\nolder_than = \"3d\"\nn\xc3\xa4m\xc3\xa9 = \"\xff\"\n",
    )
    .unwrap();
    match load(&path) {
        Err(
            e @ ConfigError::NotUtf8 {
                line: 3,
                column: 9,
                byte: 0xff,
                ..
            },
        ) => {
            let text = e.to_string();
            assert!(text.contains("line 3, column 9"), "{text}");
            assert!(text.contains("0xff"), "{text}");
            assert!(text.contains("config.toml"), "{text}");
        }
        other => panic!("expected NotUtf8 at 3:9, got {other:?}"),
    }
}

/// A writer that does not take the lock (an editor) changes the file between the edit's read
/// and its rename: the edit is applied again on the new text, and the editor's line is kept.
#[test]
fn an_edit_is_applied_again_when_the_file_changed_before_the_rename() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, "# first\n").unwrap();
    let mut calls = 0;
    let written = edit_file(&path, |text| -> Result<String, std::convert::Infallible> {
        calls += 1;
        if calls == 1 {
            // The editor saves while our temporary is being made.
            std::fs::write(&path, "# first\n# the editor's line\n").unwrap();
        }
        Ok(format!("{text}# ours\n"))
    })
    .unwrap();
    assert_eq!(calls, 2);
    assert_eq!(written, "# first\n# the editor's line\n# ours\n");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), written);
}

/// A link planted at the lock file's name is refused (nothing created at its target, the config
/// untouched); so is a FIFO.
#[test]
fn a_planted_link_or_fifo_at_the_lock_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, "# mine\n").unwrap();
    let target = dir.path().join("elsewhere");
    std::os::unix::fs::symlink(&target, lock_path(&path)).unwrap();
    let edit = |t: &str| -> Result<String, std::convert::Infallible> { Ok(format!("{t}x = 1\n")) };
    match edit_file(&path, edit) {
        Err(EditError::Config(
            e @ ConfigError::LockFile {
                kind: "symlink", ..
            },
        )) => {
            assert!(e.to_string().contains("config.toml.lock"), "{e}");
        }
        other => panic!("expected a LockFile refusal, got {other:?}"),
    }
    assert!(!target.exists());
    std::fs::remove_file(lock_path(&path)).unwrap();
    let c = std::ffi::CString::new(lock_path(&path).to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    assert!(matches!(
        edit_file(&path, edit),
        Err(EditError::Config(ConfigError::LockFile {
            kind: "FIFO",
            ..
        }))
    ));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "# mine\n");
}
