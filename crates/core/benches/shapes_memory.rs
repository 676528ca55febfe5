//! Memory of name-shape grouping when a neighbour floods a root with distinct long shapes (prints
//! figures; not a test). Run with
//! `cargo bench -p cachewatch-core --bench shapes_memory` (add `--profile dev` for a quick run;
//! env `SHAPES_MEMORY_GROUPS=4096`, `SHAPES_MEMORY_MEMBERS=20`, `SHAPES_MEMORY_INTERLEAVE=1` to
//! add the members of all shapes in turn, as a directory listing mixes them).
//!
//! Feeds a [`Grouper`] GROUPS distinct shapes of names about 230 bytes long (a long literal word,
//! a tag, a 40-character random run), MEMBERS names each, so every shape is a group, then
//! finishes it, as a scan does. Prints the heap at its peak and what the finished groups hold,
//! measured by a counting allocator.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsStr;
use std::time::Instant;

use cachewatch_core::inventory::Measure;
use cachewatch_core::shapes::Grouper;
use cachewatch_testkit::heap;

#[global_allocator]
static A: heap::Counting = heap::Counting;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Letters no hex run holds, so the tag stays a literal word.
const TAG: &[u8] = b"ghijklmnopqrstuvwxyz";
const AN: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

fn main() {
    let groups = env("SHAPES_MEMORY_GROUPS", 4096);
    let members = env("SHAPES_MEMORY_MEMBERS", 20);
    let pad = "longname".repeat(22);
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut names = Vec::with_capacity(groups * members);
    for g in 0..groups {
        let tag: String = (0..4)
            .map(|k| TAG[(g / TAG.len().pow(k)) % TAG.len()] as char)
            .collect();
        for _ in 0..members {
            let run: String = (0..40)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    AN[(x % AN.len() as u64) as usize] as char
                })
                .collect();
            names.push(format!("{pad}{tag}-{run}"));
        }
    }
    if std::env::var("SHAPES_MEMORY_INTERLEAVE").is_ok_and(|v| v == "1") {
        // The order a directory lists them in: every shape's members spread over the whole run.
        let n = names.len();
        let mut spread = Vec::with_capacity(n);
        for k in 0..members {
            for g in 0..groups {
                spread.push(std::mem::take(&mut names[g * members + k]));
            }
        }
        names = spread;
    }
    let len = names.iter().map(String::len).max().unwrap_or(0);
    let m = Measure {
        allocated_bytes: 4096,
        apparent_bytes: 4096,
        files: 1,
        ..Measure::default()
    };
    let base = heap::mark();
    let t = Instant::now();
    let mut g = Grouper::new(10);
    for n in &names {
        g.add(OsStr::new(n), true, &m);
    }
    let added = heap::live() - base;
    let out = g.finish();
    let took = t.elapsed();
    let peak = heap::peak() - base;
    drop(g);
    let held = heap::live() - base;
    let mib = heap::mib;
    println!(
        "{} names of {len} bytes at most in {groups} shapes: {} groups, {} lone entries, {took:?}",
        names.len(),
        out.groups.len(),
        out.lone.len()
    );
    println!(
        "heap: grouper after adding {:.2} MiB; peak while grouping {:.2} MiB; finished groups {:.2} MiB ({} bytes per group)",
        mib(added),
        mib(peak),
        mib(held),
        held / out.groups.len().max(1) as isize
    );
}
