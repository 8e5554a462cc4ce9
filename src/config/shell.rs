//! Where values land in a rendered shell command: a small POSIX-shell lexer that
//! reports, for every marked value, the quoting context around it. Values are quoted
//! for a bare word only; inside `"..."`, `'...'`, `$((...))`, backticks, `${...}`, a
//! heredoc or a comment, that quoting does not hold, so such a place is refused.

use crate::bench::VALUE_MARK;

/// The context a value was interpolated in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Context {
    /// A bare word (also inside `$(...)` or `(...)`): quoting holds.
    Bare,
    DoubleQuotes,
    SingleQuotes,
    /// `$'...'`.
    AnsiQuotes,
    /// `$((...))`, `((...))` or `$[...]`.
    Arithmetic,
    Backticks,
    /// `${...}`.
    ParamExpansion,
    /// A heredoc's body or delimiter.
    Heredoc,
    Comment,
    /// Right after a `\`, which would escape the value's opening quote.
    AfterBackslash,
    /// Right after a `$`, which would make the value's quotes `$'...'`.
    AfterDollar,
}

impl Context {
    pub fn describe(self) -> &'static str {
        match self {
            Context::Bare => "a bare word",
            Context::DoubleQuotes => "double quotes",
            Context::SingleQuotes => "single quotes",
            Context::AnsiQuotes => "`$'...'` quotes",
            Context::Arithmetic => "shell arithmetic `$((...))`",
            Context::Backticks => "backticks",
            Context::ParamExpansion => "a `${...}` expansion",
            Context::Heredoc => "a heredoc",
            Context::Comment => "a comment",
            Context::AfterBackslash => "a `\\` escape",
            Context::AfterDollar => "a `$`",
        }
    }
}

/// One marked value: its byte offset in the text, its context, and whether it begins
/// a word (where a value starting with `-` would be read as an option).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Landing {
    pub offset: usize,
    pub context: Context,
    pub starts_word: bool,
}

#[derive(Debug)]
enum Frame {
    /// Command text: the top level, or `$(...)`. `parens` counts open `(`.
    Bare {
        parens: usize,
        in_word: bool,
        substitution: bool,
    },
    Double,
    Arith {
        depth: usize,
        closer: char,
    },
    Param {
        depth: usize,
    },
}

/// Finds every `VALUE_MARK` in `text` and the context it sits in.
pub fn landings(text: &str) -> Vec<Landing> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut out = Vec::new();
    let mut stack = vec![Frame::Bare {
        parens: 0,
        in_word: false,
        substitution: false,
    }];
    let mut heredocs: Vec<(String, bool)> = Vec::new();
    let at = |i: usize| chars.get(i).map(|&(_, c)| c);
    let mut i = 0;
    // Records every mark in chars[from..to] as being in `context`.
    let mark_all = |from: usize, to: usize, context: Context, out: &mut Vec<Landing>| {
        for &(offset, c) in &chars[from.min(chars.len())..to.min(chars.len())] {
            if c == VALUE_MARK {
                out.push(Landing {
                    offset,
                    context,
                    starts_word: false,
                });
            }
        }
    };
    // The index after a closing `quote` from `from`, honouring `\` escapes if `escapes`.
    let find_close = |from: usize, quote: char, escapes: bool| -> usize {
        let mut j = from;
        while j < chars.len() {
            let c = chars[j].1;
            if escapes && c == '\\' {
                j += 2;
                continue;
            }
            if c == quote {
                return j + 1;
            }
            j += 1;
        }
        chars.len()
    };
    while i < chars.len() {
        let (offset, c) = chars[i];
        let top = stack.len() - 1;
        match &mut stack[top] {
            Frame::Bare {
                parens,
                in_word,
                substitution,
            } => {
                let starts = !*in_word;
                match c {
                    _ if c == VALUE_MARK => {
                        out.push(Landing {
                            offset,
                            context: Context::Bare,
                            starts_word: starts,
                        });
                        *in_word = true;
                    }
                    ' ' | '\t' | ';' | '&' | '|' | '>' => *in_word = false,
                    '\n' => {
                        *in_word = false;
                        // Heredoc bodies start on the next line.
                        for (delim, strip) in std::mem::take(&mut heredocs) {
                            let body_start = i + 1;
                            let mut j = body_start;
                            loop {
                                let line_end = (j..chars.len())
                                    .find(|&k| chars[k].1 == '\n')
                                    .unwrap_or(chars.len());
                                let line: String =
                                    chars[j..line_end].iter().map(|&(_, c)| c).collect();
                                let line = if strip {
                                    line.trim_start_matches('\t').to_string()
                                } else {
                                    line
                                };
                                if line == delim || line_end >= chars.len() {
                                    mark_all(body_start, line_end, Context::Heredoc, &mut out);
                                    i = line_end.max(i);
                                    break;
                                }
                                j = line_end + 1;
                            }
                        }
                    }
                    '#' if starts => {
                        let end = (i..chars.len())
                            .find(|&k| chars[k].1 == '\n')
                            .unwrap_or(chars.len());
                        mark_all(i, end, Context::Comment, &mut out);
                        i = end;
                        continue;
                    }
                    '\'' => {
                        let end = find_close(i + 1, '\'', false);
                        mark_all(i + 1, end, Context::SingleQuotes, &mut out);
                        *in_word = true;
                        i = end;
                        continue;
                    }
                    '`' => {
                        let end = find_close(i + 1, '`', true);
                        mark_all(i + 1, end, Context::Backticks, &mut out);
                        *in_word = true;
                        i = end;
                        continue;
                    }
                    '"' => {
                        *in_word = true;
                        stack.push(Frame::Double);
                    }
                    '\\' => {
                        *in_word = true;
                        if at(i + 1) == Some(VALUE_MARK) {
                            out.push(Landing {
                                offset: chars[i + 1].0,
                                context: Context::AfterBackslash,
                                starts_word: false,
                            });
                        }
                        i += 2;
                        continue;
                    }
                    '$' => {
                        *in_word = true;
                        i = dollar(&chars, i, &mut stack, &mut out, &mark_all, &find_close);
                        continue;
                    }
                    '(' => {
                        if at(i + 1) == Some('(') && starts {
                            stack.push(Frame::Arith {
                                depth: 0,
                                closer: ')',
                            });
                            i += 2;
                            continue;
                        }
                        *parens += 1;
                        *in_word = false;
                    }
                    ')' => {
                        *in_word = false;
                        if *parens > 0 {
                            *parens -= 1;
                        } else if *substitution {
                            stack.pop();
                        }
                    }
                    '<' => {
                        *in_word = false;
                        if at(i + 1) == Some('<') && at(i + 2) == Some('<') {
                            // A here-string: its word is an ordinary word.
                            i += 3;
                            continue;
                        }
                        if at(i + 1) == Some('<') {
                            let (next, delim, strip, marked) = heredoc_delimiter(&chars, i + 2);
                            if marked {
                                mark_all(i + 2, next, Context::Heredoc, &mut out);
                            }
                            heredocs.push((delim, strip));
                            i = next;
                            continue;
                        }
                    }
                    _ => *in_word = true,
                }
            }
            Frame::Double => match c {
                '"' => {
                    stack.pop();
                }
                '\\' => {
                    if at(i + 1) == Some(VALUE_MARK) {
                        mark_all(i + 1, i + 2, Context::DoubleQuotes, &mut out);
                    }
                    i += 2;
                    continue;
                }
                '`' => {
                    let end = find_close(i + 1, '`', true);
                    mark_all(i + 1, end, Context::Backticks, &mut out);
                    i = end;
                    continue;
                }
                '$' => {
                    i = dollar(&chars, i, &mut stack, &mut out, &mark_all, &find_close);
                    continue;
                }
                _ if c == VALUE_MARK => mark_all(i, i + 1, Context::DoubleQuotes, &mut out),
                _ => {}
            },
            Frame::Arith { depth, closer } => match c {
                '(' if *closer == ')' => *depth += 1,
                '[' if *closer == ']' => *depth += 1,
                ')' | ']' if c == *closer => {
                    if *depth > 0 {
                        *depth -= 1;
                    } else {
                        stack.pop();
                        if c == ')' && at(i + 1) == Some(')') {
                            i += 1;
                        }
                    }
                }
                '$' if at(i + 1) == Some('(') && at(i + 2) != Some('(') => {
                    i = dollar(&chars, i, &mut stack, &mut out, &mark_all, &find_close);
                    continue;
                }
                _ if c == VALUE_MARK => mark_all(i, i + 1, Context::Arithmetic, &mut out),
                _ => {}
            },
            Frame::Param { depth } => match c {
                '{' => *depth += 1,
                '}' => {
                    if *depth > 0 {
                        *depth -= 1;
                    } else {
                        stack.pop();
                    }
                }
                '\\' => {
                    mark_all(i + 1, i + 2, Context::ParamExpansion, &mut out);
                    i += 2;
                    continue;
                }
                _ if c == VALUE_MARK => mark_all(i, i + 1, Context::ParamExpansion, &mut out),
                _ => {}
            },
        }
        i += 1;
    }
    out.sort_by_key(|l| l.offset);
    out
}

/// Records every mark in a range of chars as being in a context.
type MarkAll<'a> = &'a dyn Fn(usize, usize, Context, &mut Vec<Landing>);

/// Handles a `$` at `i` (in command text or double quotes); returns where to go on.
fn dollar(
    chars: &[(usize, char)],
    i: usize,
    stack: &mut Vec<Frame>,
    out: &mut Vec<Landing>,
    mark_all: MarkAll<'_>,
    find_close: &dyn Fn(usize, char, bool) -> usize,
) -> usize {
    let at = |k: usize| chars.get(k).map(|&(_, c)| c);
    match (at(i + 1), at(i + 2)) {
        (Some('('), Some('(')) => {
            stack.push(Frame::Arith {
                depth: 0,
                closer: ')',
            });
            i + 3
        }
        (Some('('), _) => {
            stack.push(Frame::Bare {
                parens: 0,
                in_word: false,
                substitution: true,
            });
            i + 2
        }
        (Some('['), _) => {
            stack.push(Frame::Arith {
                depth: 0,
                closer: ']',
            });
            i + 2
        }
        (Some('{'), _) => {
            stack.push(Frame::Param { depth: 0 });
            i + 2
        }
        (Some('\''), _) if matches!(stack.last(), Some(Frame::Bare { .. })) => {
            let end = find_close(i + 2, '\'', true);
            mark_all(i + 2, end, Context::AnsiQuotes, out);
            end
        }
        (Some(c), _) if c == VALUE_MARK => {
            mark_all(i + 1, i + 2, Context::AfterDollar, out);
            i + 2
        }
        _ => i + 1,
    }
}

/// Reads a heredoc's delimiter word after `<<`: returns the index after it, the word
/// with quotes removed, whether `<<-` strips tabs, and whether a value is in it.
fn heredoc_delimiter(chars: &[(usize, char)], mut i: usize) -> (usize, String, bool, bool) {
    let strip = chars.get(i).map(|&(_, c)| c) == Some('-');
    if strip {
        i += 1;
    }
    while chars.get(i).is_some_and(|&(_, c)| c == ' ' || c == '\t') {
        i += 1;
    }
    let mut word = String::new();
    let mut marked = false;
    let mut quote: Option<char> = None;
    while let Some(&(_, c)) = chars.get(i) {
        if c == VALUE_MARK {
            marked = true;
        }
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => word.push(c),
            None if c == '\'' || c == '"' => quote = Some(c),
            None if c == '\\' => {}
            None if c.is_whitespace() || ";&|<>()".contains(c) => break,
            None => word.push(c),
        }
        i += 1;
    }
    (i, word, strip, marked)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contexts(template: &str) -> Vec<(Context, bool)> {
        let text = template.replace('@', &VALUE_MARK.to_string());
        landings(&text)
            .into_iter()
            .map(|l| (l.context, l.starts_word))
            .collect()
    }

    #[test]
    fn each_context_is_told_apart() {
        use Context::*;
        let cases: &[(&str, Context)] = &[
            ("echo @x", Bare),
            ("echo \"@x\"", DoubleQuotes),
            ("echo \"a $(cat @x) b\"", Bare),
            ("echo '@x'", SingleQuotes),
            ("echo $((@x + 1))", Arithmetic),
            ("echo $(( (1 + @x) * 2 ))", Arithmetic),
            ("(( @x > 1 ))", Arithmetic),
            ("echo $[@x]", Arithmetic),
            ("echo `cat @x`", Backticks),
            ("echo \"`cat @x`\"", Backticks),
            ("echo ${v:-@x}", ParamExpansion),
            ("echo \"${v:-@x}\"", ParamExpansion),
            ("echo $'@x'", AnsiQuotes),
            ("echo \\@x", AfterBackslash),
            ("echo $@x", AfterDollar),
            ("echo a # @x", Comment),
            ("cat <<EOF\n@x\nEOF\necho ok", Heredoc),
            ("cat <<'EOF'\n@x\nEOF", Heredoc),
            ("cat <<-EOF\n\t@x\n\tEOF", Heredoc),
            ("(cd /tmp && ls @x)", Bare),
            ("echo $(echo $(ls @x))", Bare),
            ("x=$((1+2)); ls @x", Bare),
            ("echo 'a' @x", Bare),
            ("echo \"a\" @x", Bare),
            ("echo a#@x", Bare),
            ("cat <<< @x", Bare),
            ("cat <<<\"@x\"", DoubleQuotes),
            ("cat <@x", Bare),
        ];
        for (text, want) in cases {
            let got = contexts(text);
            assert_eq!(got.len(), 1, "{text}: {got:?}");
            assert_eq!(got[0].0, *want, "{text}");
        }
    }

    #[test]
    fn heredoc_ends_at_its_delimiter() {
        let got = contexts("cat <<EOF\nhi\nEOF\nls @x");
        assert_eq!(got, vec![(Context::Bare, true)]);
    }

    #[test]
    fn word_starts_are_seen() {
        assert_eq!(
            contexts("cmd @a --o=@b x@c"),
            vec![
                (Context::Bare, true),
                (Context::Bare, false),
                (Context::Bare, false)
            ]
        );
    }
}
