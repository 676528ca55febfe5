//! What a neighbour's open and mapped files cost the in-use guard: `cargo run -p cachewatch-core
//! --example in_use_memory [maps|fds|distinct]...` (all three by default; Linux).
//!
//! Each attack is a holder process (this example again) under a dir of long names (~3.9 KiB
//! paths):
//! - `maps`: 60,000 mappings of two files, alternating (fds closed);
//! - `fds`: 19,000 fds of one file;
//! - `distinct`: 30,000 distinct files, each mapped once (fds closed).
//!
//! For each, the peak resident set of one gathering of the open files is printed (the `VmHWM` of
//! `/proc/self/status`, reset through `/proc/self/clear_refs` before each, minus the resident set
//! just before) with what was gathered: every process's files, the real probe's snapshot, and the
//! probe scoped to a root elsewhere and to the attacker's own dir.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cachewatch_core::process::{ProcessProbe, SystemProbe};

const HOLDER: &str = "CW_MEM_HOLDER";
const DIR: &str = "CW_MEM_DIR";
const MAPS: usize = 60_000;
const FDS: usize = 19_000;
const DISTINCT: usize = 30_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    if let Some(kind) = std::env::var_os(HOLDER) {
        let dir = PathBuf::from(std::env::var_os(DIR).ok_or("no dir")?);
        return hold(&kind.to_string_lossy(), &dir);
    }
    let mut kinds: Vec<String> = std::env::args().skip(1).collect();
    if kinds.is_empty() {
        kinds = vec!["maps".into(), "fds".into(), "distinct".into()];
    }
    let tmp = tempfile::tempdir()?;
    let base = std::fs::canonicalize(tmp.path())?;
    let deep = long_dir(&base)?;
    let elsewhere = tempfile::tempdir()?;
    let elsewhere = std::fs::canonicalize(elsewhere.path())?;
    println!(
        "attacker dir: {} bytes of path; max_map_count {}",
        deep.as_os_str().len(),
        std::fs::read_to_string("/proc/sys/vm/max_map_count")
            .unwrap_or_default()
            .trim()
    );
    baseline_row("no attacker", &elsewhere, &base);
    for kind in &kinds {
        let holder = Holder::spawn(kind, &deep)?;
        println!("attack {kind}: holder pid {} ready", holder.0.id());
        baseline_row(kind, &elsewhere, &base);
        drop(holder);
    }
    Ok(())
}

/// One line per way of gathering: peak MiB above the resident set before, entries, seconds.
fn baseline_row(label: &str, elsewhere: &Path, attacker: &Path) {
    measure(label, "platform::open_files() (every process)", || {
        let f = cachewatch_core::platform::open_files();
        f.files.len()
    });
    measure(label, "SystemProbe::snapshot() (unscoped)", || {
        let p = SystemProbe::snapshot();
        p.open_paths()
    });
    measure(
        label,
        "platform::open_files_under(a root elsewhere)",
        || {
            let f = cachewatch_core::platform::open_files_under(&[elsewhere.to_path_buf()]);
            f.files.len() + f.coarse.len()
        },
    );
    measure(
        label,
        "SystemProbe::under(a root elsewhere), refresh",
        || {
            let p = SystemProbe::under([elsewhere.to_path_buf()]);
            p.refresh();
            p.open_paths()
        },
    );
    measure(
        label,
        "SystemProbe::under(the attacker's dir), refresh",
        || {
            let p = SystemProbe::under([attacker.to_path_buf()]);
            p.refresh();
            p.open_paths()
        },
    );
}

fn measure(label: &str, what: &str, f: impl FnOnce() -> usize) {
    cachewatch_core::platform::release_free_memory();
    let before = status_kib("VmRSS:");
    reset_peak();
    let started = Instant::now();
    let n = f();
    let secs = started.elapsed().as_secs_f64();
    let peak = status_kib("VmHWM:");
    println!(
        "{label:>9} | {what:<52} | peak +{:>7.1} MiB | {n:>6} entries | {secs:.2} s",
        peak.saturating_sub(before) as f64 / 1024.0
    );
}

/// Resets `VmHWM` to the current resident set (`5` to `/proc/self/clear_refs`, Linux 4.0+).
fn reset_peak() {
    let done = std::fs::OpenOptions::new()
        .write(true)
        .open("/proc/self/clear_refs")
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"5"));
    if let Err(e) = done {
        eprintln!("cannot reset the peak resident set: {e}");
    }
}

fn status_kib(key: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap_or(0)
}

/// `base/aaa…/aaa…/…` of 15 names of 250 bytes: about 3.8 KiB of path.
fn long_dir(base: &Path) -> std::io::Result<PathBuf> {
    let mut p = base.to_path_buf();
    for i in 0..15 {
        p.push(format!("{i:02}{}", "a".repeat(248)));
    }
    std::fs::create_dir_all(&p)?;
    Ok(p)
}

struct Holder(Child);

impl Holder {
    fn spawn(kind: &str, dir: &Path) -> Result<Holder, Box<dyn std::error::Error>> {
        let mut child = Command::new(std::env::current_exe()?)
            .env(HOLDER, kind)
            .env(DIR, dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let out = child.stdout.take().ok_or("no stdout")?;
        let mut line = String::new();
        BufReader::new(out).read_line(&mut line)?;
        if line.trim() != "ready" {
            child.kill().ok();
            child.wait().ok();
            return Err(format!("the {kind} holder failed: {line:?}").into());
        }
        Ok(Holder(child))
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        self.0.kill().ok();
        self.0.wait().ok();
    }
}

/// The holder: builds its files, holds them, says `ready`, and waits for stdin to close (ten
/// minutes at most).
fn hold(kind: &str, dir: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let mut fds = Vec::new();
    match kind {
        "maps" => {
            let (a, b) = (dir.join("a.bin"), dir.join("b.bin"));
            page_file(&a)?;
            page_file(&b)?;
            let (fa, fb) = (std::fs::File::open(&a)?, std::fs::File::open(&b)?);
            for i in 0..MAPS {
                map(if i % 2 == 0 { &fa } else { &fb })?;
            }
        }
        "fds" => {
            raise_nofile();
            let a = dir.join("held.bin");
            page_file(&a)?;
            for _ in 0..FDS {
                fds.push(std::fs::File::open(&a)?);
            }
        }
        "distinct" => {
            for i in 0..DISTINCT {
                let p = dir.join(format!("f{i:06}"));
                page_file(&p)?;
                map(&std::fs::File::open(&p)?)?;
            }
        }
        other => return Err(format!("unknown attack {other:?}: maps, fds or distinct").into()),
    }
    std::thread::spawn(|| {
        std::thread::sleep(Duration::from_secs(600));
        std::process::exit(0);
    });
    println!("ready");
    let mut sink = Vec::new();
    std::io::stdin().read_to_end(&mut sink).ok();
    drop(fds);
    Ok(())
}

fn page_file(p: &Path) -> std::io::Result<()> {
    std::fs::write(p, vec![7u8; 4096])
}

fn map(f: &std::fs::File) -> std::io::Result<()> {
    // SAFETY: a fresh read-only shared mapping of a 4096-byte file; never unmapped, never read.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ,
            libc::MAP_SHARED,
            std::os::fd::AsRawFd::as_raw_fd(f),
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

fn raise_nofile() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid rlimit struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}
