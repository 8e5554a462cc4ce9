//! The one integration-test binary. Each module is one area; cases are data-driven
//! where the area allows.

mod config;
mod lab;
mod parallel;
mod parsers;
mod spine;
mod stats;
mod storage;
mod telemetry;
