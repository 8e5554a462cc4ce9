//! Integration tests: lab.
