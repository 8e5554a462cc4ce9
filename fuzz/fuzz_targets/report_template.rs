//! Fuzz target: a report template override, rendered with a report (`benchpipe::fuzzing::report_template`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| benchpipe::fuzzing::report_template(data));
