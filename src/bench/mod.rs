//! Running one recipe on one board: templates, parsing tool output into metrics.

pub mod parse;
