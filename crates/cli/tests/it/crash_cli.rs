//! Crash reports end to end through the binary: `watch` alerts on a crash loop, `crashes` lists it.

use std::time::{Duration, SystemTime};

use cachewatch_testkit::ips::write_burst;

const COREAI: &str = "coreai-ndarray-allocation-cap";

/// End to end through the binary: `cachewatch watch` prints the CoreAI crash-loop alert once for a
/// burst written into its reports root, and `cachewatch crashes --json` lists the group.
#[test]
fn cachewatch_watch_prints_the_coreai_alert_once_and_crashes_lists_the_group() {
    use std::io::BufRead;
    use std::process::{Command, Stdio};
    use std::sync::mpsc;

    const BIN: &str = env!("CARGO_BIN_EXE_cachewatch");
    let dir = tempfile::tempdir().unwrap();
    let reports = dir.path().join("DiagnosticReports");
    std::fs::create_dir(&reports).unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        "[alerts]\nfree_disk_min_bytes = 0\ndisk_full_eta_min_hours = 0\n",
    )
    .unwrap();
    let root_arg = format!("diagnostic-reports={}", reports.display());
    let mut child = Command::new(BIN)
        .args(["-v", "watch", "--root", &root_arg, "--config"])
        .arg(&config)
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel::<(bool, String)>();
    let out_tx = tx.clone();
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for l in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            out_tx.send((true, l)).ok();
        }
    });
    std::thread::spawn(move || {
        for l in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            tx.send((false, l)).ok();
        }
    });
    let bound = Duration::from_secs(60);
    // Wait until it watches, then replay the crash loop: 20 reports over the last 10 minutes.
    loop {
        let (is_out, line) = rx.recv_timeout(bound).expect("no 'watching' log line");
        if !is_out && line.contains("watching") {
            break;
        }
    }
    let now = SystemTime::now();
    write_burst(
        &reports,
        "coreai-worker",
        now - Duration::from_secs(570),
        Duration::from_secs(30),
        20,
    );
    let mut alert_lines = Vec::new();
    while alert_lines.is_empty() {
        let (is_out, line) = rx.recv_timeout(bound).expect("no crash-loop alert printed");
        if is_out && line.contains(" crash-loop ") {
            alert_lines.push(line);
        }
    }
    // SIGTERM, then everything else it printed.
    let pid = child.id().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    let status = child.wait().unwrap();
    while let Ok((is_out, line)) = rx.recv_timeout(Duration::from_secs(5)) {
        if is_out && line.contains(" crash-loop ") {
            alert_lines.push(line);
        }
    }
    assert!(status.success(), "{status:?}");
    assert_eq!(alert_lines.len(), 1, "{alert_lines:#?}");
    assert!(
        alert_lines[0].contains(
            "crash-loop CoreAI runtime allocation cap: the process is killed after 16384 outputs: coreai-worker crashed"
        ),
        "{}",
        alert_lines[0]
    );

    let out = Command::new(BIN)
        .args(["crashes", "--json", "--root", &root_arg, "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let groups = doc["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "{doc:#}");
    assert_eq!(groups[0]["process"], "coreai-worker");
    assert_eq!(groups[0]["signature"], COREAI);
    assert_eq!(groups[0]["count"], 20);
    assert_eq!(groups[0]["crash_loop"], true);
    assert_eq!(doc["unreadable"].as_array().unwrap().len(), 0);
}

/// `cachewatch crashes` on a reports dir of several shapes: crashes grouped, the other reports
/// listed by kind, the exit code 0 (nothing unreadable), and a process name with terminal control
/// codes printed escaped in the table but exact in the JSON.
#[test]
fn crashes_lists_other_report_kinds_and_escapes_names_in_the_table() {
    use cachewatch_testkit::ips::fixture;
    use std::process::Command;

    const BIN: &str = env!("CARGO_BIN_EXE_cachewatch");
    let dir = tempfile::tempdir().unwrap();
    let reports = dir.path().join("DiagnosticReports");
    std::fs::create_dir(&reports).unwrap();
    for name in [
        "hang_288.ips",
        "jetsam_298.ips",
        "cpu_resource_202.ips",
        "embedder_2026-03-14-095501_worker-host.crash",
    ] {
        std::fs::copy(fixture(name), reports.join(name)).unwrap();
    }
    let evil = "evil\u{1b}[2K\rfake";
    let text = std::fs::read_to_string(fixture("sigsegv.ips"))
        .unwrap()
        .replace(
            "\"procName\": \"thumbnailer\"",
            "\"procName\": \"evil\\u001b[2K\\rfake\"",
        );
    std::fs::write(reports.join("evil-2026-03-12-184005.ips"), text).unwrap();
    let root_arg = format!("diagnostic-reports={}", reports.display());
    let run = |json: bool| {
        let mut c = Command::new(BIN);
        c.args(["crashes", "--root", &root_arg, "--config"])
            .arg(dir.path().join("config.toml"));
        if json {
            c.arg("--json");
        }
        let out = c.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let doc: serde_json::Value = serde_json::from_str(&run(true)).unwrap();
    let groups: Vec<(String, String)> = doc["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["process"].as_str().unwrap().to_owned(),
                g["signature"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        groups,
        [
            ("embedder".to_owned(), COREAI.to_owned()),
            (evil.to_owned(), "crash".to_owned())
        ]
    );
    let kinds: Vec<(&str, &str)> = doc["other_reports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["kind"].as_str().unwrap(), o["process"].as_str().unwrap()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("hang", "Notes Helper"),
            ("jetsam", "model-server"),
            ("resource", "indexer")
        ]
    );
    let table = run(false);
    assert!(
        !table.contains('\u{1b}') && !table.contains('\r'),
        "{table:?}"
    );
    assert!(table.contains("evil\\e[2K\\rfake"), "{table}");
    assert!(table.contains("Other reports (not crashes):"), "{table}");
    assert!(table.contains("reloaded the model 2 times"), "{table}");
}

/// Every report shape in one dir through the binary: `crashes --json` groups the crashes (whole,
/// cut short, header only, a Console copy) and none of the others (synced analytics, stackshots
/// with and without a bug_type, a simulated fault), however many and recent they are.
#[test]
fn crashes_json_groups_the_real_crashes_of_a_dir_of_every_shape() {
    use cachewatch_testkit::ips::{
        console_copy, header_line, report_name, segv_report, stackshot, synced_analytics, template,
        write_report,
    };
    use std::process::Command;

    const BIN: &str = env!("CARGO_BIN_EXE_cachewatch");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("DiagnosticReports");
    std::fs::create_dir(&d).unwrap();
    let now = SystemTime::now();
    let ago = |s: u64| now - Duration::from_secs(s);
    for (i, s) in [(10u32, 240u64), (11, 200)] {
        std::fs::write(
            d.join(report_name("ingest", ago(s))),
            segv_report("ingest", ago(s), i),
        )
        .unwrap();
    }
    let cut = segv_report("ingest", ago(160), 12);
    std::fs::write(
        d.join(report_name("ingest", ago(160))),
        &cut[..cut.len() * 2 / 3],
    )
    .unwrap();
    std::fs::write(
        d.join(report_name("ingest", ago(120))),
        header_line("309", Some("ingest"), ago(120)),
    )
    .unwrap();
    let pool = template("coreai_pool.ips");
    let ips = write_report(&pool, &d, "embedder", ago(100), 7301);
    let ips_text = std::fs::read_to_string(&ips).unwrap();
    std::fs::write(
        d.join("embedder console copy.ips"),
        console_copy(&ips_text, "embedder", 7301),
    )
    .unwrap();
    let fault = template("coreai_pool.ips").replace(
        "\"bug_type\":\"309\"",
        "\"bug_type\":\"309\",\"is_simulated\":1",
    );
    for i in 0..6u64 {
        let t = ago(30 * i);
        std::fs::write(
            d.join(format!("Analytics-2026-03-14-0959{i:02}.ips.ca.synced")),
            synced_analytics(t, 2),
        )
        .unwrap();
        std::fs::write(
            d.join(format!("stacks-2026-03-14-0959{i:02}.ips")),
            stackshot(Some("288"), t, &["ingest", "launchd"]),
        )
        .unwrap();
        std::fs::write(
            d.join(format!("spins-2026-03-14-0959{i:02}.ips")),
            stackshot(None, t, &["ingest"]),
        )
        .unwrap();
        write_report(&fault, &d, &format!("ExcUserFault_app{i}"), t, 900);
    }
    let root_arg = format!("diagnostic-reports={}", d.display());
    let out = Command::new(BIN)
        .args(["crashes", "--json", "--root", &root_arg, "--config"])
        .arg(dir.path().join("config.toml"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut groups: Vec<(String, String, u64)> = doc["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["process"].as_str().unwrap().to_owned(),
                g["signature"].as_str().unwrap().to_owned(),
                g["count"].as_u64().unwrap(),
            )
        })
        .collect();
    groups.sort();
    // Hand count: ingest 2 whole + 1 cut + 1 header only; embedder its .ips and the copy.
    assert_eq!(
        groups,
        [
            ("embedder".to_owned(), COREAI.to_owned(), 2),
            ("ingest".to_owned(), "crash".to_owned(), 4),
        ]
    );
    assert!(doc["groups"]
        .as_array()
        .unwrap()
        .iter()
        .all(|g| g["crash_loop"] == false));
    let mut kinds: Vec<(String, u64)> = doc["other_reports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["kind"].as_str().unwrap().to_owned(),
                o["count"].as_u64().unwrap(),
            )
        })
        .collect();
    kinds.sort();
    let mut want: Vec<(String, u64)> = vec![
        ("analytics".into(), 6),
        ("hang".into(), 6),
        ("hang".into(), 6),
    ];
    want.extend((0..6).map(|_| ("simulated-fault".to_owned(), 1)));
    want.sort();
    assert_eq!(kinds, want);
    let partial: Vec<&str> = doc["partial"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["path"].as_str().unwrap())
        .collect();
    assert_eq!(partial.len(), 2, "{doc:#}");
    assert_eq!(doc["unreadable"].as_array().unwrap().len(), 0, "{doc:#}");
}
