//! Settings of the C heap (glibc's malloc), which SQLite allocates from (the Rust side uses
//! mimalloc). Applied once, first thing in `main`.

/// Keep up to this much freed memory at the top of a malloc arena instead of handing it back.
///
/// SQLite's writer frees its in-memory savepoint journal at the end of every call; with glibc's
/// default threshold (128 KiB, adjusted at run time) each such free trimmed the thread's arena
/// with `madvise`, and every `madvise` interrupts the other cores to flush their TLBs: a sixth of
/// the writer's time under a dequeue load (`perf`, `cargo bench -p agl-host --bench store_load`).
const TRIM_THRESHOLD: i32 = 64 << 20;

pub fn configure() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only changes a malloc parameter; called before any thread is started.
    unsafe {
        libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD);
    }
}
