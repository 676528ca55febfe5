//! A missing root, a bad config or a data dir that cannot be made exited the app
//! with one stderr line nobody sees at login. The monitor starts with what can run and the
//! snapshot says what is wrong.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use cachewatch::api::start::lenient_monitor_options;
use cachewatch::api::Locations;
use cachewatch::dto::MonitorState;
use cachewatch::monitor;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_root_and_a_bad_config_are_notices_and_the_other_root_is_watched() {
    let dir = tempfile::tempdir().unwrap();
    let here = dir.path().join("cache");
    std::fs::create_dir(&here).unwrap();
    let gone = dir.path().join("gone");
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[reclaim\nolder_than = ").unwrap();
    let loc = Locations {
        config: Some(config.clone()),
        data_dir: Some(dir.path().join("data")),
    };
    let args = vec![
        format!("temp={}", gone.display()),
        format!("cache={}", here.display()),
    ];
    let start = lenient_monitor_options(&loc, &args);
    assert_eq!(start.config_path.as_deref(), Some(config.as_path()));
    assert_eq!(start.options.roots.len(), 1);
    assert_eq!(start.options.roots[0].path, here);
    assert_eq!(
        start.options.notices.len(),
        2,
        "{:?}",
        start.options.notices
    );
    assert!(
        start.options.notices[0].contains("config.toml"),
        "{:?}",
        start.options.notices
    );
    assert!(
        start.options.notices[0].ends_with("running with the default settings until it is fixed")
    );
    assert!(
        start.options.notices[1].contains("gone"),
        "{:?}",
        start.options.notices
    );
    assert!(start.options.notices[1].ends_with("that root is not watched"));

    let notices = start.options.notices.clone();
    let m = monitor::spawn(start.options).unwrap();
    let s = m
        .subscribe()
        .wait_for(|s| s.state != MonitorState::Scanning)
        .await
        .unwrap()
        .clone();
    assert_eq!(s.roots.len(), 1);
    assert_eq!(&s.errors[..2], &notices[..]);
    m.shutdown().await;
}

#[test]
fn only_missing_roots_leave_none_watched_and_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let loc = Locations {
        config: Some(dir.path().join("absent.toml")),
        data_dir: Some(dir.path().join("data")),
    };
    let start =
        lenient_monitor_options(&loc, &[format!("temp={}", dir.path().join("x").display())]);
    assert!(start.options.roots.is_empty());
    assert_eq!(
        start.options.notices.len(),
        1,
        "{:?}",
        start.options.notices
    );
    assert!(start.options.db_path.is_some());
}
