//! `iozone`: iozone's text table (`kB  reclen  write  rewrite ...`) -> `rows`, one object
//! per row of every table in the output, numbers in iozone's own kB/s.
//!
//! The table is read by column position, not by splitting on spaces: a test left out
//! (`-i 0 -i 2` has no read or reread) leaves its columns blank, and the numbers of the
//! later columns then sit under their own headers. Each number belongs to the header
//! whose right edge is nearest its own (iozone prints numbers one character right of
//! some headers). A blank column is an absent key; a printed `0` is the value 0.

use serde_json::{Map, Value};

use super::text::{excerpt, quote_found};
use super::{EXCERPT_CHARS, Keys, ParseError, Parser, json_number, parse_number};
use crate::model::ParserOptions;

pub struct Iozone;

impl Parser for Iozone {
    fn name(&self) -> &'static str {
        "iozone"
    }
    fn parse(&self, _: &ParserOptions, stdout: &str, _stderr: &str) -> Result<Value, ParseError> {
        parse_iozone(stdout)
    }
    fn keys(&self, _: &ParserOptions) -> Keys {
        Keys::Roots(&["rows"])
    }
    fn result_lines<'a>(&self, _: &ParserOptions, text: &'a str) -> Vec<&'a str> {
        text.lines()
            .filter(|l| is_header(&expand_tabs(l)))
            .collect()
    }
}

/// How far (in characters) a number's right edge may sit from its header's.
const TOLERANCE: usize = 3;

/// The words of a line with the (0-based, exclusive) column where each ends.
fn words(line: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in line.char_indices().chain([(line.len(), ' ')]) {
        match (c.is_whitespace(), start) {
            (false, None) => start = Some(i),
            (true, Some(s)) => {
                out.push((line[..i].chars().count(), &line[s..i]));
                start = None;
            }
            _ => {}
        }
    }
    out
}

/// Tabs to spaces at 8-column stops, so positions are columns as a terminal shows them.
fn expand_tabs(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut col = 0;
    for c in line.chars() {
        if c == '\t' {
            let next = (col / 8 + 1) * 8;
            out.extend(std::iter::repeat_n(' ', next - col));
            col = next;
        } else {
            out.push(c);
            col += 1;
        }
    }
    out
}

fn is_header(line: &str) -> bool {
    let w = words(line);
    w.len() >= 3 && w[0].1 == "kB" && w[1].1 == "reclen"
}

/// The header's columns: right edge and name. A word of the line above that ends where
/// a column ends qualifies it (`random` over `read` is `random_read`), provided every
/// word of that line does (it is then the qualifier line, not some other text).
fn columns(header: &str, above: Option<&str>) -> Vec<(usize, String)> {
    let mut cols: Vec<(usize, String)> = words(header)
        .into_iter()
        .map(|(end, w)| (end, w.to_string()))
        .collect();
    let above: Vec<(usize, &str)> = above.map(words).unwrap_or_default();
    let ends: Vec<usize> = cols.iter().map(|(e, _)| *e).collect();
    let qualifies = |end: usize| ends.iter().position(|e| e.abs_diff(end) <= 1);
    let aligned = !above.is_empty()
        && above.iter().all(|(end, w)| {
            w.chars().all(|c| c.is_ascii_alphabetic()) && qualifies(*end).is_some()
        });
    if aligned {
        for (end, w) in above {
            if let Some(i) = qualifies(end) {
                cols[i].1 = format!("{w}_{}", cols[i].1);
            }
        }
    }
    cols
}

fn parse_iozone(stdout: &str) -> Result<Value, ParseError> {
    let lines: Vec<String> = stdout.lines().map(expand_tabs).collect();
    let mut rows = Vec::new();
    let mut tables = 0;
    let mut i = 0;
    while i < lines.len() {
        if !is_header(&lines[i]) {
            i += 1;
            continue;
        }
        let above = i.checked_sub(1).map(|j| lines[j].as_str());
        let cols = columns(&lines[i], above);
        let header_line = i + 1;
        i += 1;
        let first = rows.len();
        while i < lines.len() {
            let w = words(&lines[i]);
            if w.is_empty() || !w.iter().all(|(_, t)| parse_number(t).is_some()) {
                break;
            }
            rows.push(row(&cols, &w, i + 1, tables, &lines[i])?);
            i += 1;
        }
        if rows.len() == first {
            return Err(ParseError::new(format!(
                "iozone: the table whose header is line {header_line} has no rows; \
                 the line after it is {} (did iozone stop with an error?)",
                quote_found(lines.get(header_line).map_or("", String::as_str))
            )));
        }
        tables += 1;
    }
    if rows.is_empty() {
        return Err(ParseError::new(format!(
            "iozone: expected iozone's table (a header line starting `kB  reclen`), found {}",
            quote_found(stdout)
        )));
    }
    let mut doc = Map::new();
    doc.insert("rows".into(), Value::Array(rows));
    Ok(Value::Object(doc))
}

/// One row: each number under the column whose right edge is nearest its own.
fn row(
    cols: &[(usize, String)],
    w: &[(usize, &str)],
    line_no: usize,
    table: usize,
    line: &str,
) -> Result<Value, ParseError> {
    let mut out = Map::new();
    out.insert("table".into(), Value::from(table));
    for (end, text) in w {
        let nearest = cols
            .iter()
            .min_by_key(|(e, _)| e.abs_diff(*end))
            .filter(|(e, _)| e.abs_diff(*end) <= TOLERANCE);
        let Some((_, name)) = nearest else {
            return Err(ParseError::new(format!(
                "iozone: line {line_no}: `{text}` is under no column of the header: `{}`",
                excerpt(line.trim(), 2 * EXCERPT_CHARS)
            )));
        };
        // parse_number accepted every word of the row already.
        let value = parse_number(text).unwrap_or_default();
        if out.insert(name.clone(), json_number(value)).is_some() {
            return Err(ParseError::new(format!(
                "iozone: line {line_no}: two numbers under column `{name}`: `{}`",
                excerpt(line.trim(), 2 * EXCERPT_CHARS)
            )));
        }
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUALIFIERS: &str = "                                                              random    random     bkwd    record    stride                                    ";
    const HEADER: &str = "              kB  reclen    write  rewrite    read    reread    read     write     read   rewrite      read   fwrite frewrite    fread  freread";

    fn table(rows: &[&str]) -> String {
        format!(
            "{QUALIFIERS}\n{HEADER}\n{}\n\niozone test complete.\n",
            rows.join("\n")
        )
    }

    #[test]
    fn blank_columns_are_absent_and_zero_is_a_value() {
        let doc = parse_iozone(&table(&[
            "          102400    1024   385198   389054                     379221   387988",
            "           81920       4    10696    12957    14985        0    11129    10138",
        ]))
        .unwrap();
        let rows = doc["rows"].as_array().unwrap();
        assert_eq!(rows[0]["random_read"], 379221);
        assert_eq!(rows[0]["random_write"], 387988);
        assert!(rows[0].get("read").is_none() && rows[0].get("reread").is_none());
        assert_eq!(rows[1]["reread"], 0);
        assert_eq!(rows[1]["read"], 14985);
        assert_eq!(rows[1]["kB"], 81920);
        assert_eq!(rows[1]["reclen"], 4);
    }

    #[test]
    fn without_the_qualifier_line_columns_keep_their_plain_names() {
        let text = format!("{HEADER}\n           81920       4    26108    30373    31869\n");
        let doc = parse_iozone(&text).unwrap();
        assert_eq!(doc["rows"][0]["read"], 31869);
        // Unrelated text above the header qualifies nothing.
        let text = format!("\tFile stride size set to 17 * record size.\n{text}");
        assert_eq!(parse_iozone(&text).unwrap()["rows"][0]["write"], 26108);
    }

    #[test]
    fn tabs_count_as_the_columns_a_terminal_shows() {
        assert_eq!(expand_tabs("\tab\tc"), "        ab      c");
        // A tab is 8 columns here: the kB value ends where its header does.
        let doc = parse_iozone(&format!("{HEADER}\n\t   81920       4    26108\n")).unwrap();
        assert_eq!(doc["rows"][0]["write"], 26108);
    }

    #[test]
    fn misaligned_and_missing_tables_are_errors() {
        let e = parse_iozone(&table(&["  81920    4   26108"])).unwrap_err();
        assert!(e.0.contains("under no column"), "{e}");
        let e = parse_iozone("iozone: command not found\n").unwrap_err();
        assert!(e.0.contains("a header line starting `kB  reclen`"), "{e}");
        let e = parse_iozone(&format!("{HEADER}\nError writing block 12\n")).unwrap_err();
        assert!(e.0.contains("has no rows"), "{e}");
        assert!(e.0.contains("Error writing block 12"), "{e}");
    }
}
