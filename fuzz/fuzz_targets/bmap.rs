//! Fuzz target: a `.bmap` block map (`benchpipe::fuzzing::bmap`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| benchpipe::fuzzing::bmap(data));
