//! How this process uses memory, set once, first thing in `main`: the C heap (glibc's malloc,
//! which SQLite allocates from; the Rust side uses mimalloc) and transparent huge pages.

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
    refuse_transparent_huge_pages();
}

/// No transparent huge pages for this process (and the runner processes it starts, which inherit
/// the setting). mimalloc asks for them on its arenas, and with thousands of agents in flight
/// every instance's small allocations (its VM context, its HTTP connection) left 2 MiB pages
/// partly used: mimalloc's resident memory was 1.3–1.8× what it held (`cargo bench -p agl-host
/// --bench in_flight`: 396 → 223 MiB for 1,000 JavaScript agents in flight, 170 → 134 MiB for
/// 1,000 Rust agents). A kernel without the setting leaves things as they were.
fn refuse_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_THP_DISABLE takes plain integers and changes only this process's flags.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}
