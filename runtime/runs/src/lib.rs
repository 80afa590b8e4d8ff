//! The runs agl-host keeps, as libraries read and write them (the `agl-host` binary parses the
//! arguments and prints):
//!
//! - [`find`]: where kept runs are (`.agl/runs/`) and which store a RUN argument names;
//! - [`open`]: a kept store opened to read (read only, no watchdog), with its run record;
//! - [`list`]: every run of a folder with its record, newest first;
//! - [`record`]: a run's own record, written at its start and end ([`record::KeptRun`]);
//! - [`read`]: a run's rollouts and spans, page by page;
//! - [`span_tree`]: one attempt's spans as indented lines;
//! - [`text`]: text from a run (agents choose much of it) made safe to print.

pub mod error;
pub mod find;
pub mod list;
pub mod open;
pub mod read;
pub mod record;
pub mod span_tree;
pub mod text;

pub use error::RunsError;
pub use find::RUNS_DIR;
