//! Process watch on a real child process: a small Python program (run through a symlink so it has
//! a name of its own) that starts or stops one thread per command on stdin and acknowledges each,
//! so the test drives the thread count step by step, with no sleeps. The monitor tests run the
//! same child under a [`Monitor`](cachewatch::monitor) with `[[process_watch]]` rules, and one
//! that grows by itself on the monitor's own sample interval.

#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cachewatch::monitor::{self, MonitorOptions};
use cachewatch::process_leaks::{judge, ProcSample, ProcessWatchConfig, ProcessWatcher};
use cachewatch_core::clock::ManualClock;
use cachewatch_core::{Catalogue, Root, RootKind};

const CHILD: &str = r#"
import sys, threading
stops = []
def park(ev):
    ev.wait()
for line in sys.stdin:
    cmd = line.strip()
    if cmd == "+":
        ev = threading.Event()
        t = threading.Thread(target=park, args=(ev,), daemon=True)
        t.start()
        stops.append((ev, t))
    elif cmd == "-" and stops:
        ev, t = stops.pop()
        ev.set()
        t.join()
    print(threading.active_count(), flush=True)
"#;

/// Prints its `Threads:` from `/proc/self/status`, waits for a line on stdin, then starts one
/// thread every 100 ms up to 30, printing the count after each, then `done`; then parks.
const GROWER: &str = r#"
import sys, threading, time
def threads():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
stop = threading.Event()
print(threads(), flush=True)
sys.stdin.readline()
for _ in range(30):
    time.sleep(0.1)
    threading.Thread(target=stop.wait, daemon=True).start()
    print(threads(), flush=True)
print("done", flush=True)
stop.wait()
"#;

struct Leaky {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Leaky {
    /// Starts the child as `<dir>/<name>` (a symlink to python3), so its process name is `name`.
    fn start(dir: &Path, name: &str) -> Option<Leaky> {
        Leaky::start_script(dir, name, CHILD)
    }

    /// Starts `script` as `<dir>/<name>` (see [`Leaky::start`]).
    fn start_script(dir: &Path, name: &str, script: &str) -> Option<Leaky> {
        let python = ["/usr/bin/python3", "/usr/local/bin/python3"]
            .into_iter()
            .find(|p| Path::new(p).exists())?;
        let link = dir.join(name);
        std::os::unix::fs::symlink(python, &link).unwrap();
        let mut child = Command::new(&link)
            .args(["-u", "-c", script])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Some(Leaky {
            child,
            stdin,
            stdout,
        })
    }

    /// Sends one command and waits for the acknowledgement (Python's own thread count).
    fn send(&mut self, cmd: &str) -> u32 {
        writeln!(self.stdin, "{cmd}").unwrap();
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        line.trim().parse().unwrap()
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Leaky {
    fn drop(&mut self) {
        if self.child.kill().is_ok() {
            // Reap it; the exit status does not matter.
            self.child.wait().ok();
        }
    }
}

/// `Threads:` of `/proc/<pid>/status`, read here independently of the code under test.
fn proc_threads(pid: u32) -> u32 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("Threads:")).unwrap();
    line["Threads:".len()..].trim().parse().unwrap()
}

/// `VmRSS:` of `/proc/<pid>/status`, bytes.
fn proc_rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kib: u64 = line["VmRSS:".len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap();
    kib * 1024
}

fn t(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_773_000_000 + secs)
}

/// Of a child that starts no threads: this test process's own count changes whenever one of the
/// binary's other tests starts or ends.
#[test]
fn thread_count_matches_proc_status() {
    let mut child = Command::new("sleep").arg("60").spawn().unwrap();
    let pid = child.id();
    let (counted, read) = (
        cachewatch_core::platform::thread_count(pid),
        proc_threads(pid),
    );
    child.kill().ok();
    child.wait().ok();
    assert_eq!(counted, Some(read));
    assert_eq!(cachewatch_core::platform::thread_count(u32::MAX - 1), None);
}

#[test]
fn steady_thread_climb_of_a_child_is_flagged_with_its_figures() {
    let dir = tempfile::tempdir().unwrap();
    let Some(mut leaky) = Leaky::start(dir.path(), "cw-leaky-thr") else {
        println!("skipped: no python3 to run the child process");
        return;
    };
    let pid = leaky.pid();
    let mut watcher = ProcessWatcher::new(vec![ProcessWatchConfig {
        name: "cw-leaky-thr".to_owned(),
        min_thread_rise: 8,
        window_secs: 600,
        sample_interval_secs: 10,
    }]);
    // Baseline, then one more thread per sample, 12 samples 30 s apart (by the test's clock).
    assert_eq!(leaky.send("="), 1);
    let first = watcher.sample(t(0));
    assert_eq!(first.len(), 1, "{first:?}");
    let first_threads = proc_threads(pid);
    assert_eq!(first[&pid].threads, first_threads);
    assert!(watcher.suspects(t(0)).is_empty());
    let mut last = first[&pid];
    for i in 1..=12u64 {
        leaky.send("+");
        last = watcher.sample(t(i * 30))[&pid];
        assert_eq!(last.threads, proc_threads(pid), "sample {i}");
        if i == 2 {
            // Only +2 so far: not yet a leak.
            assert!(watcher.suspects(t(i * 30)).is_empty());
        }
    }
    let rss = proc_rss_bytes(pid);
    let suspects = watcher.suspects(t(360));
    assert_eq!(suspects.len(), 1, "{suspects:#?}");
    let s = &suspects[0];
    assert_eq!(s.pid, pid);
    assert_eq!(s.name, "cw-leaky-thr");
    assert_eq!(s.first.threads, first_threads);
    assert_eq!(s.last.threads, proc_threads(pid));
    assert_eq!(s.last.threads, first_threads + 12);
    assert_eq!(s.thread_rise, 12);
    assert_eq!(s.samples, 13);
    assert_eq!(s.falls, 0);
    // sysinfo and /proc read at slightly different moments: allow 1 MiB of drift.
    assert!(
        s.last.resident_bytes.abs_diff(rss) < 1024 * 1024,
        "{} vs {rss}",
        s.last.resident_bytes
    );
    assert_eq!(last, s.last);
    let msg = s.message();
    assert!(
        msg.contains(&format!(
            "went from {} to {} threads (+12) in 6 min over 13 samples",
            first_threads,
            first_threads + 12
        )),
        "{msg}"
    );
    assert_eq!(s.alert(t(360)).rule, "process-leak");

    // The window slides: 10 minutes later with no new threads, the rise has left the window.
    for i in 0..3u64 {
        leaky.send("=");
        watcher.sample(t(1000 + i * 30));
    }
    assert!(watcher.suspects(t(1060)).is_empty());
}

#[test]
fn sawtooth_and_flat_thread_counts_are_not_flagged() {
    let dir = tempfile::tempdir().unwrap();
    let Some(mut leaky) = Leaky::start(dir.path(), "cw-saw-thr") else {
        println!("skipped: no python3 to run the child process");
        return;
    };
    let pid = leaky.pid();
    let mut watcher = ProcessWatcher::new(vec![ProcessWatchConfig {
        name: "cw-saw-thr".to_owned(),
        min_thread_rise: 4,
        window_secs: 3600,
        sample_interval_secs: 10,
    }]);
    // +3 then -3, twice: ends where it started.
    let mut counts = Vec::new();
    for (i, cmd) in [
        "=", "+", "+", "+", "-", "-", "-", "+", "+", "+", "-", "-", "-",
    ]
    .iter()
    .enumerate()
    {
        leaky.send(cmd);
        counts.push(watcher.sample(t(i as u64 * 60))[&pid].threads);
    }
    let base = counts[0];
    assert_eq!(counts[3], base + 3);
    assert_eq!(*counts.last().unwrap(), base);
    assert!(watcher.suspects(t(720)).is_empty());
    assert_eq!(watcher.samples(pid).len(), 13);
    // Another process name is not sampled at all.
    let mut other = ProcessWatcher::new(vec![ProcessWatchConfig::named("cw-no-such-proc")]);
    assert!(other.sample(t(0)).is_empty());
}

#[test]
fn judge_needs_a_mostly_monotonic_rise_ending_at_the_top() {
    let s = |secs: u64, threads: u32| ProcSample {
        at: t(secs),
        threads,
        resident_bytes: 1000 * u64::from(threads),
    };
    let w = Duration::from_secs(600);
    // 10 → 20 in 10 steps with one dip: flagged, rise 10, 1 fall in 10 steps.
    let climb: Vec<ProcSample> = [10, 11, 12, 13, 12, 14, 15, 16, 18, 19, 20]
        .iter()
        .enumerate()
        .map(|(i, n)| s(i as u64 * 50, *n))
        .collect();
    let v = judge(7, "w", &climb, 8, w, t(500)).unwrap();
    assert_eq!((v.thread_rise, v.falls, v.samples), (10, 1, 11));
    assert_eq!(v.resident_growth_bytes, 10_000);
    // Rise below the minimum.
    assert!(judge(7, "w", &climb, 11, w, t(500)).is_none());
    // Peaked and fell back a little: the last is not the highest.
    let mut peaked = climb.clone();
    peaked.push(s(550, 19));
    assert!(judge(7, "w", &peaked, 8, w, t(550)).is_none());
    // Three falls in ten steps: too jagged.
    let jagged: Vec<ProcSample> = [10, 14, 12, 16, 14, 18, 16, 19, 19, 20, 21]
        .iter()
        .enumerate()
        .map(|(i, n)| s(i as u64 * 50, *n))
        .collect();
    assert!(judge(7, "w", &jagged, 8, w, t(500)).is_none());
    // Fewer than 3 samples in the window.
    assert!(judge(7, "w", &climb[..2], 1, w, t(50)).is_none());
}

/// `(first, last, rise)` from a process-leak message "... went from A to B threads (+R) ...".
fn leak_figures(message: &str) -> (u32, u32, u32) {
    let rest = message.split(" went from ").nth(1).unwrap();
    let mut words = rest.split_whitespace();
    let first = words.next().unwrap().parse().unwrap();
    assert_eq!(words.next(), Some("to"));
    let last = words.next().unwrap().parse().unwrap();
    assert_eq!(words.next(), Some("threads"));
    let rise = words
        .next()
        .unwrap()
        .trim_start_matches("(+")
        .trim_end_matches(')')
        .parse()
        .unwrap();
    (first, last, rise)
}

fn monitor_options(dir: &Path, rule: ProcessWatchConfig) -> MonitorOptions {
    let root_dir = dir.join("root");
    std::fs::create_dir(&root_dir).unwrap();
    let root = Root::new(RootKind::Cache, &root_dir).unwrap();
    let mut opts = MonitorOptions::new(vec![root], Arc::new(Catalogue::builtin()));
    opts.process_watch = vec![rule];
    // Only the process-leak alert is under test: the disk alerts depend on this machine's free
    // space (a CI machine under 10 GiB free fired `free-disk` into the same channel).
    opts.alerts.free_disk_min_bytes = 0;
    opts.alerts.disk_full_eta_min_hours = 0;
    opts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn monitor_alerts_a_thread_leak_once_with_the_proc_figures() {
    let dir = tempfile::tempdir().unwrap();
    let Some(mut leaky) = Leaky::start(dir.path(), "cw-mon-leak") else {
        println!("skipped: no python3 to run the child process");
        return;
    };
    let pid = leaky.pid();
    let clock = Arc::new(ManualClock::new(t(0)));
    let mut opts = monitor_options(
        dir.path(),
        ProcessWatchConfig {
            name: "cw-mon-leak".to_owned(),
            min_thread_rise: 5,
            window_secs: 600,
            // Only the interval's first, immediate tick samples by itself; the test samples.
            sample_interval_secs: 3600,
        },
    );
    opts.clock = clock.clone();
    let m = monitor::spawn(opts).unwrap();
    let mut alerts = m.alerts();
    leaky.send("=");
    let base = proc_threads(pid);
    assert!(m.sample_processes().await.unwrap().is_empty());
    for i in 1..=7u32 {
        leaky.send("+");
        let now_threads = proc_threads(pid);
        assert_eq!(now_threads, base + i);
        clock.advance(Duration::from_secs(30));
        let fired = m.sample_processes().await.unwrap();
        if i < 5 {
            assert!(fired.is_empty(), "+{i}: {fired:#?}");
            assert!(alerts.try_recv().is_err());
            continue;
        }
        if i > 5 {
            // Still climbing, but the name alerted within the cooldown.
            assert!(fired.is_empty(), "+{i}: {fired:#?}");
            assert!(alerts.try_recv().is_err());
            continue;
        }
        assert_eq!(fired.len(), 1, "{fired:#?}");
        let a = &fired[0];
        assert_eq!(a.rule, "process-leak");
        assert_eq!(a.title, "cw-mon-leak keeps gaining threads");
        assert_eq!(a.time_unix_secs, 1_773_000_000 + 150);
        assert!(
            a.message
                .contains(&format!("cw-mon-leak (pid {pid}) went from")),
            "{}",
            a.message
        );
        assert_eq!(leak_figures(&a.message), (base, now_threads, 5));
        assert!(a.message.contains("(+5) in 2 min 30 s"), "{}", a.message);
        // The same alert went out on the broadcast and into the snapshot's recent alerts.
        assert_eq!(alerts.try_recv().unwrap(), *a);
        assert_eq!(m.snapshot().alerts.first(), Some(a));
    }
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn monitor_samples_on_its_interval_and_alerts_a_growing_child() {
    let dir = tempfile::tempdir().unwrap();
    let Some(mut grower) = Leaky::start_script(dir.path(), "cw-mon-grow", GROWER) else {
        println!("skipped: no python3 to run the child process");
        return;
    };
    let pid = grower.pid();
    let opts = monitor_options(
        dir.path(),
        ProcessWatchConfig {
            name: "cw-mon-grow".to_owned(),
            min_thread_rise: 5,
            window_secs: 600,
            sample_interval_secs: 1,
        },
    );
    let m = monitor::spawn(opts).unwrap();
    let mut alerts = m.alerts();
    // The child is up (it printed its base count); one sample at the base, then let it grow.
    let mut line = String::new();
    grower.stdout.read_line(&mut line).unwrap();
    let base: u32 = line.trim().parse().unwrap();
    assert!(m.sample_processes().await.unwrap().is_empty());
    writeln!(grower.stdin, "go").unwrap();
    // Bounded wait for the broadcast: the child grows 10 threads a second, samples are 1 s apart.
    let a = tokio::time::timeout(Duration::from_secs(60), alerts.recv())
        .await
        .expect("no process-leak alert within 60 s")
        .unwrap();
    assert_eq!(a.rule, "process-leak");
    assert_eq!(a.title, "cw-mon-grow keeps gaining threads");
    assert!(
        a.message
            .contains(&format!("cw-mon-grow (pid {pid}) went from")),
        "{}",
        a.message
    );
    // Every thread count the child went through, as its own /proc/self/status said.
    let mut counts = vec![base];
    loop {
        let mut line = String::new();
        grower.stdout.read_line(&mut line).unwrap();
        match line.trim() {
            "done" => break,
            n => counts.push(n.parse::<u32>().unwrap()),
        }
    }
    assert_eq!(counts.len(), 31);
    assert_eq!(*counts.last().unwrap(), proc_threads(pid));
    let (first, last, rise) = leak_figures(&a.message);
    assert!(counts.contains(&first), "{first} not in {counts:?}");
    assert!(counts.contains(&last), "{last} not in {counts:?}");
    assert_eq!(last - first, rise);
    assert!(rise >= 5, "{}", a.message);
    m.shutdown().await;
}
