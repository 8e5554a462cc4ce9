//! Reports: a pure function of (scenario, store contents) -> Markdown, HTML.
