//! The textfile form: Prometheus text (0.0.4) and an atomic write.

use super::super::textfile::*;

fn figures() -> ScanFigures {
    ScanFigures {
        roots: vec![RootFigures {
            kind: "temp".into(),
            path: "/tmp/a\"b".into(),
            allocated_bytes: 12288,
        }],
        producers: vec![ProducerFigures {
            id: "metal-gpuarchiver".into(),
            items: 3,
            allocated_bytes: 12288,
        }],
    }
}

#[test]
fn the_textfile_form_is_prometheus_text_without_unit_or_eof_lines() {
    let expected = "\
# HELP cachewatch_producer_allocated_bytes Allocated bytes of a producer's items (as du counts them).
# TYPE cachewatch_producer_allocated_bytes gauge
cachewatch_producer_allocated_bytes{producer=\"metal-gpuarchiver\"} 12288
# HELP cachewatch_producer_items Number of a producer's items.
# TYPE cachewatch_producer_items gauge
cachewatch_producer_items{producer=\"metal-gpuarchiver\"} 3
# HELP cachewatch_root_allocated_bytes Allocated bytes of a watched root.
# TYPE cachewatch_root_allocated_bytes gauge
cachewatch_root_allocated_bytes{kind=\"temp\",path=\"/tmp/a\\\"b\"} 12288
";
    assert_eq!(render(&figures()), expected);
}

#[test]
fn an_atomic_write_replaces_the_file_and_leaves_no_temporary() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cachewatch.prom");
    std::fs::write(&path, "old\n").unwrap();
    write_atomically(&path, "new\n").unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "new\n");
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["cachewatch.prom"]);
}

#[test]
fn a_missing_directory_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no/such/dir/cachewatch.prom");
    let err = write_atomically(&path, "x\n").unwrap_err();
    assert!(
        err.to_string().contains("no/such/dir/cachewatch.prom"),
        "{err}"
    );
}

#[cfg(unix)]
#[test]
fn a_symlinked_file_is_written_through_and_keeps_its_mode() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("dotfiles/config.toml");
    std::fs::create_dir_all(real.parent().unwrap()).unwrap();
    std::fs::write(&real, "old\n").unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
    let link = dir.path().join("config.toml");
    std::os::unix::fs::symlink("dotfiles/config.toml", &link).unwrap();
    write_atomically(&link, "new\n").unwrap();
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read_to_string(&real).unwrap(), "new\n");
    let mode = std::fs::metadata(&real).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o600);
    let mut names: Vec<_> = std::fs::read_dir(real.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, ["config.toml"]);
}

#[cfg(unix)]
#[test]
fn a_link_planted_at_the_temporary_name_is_not_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    let path = dir.path().join("cachewatch.prom");
    let tmp = dir
        .path()
        .join(format!(".cachewatch.prom.{}.tmp", std::process::id()));
    std::os::unix::fs::symlink(&victim, &tmp).unwrap();
    write_atomically(&path, "metrics\n").unwrap();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "metrics\n");
    assert!(!std::fs::symlink_metadata(&path)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(std::fs::symlink_metadata(&tmp).is_err(), "temporary left");
}
