//! The reclaim confirmation names the native command to prefer: a plan's preview carries, for each
//! planned producer whose tool manages its cache, the rule's `managed_by`.

#![allow(clippy::unwrap_used)]

use std::fs::{File, FileTimes};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use cachewatch::dto::MonitorState;
use cachewatch::monitor::{self, MonitorOptions};
use cachewatch_core::{Catalogue, Root, RootKind};

const DAY: Duration = Duration::from_secs(86_400);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_preview_names_the_tool_command_of_a_managed_producer() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    // Three Go build cache entries (a managed cache: `go clean -cache`), used 3 days ago.
    let old = SystemTime::now() - 3 * DAY;
    for (sub, c) in [("ab", 'a'), ("cd", 'c'), ("ef", 'e')] {
        let d = root.join("go-build").join(sub);
        std::fs::create_dir_all(&d).unwrap();
        let f = d.join(format!("{sub}{}-d", c.to_string().repeat(62)));
        std::fs::write(&f, vec![1u8; 9000]).unwrap();
        File::options()
            .write(true)
            .open(&f)
            .unwrap()
            .set_times(FileTimes::new().set_accessed(old).set_modified(old))
            .unwrap();
    }
    let data = tempfile::tempdir().unwrap();
    let mut opts = MonitorOptions::new(
        vec![Root::new(RootKind::Cache, &root).unwrap()],
        Arc::new(Catalogue::builtin()),
    );
    opts.db_path = Some(data.path().join("cachewatch.db"));
    let m = monitor::spawn(opts).unwrap();
    m.subscribe()
        .wait_for(|s| s.state != MonitorState::Scanning)
        .await
        .unwrap();
    m.flush().await.unwrap();

    let plan = m
        .plan_reclaim(vec!["go-build-cache-xdg".into()], DAY)
        .await
        .unwrap();
    assert_eq!(plan.planned_items, 3, "{plan:#?}");
    let p: Vec<(&str, u64, Option<&str>)> = plan
        .producers
        .iter()
        .map(|p| (p.producer.as_str(), p.items, p.managed_by.as_deref()))
        .collect();
    assert_eq!(p, [("go-build-cache-xdg", 3, Some("go clean -cache"))]);
    // The estimate the window shows before the plan says the same.
    let est = m
        .estimate_reclaim(vec!["go-build-cache-xdg".into()], DAY)
        .await
        .unwrap();
    let e: Vec<(&str, u64, Option<&str>)> = est
        .producers
        .iter()
        .map(|p| (p.producer.as_str(), p.items, p.managed_by.as_deref()))
        .collect();
    assert_eq!(e, [("go-build-cache-xdg", 3, Some("go clean -cache"))]);
    m.shutdown().await;
}
