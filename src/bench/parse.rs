//! Tool output -> a JSON document -> metric values. A closed set of parsers, each tested
//! on output captured from the real tool, and the metric-path language that selects a
//! number from the document (`jobs[jobname=randread].read.bw_bytes`).
//!
//! Metric path grammar:
//!
//! ```text
//! path     := first rest*
//! first    := key | selector
//! rest     := '.' key | selector
//! key      := one or more characters other than '.', '[' and ']'
//! selector := '[' digits ']'                index into an array
//!           | '[' field '=' value ']'       the array element whose `field` equals `value`
//!           | '[' '"' text '"' ']'          an object key that holds '.', '[' or ']'
//! ```
//!
//! The quoted form exists for keys such as fio's percentiles (`"99.000000"`):
//! `jobs[0].read.clat_ns.percentile["99.000000"]`.

use serde_json::{Map, Value};

use crate::model::ParserKind;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", escape_controls(.0))]
pub struct ParseError(pub String);

impl ParseError {
    /// An error whose text carries no control byte: each is shown escaped (`\x1b`).
    pub fn new(message: impl Into<String>) -> Self {
        ParseError(escape_controls(&message.into()).into_owned())
    }
}

/// Text as a terminal would show it, for parsers to match: escape sequences removed
/// (CSI `\e[0;1m`, OSC `\e]0;title\a`, charset selection `\e(B`, and other two-byte
/// `\e` sequences), a lone carriage return made a line break (progress lines that
/// overwrite themselves), and every other control character dropped except tab and
/// newline. Real hdparm logs from Raspberry Pi benchmark scripts carry `\e(B\e[m`
/// right after `MB/sec`.
pub fn visible(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                // CSI: parameter and intermediate bytes, then one final byte.
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('\u{40}'..='\u{7e}').contains(&c) {
                            break;
                        }
                    }
                }
                // OSC, DCS, SOS, PM, APC: up to BEL or ST (`\e\\`).
                Some(']' | 'P' | 'X' | '^' | '_') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' {
                            break;
                        }
                        if c == '\u{1b}' {
                            if chars.peek() == Some(&'\\') {
                                chars.next();
                            }
                            break;
                        }
                    }
                }
                // Character set designation takes one more character.
                Some('(' | ')' | '*' | '+' | '-' | '.' | '/' | '%' | '#') => {
                    chars.next();
                }
                _ => {}
            },
            '\r' if chars.peek() == Some(&'\n') => {}
            '\r' => out.push('\n'),
            // C1 CSI, the 8-bit form of `\e[`.
            '\u{9b}' => {
                for c in chars.by_ref() {
                    if ('\u{40}'..='\u{7e}').contains(&c) {
                        break;
                    }
                }
            }
            '\t' | '\n' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// `text` with every control character shown as an escape (`\x1b`, `\n`),
/// so that quoting tool output in a message can never drive a terminal.
pub fn escape_controls(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// How much of the found text an error quotes.
const EXCERPT_CHARS: usize = 80;

/// Turns a tool's output into a document that metric paths select from. Both streams
/// are matched as a terminal shows them (`visible`). When the result is not on the
/// stream the parser reads but the other stream holds it (a command that redirects
/// it), the error says so.
pub fn parse(kind: ParserKind, stdout: &str, stderr: &str) -> Result<Value, ParseError> {
    let (stdout, stderr) = (visible(stdout), visible(stderr));
    let err = match parse_streams(kind, &stdout, &stderr) {
        Ok(doc) => return Ok(doc),
        Err(e) => e,
    };
    // The same parser with the streams swapped: does the other one hold the result?
    let (read, other, other_result) = if reads_stderr(kind) {
        (
            "stderr",
            ("stdout", &stdout),
            parse_streams(kind, "", &stdout),
        )
    } else {
        (
            "stdout",
            ("stderr", &stderr),
            parse_streams(kind, &stderr, ""),
        )
    };
    if other_result.is_err() {
        return Err(err);
    }
    let lines = result_lines(kind, other.1);
    let n = lines.len();
    Err(ParseError::new(format!(
        "{tool}: no {tool} result on {read}, where it is read; {name} has {n} line{s} that look{v} like it: `{first}` (redirected by the command?); {err}",
        tool = kind.name(),
        name = other.0,
        s = if n == 1 { "" } else { "s" },
        v = if n == 1 { "s" } else { "" },
        first = excerpt(lines.first().copied().unwrap_or_default(), EXCERPT_CHARS),
        err = err.0,
    )))
}

fn parse_streams(kind: ParserKind, stdout: &str, stderr: &str) -> Result<Value, ParseError> {
    match kind {
        ParserKind::FioJson => parse_fio(stdout),
        ParserKind::Time => parse_time(stderr),
        ParserKind::Iperf3Json => parse_iperf3(stdout),
        ParserKind::Json => parse_json_document("json", "a JSON document on stdout", stdout),
        ParserKind::Hdparm => parse_hdparm(stdout, stderr),
        ParserKind::Dd => parse_dd(stderr),
    }
}

/// GNU time and dd report on stderr; the other tools on stdout.
fn reads_stderr(kind: ParserKind) -> bool {
    matches!(kind, ParserKind::Time | ParserKind::Dd)
}

/// The lines of `text` that look like `kind`'s result, for an error to quote.
fn result_lines(kind: ParserKind, text: &str) -> Vec<&str> {
    let looks = |line: &str| -> bool {
        let l = line.trim();
        match kind {
            ParserKind::Hdparm => l.starts_with("Timing ") && l.contains(" = "),
            ParserKind::Time => {
                let fields: Vec<&str> = l.split_whitespace().collect();
                fields.len() == 4 && fields.iter().all(|f| parse_number(f).is_some())
            }
            ParserKind::Dd => l.contains(" bytes") && l.contains("copied,"),
            // A JSON document: its lines from the first `{` on.
            ParserKind::FioJson | ParserKind::Iperf3Json | ParserKind::Json => !l.is_empty(),
        }
    };
    let text = match kind {
        ParserKind::FioJson | ParserKind::Iperf3Json | ParserKind::Json => {
            text.find(['{', '[']).map_or("", |i| &text[i..])
        }
        _ => text,
    };
    text.lines().filter(|l| looks(l)).collect()
}

/// fio prints notes and per-job errors (`fio: pid=..., err=28/...`) before its JSON, so
/// parsing starts at the first `{`; the skipped text is kept to explain a failed job.
fn parse_fio(stdout: &str) -> Result<Value, ParseError> {
    let Some(start) = stdout.find('{') else {
        return Err(ParseError::new(format!(
            "fio-json: expected fio's JSON report on stdout (fio --output-format=json), \
             found no `{{` in {}",
            quote_found(stdout)
        )));
    };
    let preamble = stdout[..start].trim();
    let doc = first_json_value("fio-json", "fio's JSON report", &stdout[start..])?;
    let Some(jobs) = doc.get("jobs").and_then(Value::as_array) else {
        return Err(ParseError::new(format!(
            "fio-json: expected a `jobs` array in fio's JSON report, found {}",
            quote_found(&stdout[start..])
        )));
    };
    for (i, job) in jobs.iter().enumerate() {
        let code = job.get("error").and_then(Value::as_i64).unwrap_or(0);
        if code != 0 {
            let name = job
                .get("jobname")
                .and_then(Value::as_str)
                .map(|n| format!("`{n}`"))
                .unwrap_or_else(|| format!("#{i}"));
            let detail = if preamble.is_empty() {
                String::new()
            } else {
                format!("; fio said: {}", excerpt(preamble, 2 * EXCERPT_CHARS))
            };
            return Err(ParseError::new(format!(
                "fio-json: job {name} failed with error {code} ({}){detail}",
                errno_name(code)
            )));
        }
    }
    Ok(doc)
}

/// fio reports errno values; naming the common ones saves a trip to errno.h.
fn errno_name(code: i64) -> &'static str {
    match code {
        1 => "EPERM, operation not permitted",
        2 => "ENOENT, no such file or directory",
        5 => "EIO, input/output error",
        12 => "ENOMEM, out of memory",
        13 => "EACCES, permission denied",
        22 => "EINVAL, invalid argument (O_DIRECT unsupported here?)",
        28 => "ENOSPC, no space left on device",
        30 => "EROFS, read-only file system",
        _ => "an errno value",
    }
}

/// GNU time writes its line after everything the timed command wrote to stderr, and
/// after "Command exited with non-zero status N", so the last matching line is the one.
fn parse_time(stderr: &str) -> Result<Value, ParseError> {
    for line in stderr.lines().rev() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() != 4 {
            continue;
        }
        let numbers: Option<Vec<f64>> = fields.iter().map(|f| parse_number(f)).collect();
        if let Some(n) = numbers {
            let mut doc = Map::new();
            for (key, value) in ["real", "user", "sys", "max_rss_kib"].iter().zip(n) {
                doc.insert((*key).to_string(), json_number(value));
            }
            return Ok(Value::Object(doc));
        }
    }
    let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
    let found = match last {
        Some(line) => {
            let fields = line.split_whitespace().count();
            format!(
                "the last line, `{}` ({fields} field{})",
                excerpt(line, EXCERPT_CHARS),
                if fields == 1 { "" } else { "s" }
            )
        }
        None => "an empty stderr".to_string(),
    };
    Err(ParseError::new(format!(
        "time: expected a line of 4 numbers on stderr from GNU time -f '%e %U %S %M' \
         (real user sys max_rss_kib), found none; {found}"
    )))
}

/// Some boards print decimals with a comma (`3,56692 s`, `94,1 MB/s`): the locale's,
/// not a thousands separator, in the tools' summaries.
fn parse_decimal(text: &str) -> Option<f64> {
    parse_number(&text.replace(',', "."))
}

/// `hdparm -t`, `-T`, `--direct -t` and `--direct -T` print one timing line each:
/// ` Timing buffered disk reads: 256 MB in  1.63 seconds = 157.41 MB/sec`.
/// The document has `buffered_reads` (-t), `direct_disk_reads` (--direct -t),
/// `cached_reads` (-T: memory, not the device) and `direct_cached_reads` (--direct
/// -T: the drive's cache), MB/sec as printed (hdparm's MB are MiB), each present when
/// its line is.
fn parse_hdparm(stdout: &str, stderr: &str) -> Result<Value, ParseError> {
    let mut doc = Map::new();
    for line in stdout.lines() {
        let Some((what, rest)) = line
            .trim()
            .strip_prefix("Timing ")
            .and_then(|l| l.split_once(':'))
        else {
            continue;
        };
        // -T reads the page cache (memory bandwidth); -T --direct reads the drive's own
        // cache through O_DIRECT; -t reads the device through the page cache, and
        // -t --direct bypasses it. Four different things, four keys.
        let direct = what.contains("O_DIRECT");
        let [cached, direct_cached, buffered, direct_disk] = HDPARM_KEYS;
        let key = match (what.contains("cached"), what.contains("disk"), direct) {
            (true, _, false) => cached,
            (true, _, true) => direct_cached,
            (false, true, false) => buffered,
            (false, true, true) => direct_disk,
            _ => continue,
        };
        // Very slow media are reported in kB/sec.
        let rate = rest.rsplit_once('=').and_then(|(_, r)| {
            let r = r.trim();
            match (r.strip_suffix("MB/sec"), r.strip_suffix("kB/sec")) {
                (Some(mb), _) => parse_decimal(mb),
                (None, Some(kb)) => parse_decimal(kb).map(|k| k / 1024.0),
                (None, None) => None,
            }
        });
        match rate {
            Some(r) => {
                doc.insert(key.to_string(), json_number(r));
            }
            None => {
                return Err(ParseError::new(format!(
                    "hdparm: expected `= N MB/sec` at the end of `{}`",
                    excerpt(line.trim(), EXCERPT_CHARS)
                )));
            }
        }
    }
    if doc.is_empty() {
        let said = stderr
            .trim()
            .lines()
            .chain(stdout.trim().lines())
            .last()
            .unwrap_or("");
        return Err(ParseError::new(format!(
            "hdparm: expected a `Timing ... reads: ... = N MB/sec` line, found none{}",
            if said.is_empty() {
                String::new()
            } else {
                format!("; it said `{}`", excerpt(said, EXCERPT_CHARS))
            }
        )));
    }
    Ok(Value::Object(doc))
}

/// GNU dd's last line on stderr: `335544320 bytes (336 MB, 320 MiB) copied, 3.56692 s,
/// 94.1 MB/s`. The rate is recomputed from bytes and seconds, exactly, rather than taken
/// from dd's rounded and unit-varying text.
fn parse_dd(stderr: &str) -> Result<Value, ParseError> {
    for line in stderr.lines().rev() {
        let Some((bytes, rest)) = line.trim().split_once(" bytes") else {
            continue;
        };
        let Some(after) = rest.split_once("copied,").map(|(_, a)| a) else {
            continue;
        };
        let seconds = after
            .trim()
            .split_once(" s")
            .and_then(|(s, _)| parse_decimal(s));
        let bytes = bytes.trim().parse::<u64>().ok();
        if let (Some(bytes), Some(seconds)) = (bytes, seconds) {
            if seconds <= 0.0 {
                return Err(ParseError::new(format!(
                    "dd: the copy took {seconds} s, too short to measure; copy more data"
                )));
            }
            let mut doc = Map::new();
            doc.insert("bytes".into(), json_number(bytes as f64));
            doc.insert("seconds".into(), json_number(seconds));
            doc.insert(
                "bytes_per_second".into(),
                json_number(bytes as f64 / seconds),
            );
            return Ok(Value::Object(doc));
        }
    }
    Err(ParseError::new(format!(
        "dd: expected GNU dd's `N bytes (...) copied, S s, R MB/s` line on stderr, found none; {}",
        match stderr.trim().lines().last() {
            Some(l) => format!("the last line is `{}`", excerpt(l, EXCERPT_CHARS)),
            None => "stderr was empty".to_string(),
        }
    )))
}

/// iperf3 -J exits 0 with `{"error": ...}` when it cannot connect, so the exit status
/// alone does not tell a failed run.
fn parse_iperf3(stdout: &str) -> Result<Value, ParseError> {
    let doc = parse_json_document("iperf3-json", "iperf3's JSON report (iperf3 -J)", stdout)?;
    if let Some(err) = doc.get("error") {
        let message = match err {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        return Err(ParseError::new(format!(
            "iperf3-json: iperf3 reported an error: {message}"
        )));
    }
    Ok(doc)
}

fn parse_json_document(parser: &str, expected: &str, text: &str) -> Result<Value, ParseError> {
    if text.trim().is_empty() {
        return Err(ParseError::new(format!(
            "{parser}: expected {expected}, found empty output"
        )));
    }
    serde_json::from_str(text).map_err(|e| json_error(parser, expected, text, &e))
}

/// Reads the first JSON value and ignores whatever follows it (fio can print more
/// error lines after its report).
fn first_json_value(parser: &str, expected: &str, text: &str) -> Result<Value, ParseError> {
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    match values.next() {
        Some(Ok(v)) => Ok(v),
        Some(Err(e)) => Err(json_error(parser, expected, text, &e)),
        None => Err(ParseError::new(format!(
            "{parser}: expected {expected}, found empty output"
        ))),
    }
}

fn json_error(parser: &str, expected: &str, text: &str, e: &serde_json::Error) -> ParseError {
    let near = text_near(text, e.line(), e.column());
    let what = if e.is_eof() {
        "the JSON ends early (truncated output?)".to_string()
    } else {
        format!("invalid JSON: {e}")
    };
    ParseError::new(format!(
        "{parser}: expected {expected}; {what}; near `{}`",
        excerpt(&near, EXCERPT_CHARS)
    ))
}

/// The text around a serde_json error position (1-based line, column).
fn text_near(text: &str, line: usize, column: usize) -> String {
    let mut offset = 0usize;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        if i + 1 == line {
            offset += column.min(l.len());
            break;
        }
        offset += l.len();
    }
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let half = EXCERPT_CHARS / 2;
    let before: Vec<char> = text[..end].chars().collect();
    let from = before.len().saturating_sub(half);
    let mut near: String = before[from..].iter().collect();
    near.extend(text[end..].chars().take(half));
    near
}

fn quote_found(text: &str) -> String {
    if text.trim().is_empty() {
        "empty output".to_string()
    } else {
        format!("`{}`", excerpt(text, EXCERPT_CHARS))
    }
}

/// One line of at most `max` characters, whitespace runs collapsed.
fn excerpt(text: &str, max: usize) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() <= max {
        collapsed
    } else {
        let cut: String = collapsed.chars().take(max).collect();
        format!("{cut}…")
    }
}

/// A finite number; `NaN` and `inf` are not measurements.
fn parse_number(text: &str) -> Option<f64> {
    text.trim().parse::<f64>().ok().filter(|v| v.is_finite())
}

/// Integers stay integers so the document reads like the tool's output.
fn json_number(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        Value::from(v as i64)
    } else {
        serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
    }
}

/// One step of a metric path.
#[derive(Clone, Debug, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
    Filter { field: String, value: String },
}

impl Step {
    fn display(&self) -> String {
        match self {
            Step::Key(k) if k.contains(['.', '[', ']']) => format!("[\"{k}\"]"),
            Step::Key(k) => k.clone(),
            Step::Index(i) => format!("[{i}]"),
            Step::Filter { field, value } => format!("[{field}={value}]"),
        }
    }
}

fn parse_path(path: &str) -> Result<Vec<Step>, String> {
    if path.trim().is_empty() {
        return Err("empty metric path".into());
    }
    if path != path.trim() {
        return Err(format!(
            "metric path `{path}` has leading or trailing spaces"
        ));
    }
    let chars: Vec<char> = path.chars().collect();
    let mut steps = Vec::new();
    let mut i = 0;
    let at = |i: usize| format!("metric path `{path}`, character {}", i + 1);
    while i < chars.len() {
        let c = chars[i];
        if c == '[' {
            let close = (i + 1..chars.len())
                .find(|&j| chars[j] == ']' && !inside_quotes(&chars[i + 1..j]))
                .ok_or_else(|| format!("{}: `[` is never closed", at(i)))?;
            let inner: String = chars[i + 1..close].iter().collect();
            steps.push(parse_selector(&inner).map_err(|e| format!("{}: {e}", at(i)))?);
            i = close + 1;
        } else if c == ']' {
            return Err(format!("{}: `]` without `[`", at(i)));
        } else {
            if c == '.' {
                if steps.is_empty() {
                    return Err(format!("{}: a path cannot start with `.`", at(i)));
                }
                i += 1;
            } else if !steps.is_empty() {
                return Err(format!("{}: expected `.` or `[` before `{c}`", at(i)));
            }
            let start = i;
            while i < chars.len() && !matches!(chars[i], '.' | '[' | ']') {
                i += 1;
            }
            if start == i {
                return Err(format!(
                    "{}: empty key (two dots, or a dot at the end?)",
                    at(start)
                ));
            }
            steps.push(Step::Key(chars[start..i].iter().collect()));
        }
    }
    Ok(steps)
}

/// An odd number of `"` means the `]` found is inside a quoted key.
fn inside_quotes(chars: &[char]) -> bool {
    chars.iter().filter(|&&c| c == '"').count() % 2 == 1
}

fn parse_selector(inner: &str) -> Result<Step, String> {
    let inner = inner.trim();
    if inner.is_empty() {
        return Err("`[]` is empty; expected an index, `field=value` or a quoted key".into());
    }
    if let Some(rest) = inner.strip_prefix('"') {
        return match rest.strip_suffix('"') {
            Some(key) if !key.is_empty() && !key.contains('"') => Ok(Step::Key(key.to_string())),
            _ => Err(format!(
                "`[{inner}]`: a quoted key must look like [\"99.000000\"]"
            )),
        };
    }
    if let Some((field, value)) = inner.split_once('=') {
        let (field, value) = (field.trim(), value.trim());
        if field.is_empty() || value.is_empty() {
            return Err(format!(
                "`[{inner}]`: expected `field=value`, e.g. `[jobname=randread]`"
            ));
        }
        return Ok(Step::Filter {
            field: field.to_string(),
            value: value.to_string(),
        });
    }
    if inner.chars().all(|c| c.is_ascii_digit()) {
        return inner
            .parse::<usize>()
            .map(Step::Index)
            .map_err(|_| format!("`[{inner}]`: index too large"));
    }
    Err(format!(
        "`[{inner}]`: expected an index (`[0]`), `field=value` (`[jobname=randread]`) \
         or a quoted key (`[\"99.000000\"]`)"
    ))
}

/// Checks the syntax of a metric path (`jobs[jobname=randread].read.bw_bytes`).
pub fn check_path(path: &str) -> Result<(), String> {
    parse_path(path).map(|_| ())
}

/// The hdparm parser's keys: `-T`, `--direct -T`, `-t`, `--direct -t`.
pub const HDPARM_KEYS: [&str; 4] = [
    "cached_reads",
    "direct_cached_reads",
    "buffered_reads",
    "direct_disk_reads",
];

/// Checks that a (syntactically valid) metric path can select something from what
/// `kind` produces: the fixed keys of the line parsers, the top-level keys of the tools'
/// JSON reports. The generic `json` parser takes any path.
pub fn check_path_for(kind: ParserKind, path: &str) -> Result<(), String> {
    let steps = parse_path(path)?;
    let first = match steps.first() {
        Some(Step::Key(k)) => Some(k.as_str()),
        _ => None,
    };
    let (keys, whole): (&[&str], bool) = match kind {
        ParserKind::Json => return Ok(()),
        ParserKind::Time => (&["real", "user", "sys", "max_rss_kib"], true),
        ParserKind::Hdparm => (&HDPARM_KEYS, true),
        ParserKind::Dd => (&["bytes", "seconds", "bytes_per_second"], true),
        ParserKind::FioJson => (&["jobs", "disk_util"], false),
        ParserKind::Iperf3Json => (&["start", "intervals", "end"], false),
    };
    let list = keys
        .iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ");
    match first {
        Some(k) if keys.contains(&k) => {
            if whole && steps.len() > 1 {
                Err(format!("`{k}` is a number; the path must be just `{k}`"))
            } else if !whole && steps.len() == 1 {
                Err(format!(
                    "`{k}` is not a number: go on into it, like `{k}[0]....`"
                ))
            } else {
                Ok(())
            }
        }
        _ if whole => Err(format!("expected one of {list}")),
        _ => Err(format!("a path here starts with one of {list}")),
    }
}

/// Selects a number from a parsed document by a metric path: a JSON number, or a
/// string that parses as a finite number.
pub fn select(doc: &Value, path: &str) -> Result<f64, ParseError> {
    let steps = parse_path(path).map_err(ParseError)?;
    let mut current = doc;
    let mut walked = String::new();
    for step in &steps {
        let fail = |why: String| {
            let place = if walked.is_empty() {
                "the document".to_string()
            } else {
                format!("`{walked}`")
            };
            ParseError::new(format!(
                "metric path `{path}`: at `{}` in {place}: {why}",
                step.display()
            ))
        };
        current = match step {
            Step::Key(key) => match current {
                Value::Object(map) => map.get(key).ok_or_else(|| fail(missing_key(key, map)))?,
                other => return Err(fail(format!("{} has no keys", describe(other)))),
            },
            Step::Index(index) => match current {
                Value::Array(items) => items.get(*index).ok_or_else(|| {
                    fail(format!(
                        "index {index} is out of range ({} elements)",
                        items.len()
                    ))
                })?,
                other => return Err(fail(format!("{}, not an array", describe(other)))),
            },
            Step::Filter { field, value } => match current {
                Value::Array(items) => items
                    .iter()
                    .find(|item| item.get(field).is_some_and(|f| field_equals(f, value)))
                    .ok_or_else(|| {
                        let seen: Vec<String> = items
                            .iter()
                            .filter_map(|item| item.get(field).map(plain))
                            .take(10)
                            .collect();
                        fail(format!(
                            "no element has {field} = {value}; found {}",
                            if seen.is_empty() {
                                format!("no element with a `{field}` field")
                            } else {
                                seen.join(", ")
                            }
                        ))
                    })?,
                other => return Err(fail(format!("{}, not an array", describe(other)))),
            },
        };
        if !walked.is_empty() && matches!(step, Step::Key(k) if !k.contains(['.', '[', ']'])) {
            walked.push('.');
        }
        walked.push_str(&step.display());
    }
    match current {
        Value::Number(n) => n.as_f64().filter(|v| v.is_finite()).ok_or_else(|| {
            ParseError::new(format!("metric path `{path}`: {n} is not a finite number"))
        }),
        Value::String(s) => parse_number(s).ok_or_else(|| {
            ParseError::new(format!(
                "metric path `{path}`: expected a number, found the string \"{}\"",
                excerpt(s, EXCERPT_CHARS)
            ))
        }),
        other => Err(ParseError::new(format!(
            "metric path `{path}`: expected a number, found {}",
            describe(other)
        ))),
    }
}

fn field_equals(field: &Value, wanted: &str) -> bool {
    match field {
        Value::String(s) => s == wanted,
        Value::Number(n) => {
            n.to_string() == wanted
                || matches!((n.as_f64(), parse_number(wanted)), (Some(a), Some(b)) if a == b)
        }
        Value::Bool(b) => b.to_string() == wanted,
        _ => false,
    }
}

fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => excerpt(&other.to_string(), 30),
    }
}

fn missing_key(key: &str, map: &Map<String, Value>) -> String {
    if map.is_empty() {
        return format!("no key `{key}` in an empty object");
    }
    let closest = map
        .keys()
        .map(|k| (edit_distance(key, k), k))
        .filter(|(d, _)| *d <= 2)
        .min();
    let hint = match closest {
        Some((_, k)) => format!("did you mean `{k}`? "),
        None => String::new(),
    };
    const SHOWN: usize = 30;
    let mut keys: Vec<String> = map.keys().take(SHOWN).map(|k| format!("`{k}`")).collect();
    if map.len() > SHOWN {
        keys.push(format!("… ({} in all)", map.len()));
    }
    format!("no key `{key}`; {hint}keys are {}", keys.join(", "))
}

/// Levenshtein distance over characters, for "did you mean" hints on typos.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitute = previous[j] + usize::from(ca != *cb);
            current[j + 1] = substitute.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}

fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!("the string \"{}\"", excerpt(s, 40)),
        Value::Array(a) => format!("an array of {} elements", a.len()),
        Value::Object(_) => "an object".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn visible_text_is_what_a_terminal_shows() {
        for (raw, shown) in [
            ("= 41.90 MB/sec\u{1b}(B\u{1b}[m", "= 41.90 MB/sec"),
            (
                "\u{1b}[33mHDParm: 41.90\u{1b}(B\u{1b}[m\n",
                "HDParm: 41.90\n",
            ),
            ("\u{1b}[1;31;40mred\u{1b}[0m", "red"),
            ("\u{1b}]0;title\u{7}after", "after"),
            ("\u{1b}]8;;http://x\u{1b}\\link\u{1b}]8;;\u{1b}\\", "link"),
            ("\u{9b}2Jclear", "clear"),
            ("10%\r20%\r30%\n", "10%\n20%\n30%\n"),
            ("dos line\r\nnext", "dos line\nnext"),
            ("tab\there\u{0}\u{7}\u{8}\u{7f}", "tab\there"),
            ("unfinished \u{1b}[", "unfinished "),
            ("lone \u{1b}", "lone "),
            ("日本語 ü", "日本語 ü"),
        ] {
            assert_eq!(visible(raw), shown, "{raw:?}");
        }
        assert_eq!(escape_controls("a\u{1b}[m\n\u{7}"), "a\\x1b[m\\n\\x07");
        assert_eq!(
            ParseError::new("x\u{1b}y").to_string(),
            "x\\x1by",
            "no control byte in a message"
        );
        assert_eq!(ParseError("x\u{1b}y".into()).to_string(), "x\\x1by");
    }

    #[test]
    fn path_syntax() {
        for ok in [
            "real",
            "end.sum_received.bits_per_second",
            "jobs[jobname=randread].read.bw_bytes",
            "jobs[0].read.iops",
            "[0].x",
            "jobs[0].read.clat_ns.percentile[\"99.000000\"]",
            "a[0][1]",
        ] {
            assert_eq!(check_path(ok), Ok(()), "{ok}");
        }
        for bad in [
            "", " real", "a..b", "a.", ".a", "a[", "a]", "a[]", "a[x]", "a[=b]", "a[0]b", "a[\"x]",
        ] {
            assert!(check_path(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn select_walks_filters_and_quoted_keys() {
        let doc = json!({"jobs": [{"jobname": "a", "groupid": 0, "p": {"99.000000": 7}},
                                  {"jobname": "b", "groupid": 1, "v": "2.5"}]});
        assert_eq!(select(&doc, "jobs[jobname=b].v"), Ok(2.5));
        assert_eq!(select(&doc, "jobs[groupid=0].p[\"99.000000\"]"), Ok(7.0));
        let err = select(&doc, "jobs[jobname=c].v").unwrap_err().0;
        assert!(err.contains("[jobname=c]") && err.contains("a, b"), "{err}");
        let err = select(&doc, "jobs[1].w").unwrap_err().0;
        assert!(err.contains("`w`") && err.contains("`jobs[1]`"), "{err}");
    }

    #[test]
    fn odd_input_gives_errors_not_panics() {
        let nasty = [
            "",
            "{",
            "日本語{\"é\": [",
            "{\"jobs\": 5}",
            "{\"jobs\": [{\"error\": \"x\"}]}",
            "ü ü ü ü",
            "1 2 3 ∞",
            "\u{0}{}",
            "[1,2]",
            "{\"error\": {\"code\": 1}}",
        ];
        for text in nasty {
            for kind in ParserKind::ALL {
                let _ = parse(kind, text, text);
            }
            let _ = check_path(text);
            let _ = select(&json!({"a": [1]}), text);
        }
        assert!(parse(ParserKind::FioJson, "{\"jobs\": 5}", "").is_err());
        let err = parse(ParserKind::Iperf3Json, "{\"error\": {\"code\": 1}}", "").unwrap_err();
        assert!(err.0.contains("{\"code\":1}"), "{err}");
    }
}
