//! `du`, the independent oracle of sizes: every size a test asserts is computed by it, not by us.

use std::path::Path;
use std::process::Command;

/// Allocated bytes of `paths` together, as `du -s -c -B1` counts them (hard links once).
///
/// # Panics
/// `du` fails or prints something unexpected.
pub fn allocated<P: AsRef<Path>>(paths: &[P]) -> u64 {
    total("-B1", paths)
}

/// Apparent bytes (lengths) of `paths` together, as `du -s -c -b` counts them.
///
/// # Panics
/// `du` fails or prints something unexpected.
pub fn apparent<P: AsRef<Path>>(paths: &[P]) -> u64 {
    total("-b", paths)
}

/// `du -s -c FLAG PATHS`: the total line's figure; 0 for no paths. `du` exits 1 when it could not
/// read some entries (the permission tests) but still prints the total of what it read: that total
/// is returned.
///
/// # Panics
/// `du` cannot run or prints no total.
pub fn total<P: AsRef<Path>>(flag: &str, paths: &[P]) -> u64 {
    if paths.is_empty() {
        return 0;
    }
    let out = Command::new("du")
        .args(["-s", "-c", "-x", flag])
        .args(paths.iter().map(AsRef::as_ref))
        .output()
        .expect("run du");
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(last) = text.lines().last().filter(|l| l.ends_with("total")) else {
        panic!(
            "du printed no total: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    last.split_whitespace()
        .next()
        .expect("a figure")
        .parse()
        .expect("a number")
}

/// Allocated KiB of `paths` together, as `du -s -c -k` counts them: the unit both GNU and BSD
/// `du` (macOS, which has no `-B1`) know.
///
/// # Panics
/// `du` fails or prints something unexpected.
pub fn kib<P: AsRef<Path>>(paths: &[P]) -> u64 {
    total("-k", paths)
}

/// `du -s -x FLAG PATHS` in one run: each path's figure, in the order given. One run counts an
/// inode hard-linked from two of the paths once, under the first path that reaches it.
///
/// # Panics
/// `du` fails, or does not print one figure per path.
pub fn each<P: AsRef<Path>>(flag: &str, paths: &[P]) -> Vec<u64> {
    if paths.is_empty() {
        return Vec::new();
    }
    let out = Command::new("du")
        .args(["-s", "-x", flag])
        .args(paths.iter().map(AsRef::as_ref))
        .output()
        .expect("run du");
    assert!(
        out.status.success(),
        "du failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let sizes: Vec<u64> = text
        .lines()
        .map(|l| {
            l.split('\t')
                .next()
                .expect("a figure")
                .parse()
                .expect("a number")
        })
        .collect();
    assert_eq!(sizes.len(), paths.len(), "du printed {text:?}");
    sizes
}
