//! Fuzz target: a scenario file through `check`'s loader, with the seed boards and the built-in recipes (`benchpipe::fuzzing::scenario`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| benchpipe::fuzzing::scenario(data));
