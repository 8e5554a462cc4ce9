//! Matrix expansion and cell keys: pure, no I/O.
