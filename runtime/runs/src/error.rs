//! What can go wrong finding, opening and keeping runs.

use agl_store::StoreError;
use agl_store_db::DbError;

/// An error of this crate.
#[derive(Debug, thiserror::Error)]
pub enum RunsError {
    /// What the user gave names no run, several, or one that cannot be used: theirs to fix.
    #[error("{0}")]
    Input(String),
    /// The store could not be opened (or its URL read).
    #[error(transparent)]
    Db(#[from] DbError),
    /// The store failed while reading or writing `what`.
    #[error("{what}")]
    Store {
        what: String,
        #[source]
        source: StoreError,
    },
}

impl RunsError {
    /// Whether the user's input is at fault (a bad RUN, a store that cannot be opened), rather
    /// than the store failing.
    pub fn is_input(&self) -> bool {
        matches!(self, Self::Input(_) | Self::Db(_))
    }

    pub(crate) fn store(what: impl Into<String>) -> impl FnOnce(StoreError) -> Self {
        let what = what.into();
        move |source| Self::Store { what, source }
    }
}
