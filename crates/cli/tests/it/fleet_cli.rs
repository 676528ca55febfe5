//! The fleet forms through the binary: `scan --openmetrics` (node_exporter's textfile collector)
//! with sizes from `du` and counts by hand, written atomically, accepted by `promtool check
//! metrics`; `launchd-plist --auto-reclaim` (a plist that parses, the CI-runner rules installed);
//! the CI-runner rule set (one file, the sample in docs/fleet.md, every `auto` leak of the catalogue).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output, Stdio};

use cachewatch::api::catalogue::{Catalogue, ProducerKind, ReclaimMode};
use cachewatch_testkit::{du, tree};

const PROMTOOL: &str = "/usr/bin/promtool";
const CI_RUNNER: &str = include_str!("../../../../deploy/launchd/ci-runner.toml");

fn cachewatch(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cachewatch"))
        .arg("--config")
        .arg(dir.join("config.toml"))
        .arg("--data-dir")
        .arg(dir.join("data"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The value of the sample line starting with `series ` in `text`.
fn value(text: &str, series: &str) -> u64 {
    let prefix = format!("{series} ");
    let line = text
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no {series} in\n{text}"));
    line[prefix.len()..].parse().unwrap()
}

#[test]
fn scan_openmetrics_writes_du_sizes_and_hand_counts_atomically_for_the_textfile_collector() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("cache");
    // 7 archives of 3 files in an app's dir, and a file no producer claims.
    let archives = tree::make_archives(&root.join("org.example.app"), "a", 7, 3);
    tree::write_file(&root.join("unclaimed.bin"), 20_000);
    let out_dir = tmp.path().join("textfile");
    std::fs::create_dir(&out_dir).unwrap();
    let prom = out_dir.join("cachewatch.prom");
    std::fs::write(&prom, "stale\n").unwrap();
    let root_arg = format!("cache={}", root.display());

    let out = cachewatch(
        tmp.path(),
        &[
            "scan",
            "--root",
            &root_arg,
            "--openmetrics",
            "--output",
            prom.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    let text = std::fs::read_to_string(&prom).unwrap();
    // Replaced whole, and nothing left beside it (no temporary for the collector to read).
    let names: Vec<_> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["cachewatch.prom"]);

    assert_eq!(
        value(
            &text,
            "cachewatch_producer_items{producer=\"metal-gpuarchiver\"}"
        ),
        7
    );
    assert_eq!(
        value(
            &text,
            "cachewatch_producer_allocated_bytes{producer=\"metal-gpuarchiver\"}"
        ),
        du::allocated(&archives)
    );
    assert_eq!(
        value(
            &text,
            &format!(
                "cachewatch_root_allocated_bytes{{kind=\"cache\",path=\"{}\"}}",
                root.display()
            )
        ),
        du::allocated(&[&root])
    );
    // The Prometheus text format node_exporter parses: no OpenMetrics-only lines.
    assert!(
        !text.contains("# EOF") && !text.contains("# UNIT"),
        "{text}"
    );

    // Without --output: the same text on stdout.
    let out = cachewatch(tmp.path(), &["scan", "--root", &root_arg, "--openmetrics"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8(out.stdout).unwrap(), text);

    if !Path::new(PROMTOOL).exists() {
        eprintln!("skipped promtool: {PROMTOOL} is missing (apt-get install prometheus)");
        return;
    }
    let check = Command::new(PROMTOOL)
        .args(["check", "metrics"])
        .stdin(std::fs::File::open(&prom).unwrap())
        .output()
        .unwrap();
    assert!(check.status.success(), "{check:?}\n{text}");
    assert!(
        check.stdout.is_empty() && check.stderr.is_empty(),
        "{check:?}"
    );
}

#[test]
fn scan_openmetrics_into_a_missing_dir_fails_naming_the_file_and_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("cache");
    std::fs::create_dir(&root).unwrap();
    let prom = tmp.path().join("no-such-dir/cachewatch.prom");
    let out = cachewatch(
        tmp.path(),
        &[
            "scan",
            "--root",
            &format!("cache={}", root.display()),
            "--openmetrics",
            "--output",
            prom.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("no-such-dir/cachewatch.prom"), "{err}");
}

fn plist_argv(xml: &[u8]) -> Vec<String> {
    let v: plist::Value = plist::from_bytes(xml).unwrap();
    let d = v.as_dictionary().unwrap();
    // Restarted when killed (disk pressure), not after a clean exit, at most every 30 s.
    let keep_alive = d["KeepAlive"].as_dictionary().unwrap();
    assert_eq!(keep_alive["SuccessfulExit"].as_boolean(), Some(false));
    assert_eq!(d["ThrottleInterval"].as_unsigned_integer(), Some(30));
    d["ProgramArguments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_string().unwrap().to_owned())
        .collect()
}

#[test]
fn launchd_plist_auto_reclaim_installs_the_ci_runner_rules_and_runs_watch_with_metrics() {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("config.toml");
    let args = ["launchd-plist", "--auto-reclaim", "--program", "/opt/cw"];

    // No config yet: the CI-runner set is written, the agent names that file.
    let out = cachewatch(tmp.path(), &args);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), CI_RUNNER);
    let data = tmp.path().join("data");
    let want = [
        "/opt/cw",
        "--config",
        config.to_str().unwrap(),
        "--data-dir",
        data.to_str().unwrap(),
        "watch",
        "--metrics",
        "127.0.0.1:9187",
    ];
    assert_eq!(plist_argv(&out.stdout), want);

    // Rules there: kept as they are (run twice, written once).
    let out = cachewatch(
        tmp.path(),
        &[&args[..], &["--metrics", "0.0.0.0:9300"]].concat(),
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), CI_RUNNER);
    assert_eq!(plist_argv(&out.stdout)[7], "0.0.0.0:9300");
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("ci-metal, ci-leaks"), "{err}");

    // A config without rules: the set is appended and the user's settings stay.
    let mine = "[reclaim]\nolder_than = \"2d\"\n";
    std::fs::write(&config, mine).unwrap();
    let out = cachewatch(tmp.path(), &args);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        format!("{mine}\n{CI_RUNNER}")
    );
    // What was written loads, and `reclaim --rules --dry-run` runs both rules.
    let out = cachewatch(
        tmp.path(),
        &[
            "reclaim",
            "--rules",
            "--dry-run",
            "--root",
            &format!("cache={}", tmp.path().display()),
        ],
    );
    assert!(out.status.success(), "{out:?}");
}

/// The ```toml block of docs/fleet.md (the README's fleet page) that holds the CI-runner set.
fn readme_ci_runner_block() -> String {
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/fleet.md"))
        .unwrap();
    page.split("```toml\n")
        .skip(1)
        .filter_map(|b| b.split_once("```").map(|(block, _)| block.to_owned()))
        .find(|b| b.contains("name = \"ci-metal\""))
        .expect("docs/fleet.md shows the CI-runner set")
}

#[test]
fn the_ci_runner_set_is_the_readmes_and_bounds_every_auto_leak_of_the_catalogue() {
    assert_eq!(readme_ci_runner_block(), CI_RUNNER);
    let named: Vec<String> = CI_RUNNER
        .lines()
        .flat_map(|l| l.split('"').skip(1).step_by(2))
        .map(str::to_owned)
        .collect();
    for rule in Catalogue::builtin().rules() {
        if rule.kind == ProducerKind::Leak && rule.reclaim == ReclaimMode::Auto {
            assert!(
                named.contains(&rule.id),
                "{} is an auto leak missing from deploy/launchd/ci-runner.toml",
                rule.id
            );
        }
    }
}

/// `cachewatch --config C --data-dir D launchd-plist` printed a plist without them: the agent
/// (started by launchd in `/`, without CACHEWATCH_CONFIG) ran on the default config and data dir.
#[test]
fn launchd_plist_passes_the_config_and_data_dir_it_was_given_absolutely() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("config.toml"), "").unwrap();
    let argv = |out: Output| -> Vec<String> {
        assert!(out.status.success(), "{out:?}");
        let v: plist::Value = plist::from_bytes(&out.stdout).unwrap();
        v.as_dictionary().unwrap()["ProgramArguments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_string().unwrap().to_owned())
            .collect()
    };
    let got = argv(cachewatch(
        tmp.path(),
        &["launchd-plist", "--program", "/bin/cw"],
    ));
    let config = tmp.path().join("config.toml").display().to_string();
    let data = tmp.path().join("data").display().to_string();
    assert_eq!(
        got,
        ["/bin/cw", "--config", &config, "--data-dir", &data, "watch"]
    );
    // Relative, from the environment: made absolute against the current dir.
    let out = Command::new(env!("CARGO_BIN_EXE_cachewatch"))
        .current_dir(tmp.path())
        .env("CACHEWATCH_CONFIG", "config.toml")
        .env_remove("CACHEWATCH_DATA_DIR")
        .args(["launchd-plist", "--program", "/bin/cw"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let canon = tmp.path().canonicalize().unwrap();
    let got = argv(out);
    assert_eq!(got[..2], ["/bin/cw", "--config"]);
    assert!(
        Path::new(&got[2]) == tmp.path().join("config.toml")
            || Path::new(&got[2]) == canon.join("config.toml"),
        "{got:?}"
    );
    assert_eq!(got[3..], ["watch"]);
}

/// `--metrics not-an-address` (or `999.1.1.1:99999`) went into the plist: an agent failing on
/// every restart; a `--label` with `../` moved the log paths. Both are refused (usage error, exit
/// 2) naming the value, and no plist is printed.
#[test]
fn launchd_plist_refuses_a_bad_metrics_address_or_label() {
    let tmp = tempfile::tempdir().unwrap();
    for (args, says) in [
        (
            &["--metrics", "not-an-address"][..],
            "\"not-an-address\" is not an IP:PORT",
        ),
        (
            &["--metrics", "999.1.1.1:99999"][..],
            "\"999.1.1.1:99999\" is not an IP:PORT",
        ),
        (&["--label", "../../evil"][..], "holds '/'"),
        (&["--label", "dev.watch\u{7}"][..], "holds '\\u{7}'"),
    ] {
        let mut argv = vec!["launchd-plist", "--program", "/opt/cw"];
        argv.extend_from_slice(args);
        let out = cachewatch(tmp.path(), &argv);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        assert!(out.stdout.is_empty(), "{args:?}: a plist was printed");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains(says), "{args:?}: {err}");
    }
}
