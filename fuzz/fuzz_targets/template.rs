//! Fuzz target: a recipe's command template, rendered as apply renders it and checked as `check` checks it (`benchpipe::fuzzing::template`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| benchpipe::fuzzing::template(data));
