//! `cachewatch status` says when free space fell by much more than the watched dirs grew,
//! from the samples a monitor wrote to the history database.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cachewatch::api::roots::RootKind;
use cachewatch::history::{History, Sample, Series};

const GIB: u64 = 1 << 30;

fn cachewatch_cli(data_dir: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cachewatch"))
        .arg("--data-dir")
        .arg(data_dir)
        .args(args)
        .env("CACHEWATCH_CONFIG", data_dir.join("no-such-config.toml"))
        .env_remove("RUST_LOG")
        .output()
        .expect("run cachewatch");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn sample(series: Series, bytes: u64) -> Sample {
    Sample {
        series,
        allocated_bytes: bytes,
        apparent_bytes: bytes,
        items: 0,
    }
}

#[test]
fn status_says_free_space_fell_42_gib_while_the_watched_dirs_grew_1_2_gib() {
    let data = tempfile::tempdir().expect("tempdir");
    let root_dir = tempfile::tempdir().expect("tempdir");
    let root_arg = format!("temp={}", root_dir.path().display());
    // First run: which volume and path the snapshot reports for the root.
    let (code, out, err) = cachewatch_cli(data.path(), &["status", "--json", "--root", &root_arg]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    let mount = v["roots"][0]["mount"].as_str().expect("a mount").to_owned();
    let path = v["roots"][0]["path"].as_str().expect("a path").to_owned();
    assert_eq!(
        v["unexplained_growth"],
        serde_json::json!([]),
        "no history yet"
    );

    // What a monitor would have written: 6 h of hourly samples; free space falls 7 GiB an hour,
    // the root grows 1.2 GiB in all.
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    let start = now - 6 * 3600 - 60;
    let root_growth: u64 = 1288490188; // 1.2 GiB
    {
        let mut h = History::open(&data.path().join("cachewatch.db")).expect("open");
        for hour in 0..=6u64 {
            let at = UNIX_EPOCH + Duration::from_secs(start + hour * 3600);
            h.record_samples(
                at,
                &[
                    sample(
                        Series::VolumeFree {
                            mount: mount.clone().into(),
                        },
                        400 * GIB - hour * 7 * GIB,
                    ),
                    sample(
                        Series::Root {
                            kind: RootKind::Temp,
                            path: path.clone().into(),
                        },
                        GIB + hour * root_growth / 6,
                    ),
                ],
            )
            .expect("record");
        }
    }
    let (code, out, err) = cachewatch_cli(data.path(), &["status", "--root", &root_arg]);
    assert_eq!(code, 0, "{err}");
    let line = format!(
        "Free space on {mount} fell 42.0 GiB in 6 h; the watched dirs grew 1.2 GiB: something \
         outside them is growing (for example /private/tmp)."
    );
    assert!(out.contains(&line), "{out}");

    let (_, out, _) = cachewatch_cli(data.path(), &["status", "--json", "--root", &root_arg]);
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    let u = &v["unexplained_growth"][0];
    assert_eq!(u["mount"], mount.as_str());
    assert_eq!(u["free_fall_bytes"], 42 * GIB);
    assert_eq!(u["roots_growth_bytes"], root_growth);
    assert_eq!(u["unexplained_bytes"], 42 * GIB - root_growth);
    assert_eq!(u["notable"], true);
}
