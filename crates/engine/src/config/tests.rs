use super::*;

/// Regression (issue 8): `--config` at a FIFO hung waiting for a writer; it is refused.
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

/// Regression (issue 8): `--config /dev/zero` read ~1 GiB and died out of memory.
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
