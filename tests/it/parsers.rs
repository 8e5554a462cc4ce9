//! Integration tests: parsers.
