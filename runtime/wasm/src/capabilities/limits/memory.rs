//! The memory limit of one guest instance, and how much linear memory it took: wasmtime's
//! `StoreLimits` decides, and every growth it allows is added up, so an attempt can report the
//! memory its instance used (the instance's linear memories at their largest).

use wasmtime::{ResourceLimiter, StoreLimits, StoreLimitsBuilder};

/// A memory limit that remembers how much memory it let the guest have.
pub struct MeteredLimits {
    limits: StoreLimits,
    /// Bytes of linear memory granted so far, all memories together.
    granted: usize,
}

impl MeteredLimits {
    /// At most `memory_bytes` per linear memory; a refused growth traps the guest.
    pub fn new(memory_bytes: u64) -> Self {
        let limits = StoreLimitsBuilder::new()
            .memory_size(usize::try_from(memory_bytes).unwrap_or(usize::MAX))
            .trap_on_grow_failure(true)
            .build();
        Self { limits, granted: 0 }
    }

    /// Bytes of linear memory the instance was given (its memories' sizes at their largest).
    pub fn granted_bytes(&self) -> u64 {
        u64::try_from(self.granted).unwrap_or(u64::MAX)
    }
}

impl ResourceLimiter for MeteredLimits {
    fn memory_growing(&mut self, current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        let allowed = self.limits.memory_growing(current, desired, maximum)?;
        if allowed {
            self.granted = self.granted.saturating_add(desired.saturating_sub(current));
        }
        Ok(allowed)
    }

    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.limits.memory_grow_failed(error)
    }

    fn table_growing(&mut self, current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        self.limits.table_growing(current, desired, maximum)
    }

    fn table_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.limits.table_grow_failed(error)
    }

    fn instances(&self) -> usize {
        self.limits.instances()
    }

    fn tables(&self) -> usize {
        self.limits.tables()
    }

    fn memories(&self) -> usize {
        self.limits.memories()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_within_the_limit_is_counted_and_beyond_it_refused() {
        let mut limits = MeteredLimits::new(1 << 20);
        assert!(limits.memory_growing(0, 64 << 10, None).expect("allowed"));
        assert!(limits.memory_growing(64 << 10, 512 << 10, None).expect("allowed"));
        assert_eq!(limits.granted_bytes(), 512 << 10);
        assert!(
            limits.memory_growing(512 << 10, 2 << 20, None).is_err(),
            "over the limit traps"
        );
        assert_eq!(limits.granted_bytes(), 512 << 10);
    }
}
