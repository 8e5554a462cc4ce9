//! Integration tests: spine.
