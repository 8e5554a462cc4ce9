//! Fuzz target: a pipeline recipe (`pipeline/NAME.toml`) through `check`'s loader (`benchpipe::fuzzing::recipe`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| benchpipe::fuzzing::recipe(data));
