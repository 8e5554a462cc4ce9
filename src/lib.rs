//! benchpipe: declarative, reproducible benchmarking of single-board computers.
//!
//! See ARCHITECTURE.md for the map. In one line: config files -> validated model ->
//! plan (pure) -> apply (walks the plan, writes the store) -> statistics and reports
//! (pure functions of the store).

pub mod apply;
pub mod bench;
pub mod canonical;
pub mod cell;
pub mod check;
pub mod cli;
pub mod config;
pub mod diag;
pub mod error;
pub mod failure;
pub mod flash;
#[doc(hidden)]
pub mod fuzzing;
pub mod glob;
pub mod image;
pub mod lab;
pub mod model;
pub mod network;
pub mod owned;
pub mod parallel;
pub mod plan;
pub mod power;
pub mod preflight;
pub mod private_file;
pub mod probe;
pub mod progress;
pub mod report;
pub mod secrets;
pub mod sections;
pub mod shown;
pub mod stats;
pub mod storage;
pub mod store;
pub mod telemetry;
pub mod transport;

#[cfg(test)]
mod testing;
#[cfg(test)]
mod tidy;

pub use error::{Error, Result};
