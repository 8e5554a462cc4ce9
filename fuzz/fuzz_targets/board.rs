//! Fuzz target: a board file (`boards/NAME.toml`) through `check`'s loader (`benchpipe::fuzzing::board`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| benchpipe::fuzzing::board(data));
