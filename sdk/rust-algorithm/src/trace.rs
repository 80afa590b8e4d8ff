//! The host's log and the algorithm's own operation spans: the agent SDK's [`Trace`] methods
//! (`log`, `info`, `warn`, `object`, `operation`, ...) on [`Host`], through the WIT `trace`
//! interface the two worlds share. Nothing here prints to stdout.

use crate::Host;

pub use agl_sdk::Trace;

impl Trace for Host {}
