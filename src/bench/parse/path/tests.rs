//! Tests of the metric-path language: syntax, selection, and the errors by variant.

use super::*;
use serde_json::json;

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
/// A path, a test of its error's variant, and the error's text.
type Case = (&'static str, fn(&PathError) -> bool, &'static str);

/// Each syntax error by its variant, with the text it had as a `String`.
#[test]
fn path_errors_say_what_is_wrong_by_variant_with_the_same_text() {
    let cases: &[Case] = &[
        ("", |e| *e == PathError::Empty, "empty metric path"),
        (
            " real",
            |e| matches!(e, PathError::Spaces { .. }),
            "metric path ` real` has leading or trailing spaces",
        ),
        (
            "a[0",
            |e| matches!(e, PathError::Unclosed { character: 2, .. }),
            "metric path `a[0`, character 2: `[` is never closed",
        ),
        (
            "a]",
            |e| matches!(e, PathError::StrayClose { character: 2, .. }),
            "metric path `a]`, character 2: `]` without `[`",
        ),
        (
            ".a",
            |e| matches!(e, PathError::LeadingDot { character: 1, .. }),
            "metric path `.a`, character 1: a path cannot start with `.`",
        ),
        (
            "a[0]b",
            |e| {
                matches!(
                    e,
                    PathError::MissingDot {
                        character: 5,
                        found: 'b',
                        ..
                    }
                )
            },
            "metric path `a[0]b`, character 5: expected `.` or `[` before `b`",
        ),
        (
            "a.",
            |e| matches!(e, PathError::EmptyKey { character: 3, .. }),
            "metric path `a.`, character 3: empty key (two dots, or a dot at the end?)",
        ),
        (
            "a[]",
            |e| {
                matches!(
                    e,
                    PathError::Selector {
                        source: SelectorError::Empty,
                        ..
                    }
                )
            },
            "metric path `a[]`, character 2: `[]` is empty; expected an index, `field=value` or a quoted key",
        ),
        (
            "a[\"\"]",
            |e| {
                matches!(
                    e,
                    PathError::Selector {
                        source: SelectorError::BadQuotedKey { .. },
                        ..
                    }
                )
            },
            "metric path `a[\"\"]`, character 2: `[\"\"]`: a quoted key must look like [\"99.000000\"]",
        ),
        (
            "a[=b]",
            |e| {
                matches!(
                    e,
                    PathError::Selector {
                        source: SelectorError::BadFilter { .. },
                        ..
                    }
                )
            },
            "metric path `a[=b]`, character 2: `[=b]`: expected `field=value`, e.g. `[jobname=randread]`",
        ),
        (
            "a[99999999999999999999999]",
            |e| {
                matches!(
                    e,
                    PathError::Selector {
                        source: SelectorError::IndexTooLarge { .. },
                        ..
                    }
                )
            },
            "metric path `a[99999999999999999999999]`, character 2: `[99999999999999999999999]`: index too large",
        ),
        (
            "a[x]",
            |e| {
                matches!(
                    e,
                    PathError::Selector {
                        source: SelectorError::Unknown { .. },
                        ..
                    }
                )
            },
            "metric path `a[x]`, character 2: `[x]`: expected an index (`[0]`), `field=value` \
             (`[jobname=randread]`) or a quoted key (`[\"99.000000\"]`)",
        ),
    ];
    for (path, is, text) in cases {
        let e = check_path(path).unwrap_err();
        assert!(is(&e), "{path:?}: {e:?}");
        assert_eq!(e.to_string(), *text, "{path:?}");
    }
}

/// A path that finds nothing and one that finds no number are told apart by
/// variant; the texts are those `select` always gave.
#[test]
fn select_errors_say_what_was_found_by_variant_with_the_same_text() {
    let doc = json!({"a": {"b": 1}, "s": "94,1", "t": "x", "o": {}, "list": [1]});
    let e = select_number(&doc, "a.c").unwrap_err();
    assert!(matches!(e, SelectError::NotFound { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "metric path `a.c`: at `c` in `a`: no key `c`; did you mean `b`? keys are `b`"
    );
    let e = select_number(&doc, "list[3]").unwrap_err();
    assert!(matches!(e, SelectError::NotFound { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "metric path `list[3]`: at `[3]` in `list`: index 3 is out of range (1 elements)"
    );
    let e = select_number(&doc, "o").unwrap_err();
    assert!(
        matches!(
            e,
            SelectError::NotANumber {
                decimal_comma: false,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "metric path `o`: expected a number, found an object"
    );
    let e = select_number(&doc, "s").unwrap_err();
    assert!(
        matches!(
            e,
            SelectError::NotANumber {
                decimal_comma: true,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "metric path `s`: expected a number, found the string \"94,1\" (a decimal comma? \
         `decimal_comma = true` in `[parse_regex]` reads it as one)"
    );
    let e = select_number(&doc, "t").unwrap_err();
    assert_eq!(
        e.to_string(),
        "metric path `t`: expected a number, found the string \"x\""
    );
    let e = select_number(&doc, "a..b").unwrap_err();
    assert!(
        matches!(e, SelectError::Syntax(PathError::EmptyKey { .. })),
        "{e:?}"
    );
    // `select` keeps its `ParseError`, with the same text.
    assert_eq!(select(&doc, "o").unwrap_err().0, e_text(&doc, "o"));
}

fn e_text(doc: &Value, path: &str) -> String {
    select_number(doc, path).unwrap_err().to_string()
}
