//! A counting global allocator for the benchmarks that print heap figures: declare it in the
//! benchmark (`#[global_allocator] static A: heap::Counting = heap::Counting;`), then read
//! [`live`] and [`peak`] around what is measured.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

/// Forwards to the system allocator, counting the bytes live and their peak.
pub struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let now = LIVE.fetch_add(l.size() as isize, Ordering::Relaxed) + l.size() as isize;
        PEAK.fetch_max(now, Ordering::Relaxed);
        // SAFETY: forwarded as is to the system allocator.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded as is to the system allocator.
        unsafe { System.dealloc(p, l) }
    }
}

/// Bytes allocated and not yet freed.
pub fn live() -> isize {
    LIVE.load(Ordering::Relaxed)
}

/// The most bytes live at once since the last [`mark`].
pub fn peak() -> isize {
    PEAK.load(Ordering::Relaxed)
}

/// Starts a measurement: the peak restarts from what is live now, which is returned (subtract it
/// from [`live`] and [`peak`] to get what the measured code added).
pub fn mark() -> isize {
    let base = live();
    PEAK.store(base, Ordering::Relaxed);
    base
}

/// `bytes` in MiB, for printing.
pub fn mib(bytes: isize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}
