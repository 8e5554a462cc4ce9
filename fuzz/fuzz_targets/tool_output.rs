//! Fuzz target: a benchmark tool's output through its parser and every built-in recipe's metrics (`benchpipe::fuzzing::tool_output`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| benchpipe::fuzzing::tool_output(data));
