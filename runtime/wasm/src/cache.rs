//! On-disk cache of compiled components, keyed by the component's content hash and the engine's
//! compatibility fingerprint: a Python or JS component takes seconds to compile, milliseconds to
//! load once compiled. Entries are written atomically; a corrupt or stale entry is recompiled.
//!
//! Loading an entry trusts it as native code (`Component::deserialize_file`), so the cache lives
//! in the user's own cache directory, never in a place others can write. Entries are memory
//! mapped: they are only ever replaced by rename, never rewritten in place.

use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use wasmtime::Engine;
use wasmtime::component::Component;

/// Where compiled components go: `$AGL_CACHE_DIR`, else `$XDG_CACHE_HOME/agl-host`, else
/// `~/.cache/agl-host`.
pub fn default_cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("AGL_CACHE_DIR") {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
        return Some(PathBuf::from(dir).join("agl-host"));
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache").join("agl-host"))
}

/// A stable 64-bit FNV-1a hasher, for the engine fingerprint.
struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 ^= u64::from(*byte);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// How a component was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compiled {
    /// Loaded from the cache.
    Cached,
    /// Compiled now (and stored, when a cache is configured).
    Fresh,
}

#[derive(Debug, Clone)]
pub struct ComponentCache {
    dir: PathBuf,
}

/// A component's identity: the lowercase hex SHA-256 of its bytes.
pub fn component_digest(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

impl ComponentCache {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The entry for `bytes` compiled by `engine`.
    pub fn entry_path(&self, engine: &Engine, bytes: &[u8]) -> PathBuf {
        let mut fingerprint = Fnv(0xcbf2_9ce4_8422_2325);
        engine.precompile_compatibility_hash().hash(&mut fingerprint);
        let hex = component_digest(bytes);
        self.dir.join(format!("{hex}-{:016x}.cwasm", fingerprint.finish()))
    }

    /// Loads the compiled form of `bytes`, compiling and storing it if it is not cached yet.
    /// Cache trouble (unwritable dir, corrupt entry) never fails the load: it falls back to compiling.
    pub fn load_or_compile(&self, engine: &Engine, bytes: &[u8]) -> wasmtime::Result<(Component, Compiled)> {
        let path = self.entry_path(engine, bytes);
        if path.is_file() {
            // SAFETY: entries are written only by `store` below, from our own compilation, into
            // the user's private cache directory; a truncated or foreign file fails validation.
            if let Ok(component) = unsafe { Component::deserialize_file(engine, &path) } {
                return Ok((component, Compiled::Cached));
            }
        }
        let component = Component::new(engine, bytes)?;
        self.store(&path, &component);
        Ok((component, Compiled::Fresh))
    }

    fn store(&self, path: &Path, component: &Component) {
        let Ok(serialized) = component.serialize() else { return };
        if std::fs::create_dir_all(&self.dir).is_err() {
            return;
        }
        let temporary = path.with_extension(format!("tmp{}", std::process::id()));
        if std::fs::write(&temporary, serialized).is_ok() && std::fs::rename(&temporary, path).is_err() {
            let _ = std::fs::remove_file(&temporary);
        }
    }
}
