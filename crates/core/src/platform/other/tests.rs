#![allow(clippy::unwrap_used)]

use super::*;

fn exact(c: Collector) -> Vec<Vec<u8>> {
    c.finish()
        .files
        .into_iter()
        .map(|(_, p)| p.as_os_str().as_bytes().to_vec())
        .collect()
}

/// Run in a child process of this test binary, where it may lower its own fd limit without
/// starving the other tests (see the test below): with no fd to spare for `/proc`, or for a
/// process's `fd` dir, a file held open under the scope is still covered.
#[test]
fn child_reads_open_files_with_no_fd_to_spare() {
    let Some(dir) = std::env::var_os("CACHEWATCH_OPEN_FILES_CHILD_DIR") else {
        return;
    };
    let dir = PathBuf::from(dir);
    let held_path = dir.join("held");
    let _held = std::fs::File::open(&held_path).unwrap();
    let open_now = std::fs::read_dir("/proc/self/fd").unwrap().count() as u64;
    let limit = rustix::process::Rlimit {
        current: Some(open_now + 8),
        maximum: rustix::process::getrlimit(rustix::process::Resource::Nofile).maximum,
    };
    rustix::process::setrlimit(rustix::process::Resource::Nofile, limit).unwrap();
    // Every fd below the limit taken (gaps included).
    let mut fillers = Vec::new();
    while let Ok(f) = std::fs::File::open("/dev/null") {
        fillers.push(f);
    }
    // None spare: `/proc` cannot be listed. One spare: `/proc` is, no process's `fd` dir is.
    for spare in [0, 1] {
        if spare == 1 {
            fillers.pop();
        }
        let got = open_files(Some(std::slice::from_ref(&dir)));
        let covered = got.files.iter().any(|(_, p)| *p == held_path)
            || got.coarse.iter().any(|(_, p)| held_path.starts_with(p));
        assert!(covered, "{spare} spare: {got:?}");
    }
    println!("CHILD-OK");
}

#[test]
fn a_file_held_while_the_reader_is_out_of_fds_is_still_held() {
    let t = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(t.path()).unwrap();
    std::fs::write(dir.join("held"), b"x").unwrap();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "platform::other::tests::child_reads_open_files_with_no_fd_to_spare",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("CACHEWATCH_OPEN_FILES_CHILD_DIR", &dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("CHILD-OK"),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn maps_fields_split_the_five_fixed_fields_from_the_name() {
    let line = b"7f53095e0000-7f53095e1000 r--s 00000000 fe:00 10012627                   /t/a b  (deleted)";
    let (range, name) = maps_fields(line).unwrap();
    assert_eq!(range, b"7f53095e0000-7f53095e1000");
    assert_eq!(name, b"/t/a b  (deleted)");
    let (_, heap) = maps_fields(b"55d0-55d1 rw-p 00000000 00:00 0      [anon:/t/x]").unwrap();
    assert_eq!(heap, b"[anon:/t/x]");
    assert_eq!(maps_fields(b"55d0-55d1 rw-p 00000000 00:00 0 "), None);
}

#[test]
fn a_maps_path_is_read_both_ways_where_it_says_backslash_012() {
    let r = maps_readings(b"/t/a\\012b/c");
    assert_eq!(r, vec![b"/t/a\nb/c".to_vec(), b"/t/a\\012b/c".to_vec()]);
    assert_eq!(maps_readings(b"/t/x\\040y"), vec![b"/t/x\\040y".to_vec()]);
    let many = b"/t/\\012\\012\\012\\012/f";
    assert!(maps_readings(many).len() > MAPS_READINGS_MAX);
    assert_eq!(maps_readings(b"/t/\\012\\012\\012/f").len(), 8);
}

#[test]
fn many_ambiguous_escapes_keep_the_dir_above_the_first() {
    let mut c = Collector::new(Some(&[PathBuf::from("/t")]));
    c.begin(1);
    add_mapped(&mut c, 1, b"0-1", b"/t/d/\\012\\012\\012\\012/f");
    let got = c.finish();
    assert!(got.files.is_empty());
    assert_eq!(got.coarse, vec![(1, PathBuf::from("/t/d"))]);
}

#[test]
fn a_maps_reader_streams_lines_and_skips_repeats_and_other_names() {
    let text = b"1000-2000 r--p 00000000 fe:00 12 /t/a\\012b/lib\n\
                 2000-3000 r--p 00001000 fe:00 12 /t/a\\012b/lib\n\
                 3000-4000 rw-p 00000000 00:00 0 [heap]\n\
                 4000-5000 r--p 00000000 fe:00 13 /elsewhere/x\n\
                 5000-6000 r--p 00000000 fe:00 14 /t/z";
    let mut c = Collector::new(Some(&[PathBuf::from("/t")]));
    c.begin(1);
    assert!(add_maps(&mut c, 1, &text[..]));
    assert_eq!(
        exact(c),
        vec![
            b"/t/a\nb/lib".to_vec(),
            b"/t/a\\012b/lib".to_vec(),
            b"/t/z".to_vec()
        ]
    );
}

#[test]
fn deleted_is_dropped_only_from_a_file_known_unlinked() {
    let mut c = Collector::new(None);
    c.begin(1);
    add_named(&mut c, b"/t/live (deleted)", Some(false));
    add_named(&mut c, b"/t/gone (deleted) (deleted)", Some(true));
    add_named(&mut c, b"/t/unknown (deleted)", None);
    assert_eq!(
        exact(c),
        vec![
            b"/t/gone (deleted)".to_vec(),
            b"/t/live (deleted)".to_vec(),
            b"/t/unknown".to_vec(),
            b"/t/unknown (deleted)".to_vec(),
        ]
    );
}

#[test]
fn mountinfo_unescapes_only_what_the_kernel_escapes() {
    assert_eq!(
        unescape_octal(b"/m/a\\040b\\011c\\012d\\134e\\101", MOUNTINFO_ESCAPED),
        b"/m/a b\tc\nd\\e\\101".to_vec()
    );
    assert_eq!(
        unescape_octal(b"/m/\\0", MOUNTINFO_ESCAPED),
        b"/m/\\0".to_vec()
    );
}

#[test]
fn lines_are_handed_whole_or_cut_once_at_the_bound() {
    let text = b"ab\n0123456789abc\nlast";
    let mut seen = Vec::new();
    for_each_line(
        std::io::BufReader::with_capacity(4, &text[..]),
        8,
        |l, whole| seen.push((String::from_utf8(l.to_vec()).unwrap(), whole)),
    )
    .unwrap();
    assert_eq!(
        seen,
        [
            ("ab".to_owned(), true),
            ("01234567".to_owned(), false),
            ("last".to_owned(), true)
        ]
    );
}
