//! The IPC commands against the mock runtime, with a real monitor on a tree built in a temp dir.
//! Byte counts are checked against `du`; reclaim is checked on disk.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use cachewatch::catalogue::Catalogue;
use cachewatch::monitor::{self, MonitorHandle, MonitorOptions};
use cachewatch::roots::{Root, RootKind};
use cachewatch_app::commands::SettingsState;
use serde_json::{json, Value};
use tauri::ipc::{CallbackFn, InvokeBody};
use tauri::test::{
    get_ipc_response, mock_builder, mock_context, noop_assets, MockRuntime, INVOKE_KEY,
};
use tauri::webview::InvokeRequest;
use tauri::{App, WebviewWindow, WebviewWindowBuilder};

const PRODUCER: &str = "metal-gpuarchiver";
const DAY_SECS: u64 = 86_400;

/// A cache root with `old` gpuarchiver dirs last modified two days ago and `young` fresh ones;
/// dir `i` holds `i % 3 + 1` files of `1000 * (i + 1)` bytes. Returns the old and young dirs.
fn build_tree(root: &Path, old: usize, young: usize) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let parent = root.join("com.apple.gpuarchiver");
    std::fs::create_dir(&parent).unwrap();
    let two_days_ago = SystemTime::now() - Duration::from_secs(2 * DAY_SECS);
    let (mut olds, mut youngs) = (Vec::new(), Vec::new());
    for i in 0..old + young {
        let dir = parent.join(format!("gpuarchiver-{i:04}"));
        std::fs::create_dir(&dir).unwrap();
        for f in 0..(i % 3 + 1) {
            std::fs::write(dir.join(format!("f{f}")), vec![b'x'; 1000 * (i + 1)]).unwrap();
        }
        if i < old {
            for f in 0..(i % 3 + 1) {
                set_mtime(&dir.join(format!("f{f}")), two_days_ago);
            }
            set_mtime(&dir, two_days_ago);
            olds.push(dir);
        } else {
            youngs.push(dir);
        }
    }
    (olds, youngs)
}

fn set_mtime(p: &Path, t: SystemTime) {
    std::fs::File::open(p).unwrap().set_modified(t).unwrap();
}

/// `du -s -B1` (allocated) or `du -s -b` (apparent) of `paths`, summed by `du -c`.
fn du(paths: &[PathBuf], apparent: bool) -> u64 {
    if apparent {
        cachewatch_testkit::du::apparent(paths)
    } else {
        cachewatch_testkit::du::allocated(paths)
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    data: PathBuf,
    monitor: MonitorHandle,
    _app: App<MockRuntime>,
    webview: WebviewWindow<MockRuntime>,
}

fn fixture(old: usize, young: usize) -> (Fixture, Vec<PathBuf>, Vec<PathBuf>) {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap().join("cache");
    std::fs::create_dir(&root).unwrap();
    let data = std::fs::canonicalize(dir.path()).unwrap().join("data");
    std::fs::create_dir(&data).unwrap();
    let (olds, youngs) = build_tree(&root, old, young);
    let catalogue = Arc::new(Catalogue::builtin());
    let mut opts = MonitorOptions::new(
        vec![Root::new(RootKind::Cache, &root).unwrap()],
        catalogue.clone(),
    );
    opts.db_path = Some(data.join("cachewatch.db"));
    opts.threshold = Duration::from_secs(DAY_SECS);
    let monitor = tauri::async_runtime::block_on(async { monitor::spawn(opts) }).unwrap();
    wait_until_watching(&monitor);
    let app = cachewatch_app::with_commands(mock_builder())
        .manage(monitor.clone())
        .manage(catalogue)
        .manage(SettingsState {
            config_path: Some(data.join("config.toml")),
        })
        .build(mock_context(noop_assets()))
        .unwrap();
    let webview = WebviewWindowBuilder::new(&app, "main", Default::default())
        .build()
        .unwrap();
    let f = Fixture {
        _dir: dir,
        root,
        data,
        monitor,
        _app: app,
        webview,
    };
    (f, olds, youngs)
}

/// Waits (bounded) for the first scan to finish, then for pending events.
fn wait_until_watching(m: &MonitorHandle) {
    tauri::async_runtime::block_on(async {
        let mut rx = m.subscribe();
        let scanned = tokio::time::timeout(Duration::from_secs(60), async {
            while rx.borrow_and_update().state == cachewatch::snapshot::MonitorState::Scanning {
                rx.changed().await.unwrap();
            }
        });
        scanned
            .await
            .expect("first scan did not finish within 60 s");
        m.flush().await.unwrap();
    });
}

fn invoke(f: &Fixture, cmd: &str, args: Value) -> Result<Value, Value> {
    let req = InvokeRequest {
        cmd: cmd.into(),
        callback: CallbackFn(0),
        error: CallbackFn(1),
        url: "tauri://localhost".parse().unwrap(),
        body: InvokeBody::Json(args),
        headers: Default::default(),
        invoke_key: INVOKE_KEY.to_string(),
    };
    get_ipc_response(&f.webview, req).map(|b| b.deserialize::<Value>().unwrap())
}

fn producer<'a>(snapshot: &'a Value, id: &str) -> Option<&'a Value> {
    snapshot["producers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == id)
}

fn paths_of(list: &Value) -> BTreeSet<PathBuf> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|i| PathBuf::from(i["path"].as_str().unwrap()))
        .collect()
}

#[test]
fn get_snapshot_reports_the_bytes_du_counts() {
    let (f, olds, youngs) = fixture(7, 5);
    let all: Vec<PathBuf> = olds.iter().chain(&youngs).cloned().collect();
    let snap = invoke(&f, "get_snapshot", json!({})).unwrap();
    let p = producer(&snap, PRODUCER).expect("the gpuarchiver producer is in the snapshot");
    assert_eq!(p["items"], 12);
    assert_eq!(p["files"], (0..12).map(|i| i % 3 + 1).sum::<u64>());
    assert_eq!(p["allocated_bytes"].as_u64().unwrap(), du(&all, false));
    assert_eq!(p["apparent_bytes"].as_u64().unwrap(), du(&all, true));
    assert_eq!(snap["threshold_secs"], DAY_SECS);
    let root = &snap["roots"][0];
    assert_eq!(root["kind"], "cache");
    assert_eq!(
        root["allocated_bytes"].as_u64().unwrap(),
        du(std::slice::from_ref(&f.root), false)
    );
}

#[test]
fn plan_then_execute_deletes_exactly_the_planned_items() {
    let (f, olds, youngs) = fixture(6, 4);
    let plan = invoke(
        &f,
        "plan_reclaim",
        json!({"producers": [PRODUCER], "thresholdSecs": DAY_SECS}),
    )
    .unwrap();
    // Few items: the preview lists them all as the largest.
    let planned = paths_of(&plan["largest"]);
    assert_eq!(planned, olds.iter().cloned().collect::<BTreeSet<_>>());
    assert_eq!(plan["planned_items"], olds.len());
    assert_eq!(plan["planned_bytes"].as_u64().unwrap(), du(&olds, false));
    let kept = plan["kept"].as_array().unwrap();
    assert_eq!(kept.len(), 1, "one reason: {kept:?}");
    assert_eq!(kept[0]["reason"], "too-young");
    assert_eq!(kept[0]["items"], youngs.len(), "young items are kept");
    assert_eq!(plan["kept_items"], youngs.len());
    let named = paths_of(&kept[0]["examples"]);
    assert!(
        named.iter().all(|k| youngs.contains(k)),
        "the kept items named are young ones: {named:?}"
    );

    let report = invoke(&f, "execute_reclaim", json!({"planId": plan["id"]})).unwrap();
    assert_eq!(paths_of(&report["deleted"]), planned);
    assert_eq!(report["deleted_items"], olds.len());
    assert_eq!(report["freed_bytes"], plan["planned_bytes"]);
    assert_eq!(report["errors"].as_array().unwrap().len(), 0);
    for o in &olds {
        assert!(!o.exists(), "{o:?} was planned and is gone");
    }
    for y in &youngs {
        assert!(y.exists(), "{y:?} was not planned and stays");
    }
    tauri::async_runtime::block_on(f.monitor.flush()).unwrap();
    let snap = invoke(&f, "get_snapshot", json!({})).unwrap();
    assert_eq!(producer(&snap, PRODUCER).unwrap()["items"], youngs.len());

    // a plan runs once
    let again = invoke(&f, "execute_reclaim", json!({"planId": plan["id"]})).unwrap_err();
    assert_eq!(again["code"], "unknown-plan");
}

#[test]
fn errors_cross_ipc_as_code_and_message() {
    let (f, _, _) = fixture(1, 1);
    let e = invoke(&f, "execute_reclaim", json!({"planId": "no-such-plan"})).unwrap_err();
    assert_eq!(e["code"], "unknown-plan");
    assert!(
        e["message"].as_str().unwrap().contains("\"no-such-plan\""),
        "{e}"
    );
    assert_eq!(
        e.as_object().unwrap().len(),
        2,
        "only code and message: {e}"
    );

    let e = invoke(
        &f,
        "plan_reclaim",
        json!({"producers": ["not-a-producer"], "thresholdSecs": 60}),
    )
    .unwrap_err();
    assert_eq!(e["code"], "unknown-producer");
    assert!(
        e["message"].as_str().unwrap().contains("not-a-producer"),
        "{e}"
    );

    for url in [
        "http://github.com/JuliaGPU/Metal.jl/pull/930",
        "https://example.com/",
        "file:///etc/passwd",
    ] {
        let e = invoke(&f, "open_evidence", json!({ "url": url })).unwrap_err();
        assert_eq!(e["code"], "not-evidence", "{url}");
    }
    // a catalogue link passes the check; without the opener plugin (mock runtime) opening fails
    let e = invoke(
        &f,
        "open_evidence",
        json!({"url": "https://github.com/JuliaGPU/Metal.jl/pull/930"}),
    )
    .unwrap_err();
    assert_eq!(e["code"], "opener");
}

#[test]
fn threshold_pause_and_settings_reach_the_monitor() {
    let (f, olds, _) = fixture(3, 2);
    invoke(&f, "set_threshold", json!({"thresholdSecs": 3 * DAY_SECS})).unwrap();
    let snap = invoke(&f, "get_snapshot", json!({})).unwrap();
    assert_eq!(snap["threshold_secs"], 3 * DAY_SECS);
    assert_eq!(
        producer(&snap, PRODUCER).unwrap()["reclaimable_items"],
        0,
        "nothing is 3 days old"
    );
    invoke(&f, "set_threshold", json!({"thresholdSecs": DAY_SECS})).unwrap();
    let snap = invoke(&f, "get_snapshot", json!({})).unwrap();
    assert_eq!(
        producer(&snap, PRODUCER).unwrap()["reclaimable_items"],
        olds.len()
    );

    invoke(&f, "set_paused", json!({"paused": true})).unwrap();
    assert_eq!(
        invoke(&f, "get_snapshot", json!({})).unwrap()["state"],
        "paused"
    );
    invoke(&f, "set_paused", json!({"paused": false})).unwrap();
    assert_ne!(
        invoke(&f, "get_snapshot", json!({})).unwrap()["state"],
        "paused"
    );

    let s = invoke(&f, "get_settings", json!({})).unwrap();
    assert_eq!(
        s["default_threshold_secs"],
        3 * DAY_SECS,
        "the seed: the config default"
    );
    assert_eq!(s["open_at_login"], false);
    let mut s2 = s.clone();
    s2["default_threshold_secs"] = json!(7200);
    invoke(&f, "set_settings", json!({ "settings": s2 })).unwrap();
    assert_eq!(invoke(&f, "get_settings", json!({})).unwrap(), s2);
    // Saved into the config file itself (one store), as a humantime duration.
    let saved: toml::Table = std::fs::read_to_string(f.data.join("config.toml"))
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(saved["reclaim"]["older_than"].as_str(), Some("2h"));
    assert_eq!(
        invoke(&f, "get_snapshot", json!({})).unwrap()["threshold_secs"],
        7200
    );

    invoke(&f, "rescan", json!({})).unwrap();
    let snap = invoke(&f, "get_snapshot", json!({})).unwrap();
    assert_eq!(producer(&snap, PRODUCER).unwrap()["items"], 5);
}

/// The window sends the sizes as typed beside the settings; `set_settings` reads them (no
/// `parse_size` call per field), and a bad one is `bad-size` naming its field, nothing saved.
#[test]
fn set_settings_reads_the_sizes_as_typed_and_names_a_bad_one() {
    let (f, _, _) = fixture(1, 1);
    let s = invoke(&f, "get_settings", json!({})).unwrap();
    assert_eq!(s["sizes"]["alerts.free_disk_min_bytes"], "10 GiB");
    assert_eq!(s["sizes"]["alerts.total_limit_bytes"], "");
    let mut bad = s.clone();
    bad["sizes"]["alerts.total_limit_bytes"] = json!("50 MB");
    let e = invoke(&f, "set_settings", json!({ "settings": bad })).unwrap_err();
    assert_eq!(e["code"], "bad-size", "{e}");
    assert_eq!(e["field"], "alerts.total_limit_bytes", "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .starts_with("bad size \"50 MB\""),
        "{e}"
    );
    assert_eq!(invoke(&f, "get_settings", json!({})).unwrap(), s);
    let mut typed = s.clone();
    typed["sizes"]["alerts.total_limit_bytes"] = json!("50 MiB");
    invoke(&f, "set_settings", json!({ "settings": typed })).unwrap();
    let now = invoke(&f, "get_settings", json!({})).unwrap();
    assert_eq!(now["alerts"]["total_limit_bytes"], 50 << 20);
    assert_eq!(now["sizes"]["alerts.total_limit_bytes"], "50 MiB");
}

#[test]
fn group_commands_cross_ipc_and_keep_the_ignored_shapes_in_the_config() {
    let (f, _, _) = fixture(1, 1);
    let root = f.root.to_string_lossy().into_owned();
    for (cmd, args) in [
        (
            "preview_group_rule",
            json!({"root": root, "label": "tmp<rand8>/"}),
        ),
        (
            "add_group_rule",
            json!({"root": root, "label": "tmp<rand8>/", "ruleId": "local-tmp", "regex": "^tmp$"}),
        ),
    ] {
        let e = invoke(&f, cmd, args).unwrap_err();
        assert_eq!(e["code"], "group", "{cmd}: {e}");
        assert!(
            e["message"].as_str().unwrap().contains("tmp<rand8>/"),
            "{e}"
        );
    }
    let list = invoke(
        &f,
        "ignore_shape",
        json!({"label": "tmp<rand8>/", "ignored": true}),
    )
    .unwrap();
    assert_eq!(list, json!(["tmp<rand8>/"]));
    let snap = invoke(&f, "get_snapshot", json!({})).unwrap();
    assert_eq!(snap["ignored_shapes"], json!(["tmp<rand8>/"]));
    let text = std::fs::read_to_string(f.data.join("config.toml")).unwrap();
    assert!(text.contains("[groups]"), "{text}");
    let e = invoke(
        &f,
        "ignore_shape",
        json!({"label": "other<rand8>/", "ignored": false}),
    )
    .unwrap_err();
    assert_eq!(e["code"], "group", "{e}");
    let list = invoke(
        &f,
        "ignore_shape",
        json!({"label": "tmp<rand8>/", "ignored": false}),
    )
    .unwrap();
    assert_eq!(list, json!([]));
}
