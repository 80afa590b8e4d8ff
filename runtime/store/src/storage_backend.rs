//! What a backend supplies to the one generic store ([`crate::BackedStore`]): transactions over its
//! [`Storage`] and [`Rows`] (run a closure in one, committed before it answers), its name, how
//! it is opened, and its extras (a checkpoint, a structural self-check, how long a wait may sleep
//! unwoken). Everything else — the API, the watchdog tick, the waits, statistics, the run
//! record — is written once in [`crate::engine`].

use crate::backend::StoreOptions;
use crate::error::StoreResult;
use crate::notifier::Notifier;
use crate::rows::Rows;
use crate::storage::Storage;
use std::sync::Arc;
use std::time::Duration;

/// Whether a store may write to its storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    ReadWrite,
    /// Nothing is created, migrated or written, and the watchdog never runs; calls that write
    /// fail.
    ReadOnly,
}

/// What a transaction is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxKind {
    /// A call that changes things (a backend with several writers locks what it reads).
    Write,
    /// A read, in one snapshot (the watchdog may still act in it first).
    Read,
}

/// A store's storage: the transactions the generic store runs everything in.
pub trait StorageBackend: Send + Sync + 'static {
    /// One transaction's view of the records.
    type Tx<'t>: Storage + Rows;

    /// The store's class name, as its statistics give it (`InMemoryLightningStore`...).
    const NAME: &'static str;

    /// Whether a transaction's closure may run more than once (a backend that runs it again
    /// after a conflict with another writer): its arguments are then cloned for each run.
    const REPLAYS: bool;

    /// How long a wait sleeps at most before it looks again unwoken: where some finished
    /// rollouts go unheard (another process's commits), the delay that causes at most.
    const RECHECK: Option<Duration> = None;

    /// Runs `op` in one transaction and commits it; answers once it is committed. The backend
    /// tells its [`Notifier`] which rollouts the commit finished.
    fn transact<T, F>(&self, kind: TxKind, op: F) -> impl Future<Output = StoreResult<T>> + Send
    where
        T: Send + 'static,
        F: FnMut(&mut Self::Tx<'_>) -> StoreResult<T> + Send + 'static;

    /// Folds what is pending into the storage's main file; nothing to do by default.
    fn checkpoint(&self) -> impl Future<Output = StoreResult<()>> + Send {
        std::future::ready(Ok(()))
    }

    /// Checks the storage's own structural invariants (beyond what the API shows); the first
    /// violation found is the error. For tests and debugging.
    fn check_structure(&self) -> Result<(), String> {
        Ok(())
    }
}

/// How a store is opened: for [`crate::BackedStore::open`] and its siblings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opening {
    pub access: Access,
}

/// A backend opened at a `Target` (a file's path, a database's URL).
pub trait OpenBackend<Target: ?Sized>: StorageBackend + Sized {
    type Error;

    /// Opens the storage at `target`; the backend tells `notifier` which rollouts its commits
    /// finish.
    fn open_backend(
        target: &Target,
        opening: Opening,
        options: &StoreOptions,
        notifier: Arc<Notifier>,
    ) -> Result<Self, Self::Error>;
}
