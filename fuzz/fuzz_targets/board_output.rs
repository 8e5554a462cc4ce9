//! Fuzz target: a board command's output through the parser of that command (`benchpipe::fuzzing::board_output`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| benchpipe::fuzzing::board_output(data));
