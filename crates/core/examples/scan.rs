//! Times one scan of a root with the built-in catalogue: `cargo run --release --example scan --
//! KIND=PATH [THREADS]`. Prints the totals, the item counts per producer and the wall time, so the
//! scanner can be benchmarked before (and besides) the CLI.

use std::time::{Instant, SystemTime};

use cachewatch_core::scan::scan_root;
use cachewatch_core::{Catalogue, Root};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let root = Root::parse_arg(&args.next().ok_or("usage: scan KIND=PATH [THREADS]")?)?;
    let threads: Option<usize> = args.next().map(|t| t.parse()).transpose()?;
    let catalogue = Catalogue::builtin();
    let started = Instant::now();
    let scan = match threads {
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .stack_size(64 << 20)
            .build()?
            .install(|| scan_root(&root, &catalogue)),
        None => scan_root(&root, &catalogue),
    };
    let wall = started.elapsed();
    let inventory = cachewatch_core::Inventory {
        roots: vec![scan],
        scanned_at: SystemTime::now(),
    };
    let scan = &inventory.roots[0];
    println!(
        "root {} allocated_bytes {} apparent_bytes {} files {} dirs {} items {} issues {} vanished {}",
        root.canonical.display(),
        scan.total.allocated_bytes,
        scan.total.apparent_bytes,
        scan.total.files,
        scan.total.dirs,
        scan.items.len(),
        scan.issues.len(),
        scan.vanished,
    );
    for p in inventory.producers() {
        println!(
            "producer {} items {} allocated_bytes {}",
            p.id, p.items, p.measure.allocated_bytes
        );
    }
    println!("unattributed {}", inventory.unattributed().len());
    println!("wall_secs {:.3}", wall.as_secs_f64());
    Ok(())
}
