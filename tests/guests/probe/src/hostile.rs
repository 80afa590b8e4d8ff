//! The hostile actions, which only the host's limits can stop: a spinning loop, a memory bomb,
//! unbounded recursion, an output flood. `black_box` and a global counter keep the optimizer from
//! removing the work; an allocation failure aborts (a trap), which is the point.

use std::hint::black_box;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};

use agl_sdk::{Ctx, Result, Trace};

const MIB: usize = 1024 * 1024;

/// Never returns: the host's CPU limit (epoch deadline or fuel) has to stop it.
pub fn spin() -> Result<Option<f64>> {
    let mut turns: u64 = 0;
    loop {
        turns = black_box(turns.wrapping_add(1));
    }
}

/// Never returns: allocates 16 MiB chunks, touching every page, until the memory limit traps it.
pub fn memory_bomb() -> Result<Option<f64>> {
    const CHUNK: usize = 16 * MIB;
    let mut hoard: Vec<Vec<u8>> = Vec::new();
    loop {
        let mut chunk = vec![0u8; CHUNK];
        for page in (0..CHUNK).step_by(4096) {
            chunk[page] = 1;
        }
        hoard.push(black_box(chunk));
    }
}

/// Levels entered by [`deep_recursion`]; a global, so that the frames need no linear memory.
static DEPTH: AtomicU64 = AtomicU64::new(0);

/// Recurses until wasm's call stack is exhausted (wasmtime's stack-overflow trap). Each level keeps
/// its frame (the global is read again after the inner call returns, so this is no tail call and no
/// accumulator loop) but puts nothing on Rust's shadow stack in linear memory, which would otherwise
/// overflow first and show up as an out-of-bounds access instead.
#[inline(never)]
pub fn deep_recursion() -> u64 {
    let depth = DEPTH.fetch_add(1, Ordering::Relaxed);
    if depth == u64::MAX {
        return depth;
    }
    let below = deep_recursion();
    below.wrapping_add(DEPTH.load(Ordering::Relaxed))
}

/// Writes `bytes` bytes to stdout and a sixteenth of that to stderr, in 64 KiB lines; a write error
/// (a closed stream) stops that stream and is logged. Returns 1.0.
pub fn stdout_flood(ctx: &Ctx, bytes: usize) -> f64 {
    let mut line = vec![b'x'; 64 * 1024];
    if let Some(last) = line.last_mut() {
        *last = b'\n';
    }
    let to_stdout = flood(&mut std::io::stdout().lock(), &line, bytes);
    let to_stderr = flood(&mut std::io::stderr().lock(), &line, bytes / 16);
    for (stream, (written, error)) in [("stdout", to_stdout), ("stderr", to_stderr)] {
        match error {
            None => ctx.info(&format!("stdout_flood: wrote {written} bytes to {stream}")),
            Some(err) => ctx.warn(&format!("stdout_flood: {stream} failed after {written} bytes: {err}")),
        }
    }
    1.0
}

/// Writes `total` bytes of `line` repeated; returns how much was written and the error, if any.
fn flood(out: &mut impl Write, line: &[u8], total: usize) -> (usize, Option<std::io::Error>) {
    let mut written = 0;
    while written < total {
        let n = line.len().min(total - written);
        if let Err(err) = out.write_all(&line[..n]) {
            return (written, Some(err));
        }
        written += n;
    }
    (written, out.flush().err())
}

/// `count` trace calls of `kind` (`log`, `message`, `object`, `operation`), each carrying a
/// `bytes`-byte string: what a guest can make the host hold in spans.
pub fn trace_flood(ctx: &Ctx, kind: &str, count: u32, bytes: usize) -> Result<()> {
    let text = "y".repeat(bytes);
    let object = agl_sdk::serde_json::json!({ "blob": text });
    for _ in 0..count {
        match kind {
            "log" => ctx.info(&text),
            "message" => ctx.message(&text),
            "object" => ctx.object(&object)?,
            "operation" => ctx.operation(&text, || Ok(()))?,
            other => return Err(agl_sdk::Error::new(format!("trace_flood: unknown kind {other:?}"))),
        }
    }
    Ok(())
}
