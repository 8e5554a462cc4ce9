//! Fuzz target: an OS image (xz, gzip, zstd, zip) decompressed as a flash streams it (`benchpipe::fuzzing::image_archive`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| benchpipe::fuzzing::image_archive(data));
