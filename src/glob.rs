//! Shell-style globs over names: `*` matches any run of characters, `?` one character.
//!
//! Not `globset`, measured (issue 40): callers match a pattern against a name where
//! they meet it (`matches(pattern, name)`, in plan expansion and over every stored cell),
//! and globset compiles each `Glob` to a regex: 14 µs a call against 0.1 µs here (40,000
//! board-name matches, release build). Compiled once per pattern it is 65 ns, but that
//! needs a compiled matcher kept in the model for every pattern field; and it reads `[`,
//! `{`, `\` and `**` as syntax, which these globs do not have.

/// Whether `name` matches `pattern` as a whole.
pub fn matches(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    // Iterative matching with one backtrack point: linear in practice, no recursion
    // blow-up on patterns like `*a*a*a*b`.
    let (mut pi, mut ni) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ni;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

/// Whether `pattern` holds glob characters at all.
pub fn is_glob(pattern: &str) -> bool {
    pattern.contains(['*', '?'])
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn globs() {
        for (p, n, want) in [
            ("turing-cm3-*", "turing-cm3-1", true),
            ("turing-cm3-*", "dramble-pi4-1", false),
            ("*", "", true),
            ("lab-?", "lab-1", true),
            ("lab-?", "lab-10", false),
            ("*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaac", false),
            ("exact", "exact", true),
            ("exact", "exactly", false),
        ] {
            assert_eq!(matches(p, n), want, "{p} vs {n}");
        }
    }
}
