//! The `@@name` sections a board command prints (facts, fingerprint, storage and link
//! probes), parsed once, purely and with bounds: what the board printed is hostile.

/// The most of a command's output that is read; the rest is ignored.
pub const MAX_TEXT_BYTES: usize = 1 << 20;
/// The most sections kept; later ones are ignored.
pub const MAX_SECTIONS: usize = 256;
/// The most lines kept per section; later ones are ignored.
pub const MAX_LINES: usize = 4096;
/// The longest section name; a longer `@@` line starts no section (its lines are dropped).
pub const MAX_NAME_BYTES: usize = 512;

/// The sections of one output, in the order printed: `@@name` starts one (its name
/// trimmed), each following line belongs to it, and lines before the first are dropped.
/// A name printed twice is two sections (`iter` gives both, `get` the first).
#[derive(Debug, Default, PartialEq)]
pub struct Sections<'a> {
    list: Vec<(&'a str, Vec<&'a str>)>,
}

/// Parses `text`, bounded by `MAX_TEXT_BYTES`, `MAX_SECTIONS`, `MAX_LINES` and
/// `MAX_NAME_BYTES`.
pub fn parse(text: &str) -> Sections<'_> {
    let mut end = text.len().min(MAX_TEXT_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut list: Vec<(&str, Vec<&str>)> = Vec::new();
    // Whether lines go to the last section: not before the first, nor after a refused one.
    let mut open = false;
    for line in text[..end].lines() {
        if let Some(name) = line.strip_prefix("@@") {
            open = name.len() <= MAX_NAME_BYTES && list.len() < MAX_SECTIONS;
            if open {
                list.push((name.trim(), Vec::new()));
            }
        } else if open
            && let Some((_, lines)) = list.last_mut()
            && lines.len() < MAX_LINES
        {
            lines.push(line);
        }
    }
    Sections { list }
}

impl<'a> Sections<'a> {
    /// Every section, in the order printed.
    pub fn iter(&self) -> impl Iterator<Item = (&'a str, &[&'a str])> + '_ {
        self.list.iter().map(|(n, l)| (*n, l.as_slice()))
    }

    /// The lines of the first section named `name`.
    pub fn get(&self, name: &str) -> Option<&[&'a str]> {
        self.list
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, l)| l.as_slice())
    }

    /// The first section named `name`, its lines joined and trimmed.
    pub fn joined(&self, name: &str) -> Option<String> {
        self.get(name).map(|l| l.join("\n").trim().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_keep_order_names_trimmed_and_lines_before_the_first_dropped() {
        let s = parse("junk\n@@a\n1\n2\n@@ b c \n\n@@a\n3\n@@empty\n");
        let all: Vec<_> = s.iter().collect();
        assert_eq!(
            all,
            vec![
                ("a", &["1", "2"][..]),
                ("b c", &[""][..]),
                ("a", &["3"][..]),
                ("empty", &[][..])
            ]
        );
        assert_eq!(s.get("a"), Some(&["1", "2"][..]));
        assert_eq!(s.joined("b c").as_deref(), Some(""));
        assert_eq!(s.get("junk"), None);
        assert_eq!(parse(""), Sections::default());
        assert_eq!(parse("no sections\nat all\n").iter().count(), 0);
    }

    #[test]
    fn hostile_output_is_bounded() {
        // Endless sections, endless lines, a huge name and more text than is read.
        let many = "@@s\n".repeat(MAX_SECTIONS * 4);
        assert_eq!(parse(&many).iter().count(), MAX_SECTIONS);
        let lines = format!("@@s\n{}", "x\n".repeat(MAX_LINES * 4));
        assert_eq!(parse(&lines).get("s").unwrap().len(), MAX_LINES);
        let long = format!("@@{}\nvalue\n@@ok\n1\n", "n".repeat(MAX_NAME_BYTES + 1));
        let s = parse(&long);
        assert_eq!(s.iter().count(), 1, "the long name starts no section");
        assert_eq!(s.get("ok"), Some(&["1"][..]));
        let big = format!("@@a\n{}\n@@late\n1\n", "y".repeat(MAX_TEXT_BYTES));
        assert_eq!(parse(&big).get("late"), None, "beyond the bound: not read");
        // A cut inside a multi-byte character does not panic.
        let wide = format!("@@a\n{}", "é".repeat(MAX_TEXT_BYTES));
        assert_eq!(parse(&wide).iter().count(), 1);
        // Controls and CRs are kept as printed: a caller cleans what it shows.
        let s = parse("@@a\r\nv\u{1b}[2J\r\n");
        assert_eq!(s.get("a"), Some(&["v\u{1b}[2J"][..]));
    }
}
