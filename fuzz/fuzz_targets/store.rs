//! Fuzz target: a cell's store file, read back as `Store::read` reads it and reported on (`benchpipe::fuzzing::store`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| benchpipe::fuzzing::store(data));
