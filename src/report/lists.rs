//! The report's long sections as the embedded templates write them, in code: the
//! comparisons, the validity warnings and the provenance
//! (`{{ comparisons|html_comparisons }}`, `{{ provenance|markdown_provenance }}`, ...).
//!
//! A big report compares a thousand pairs, warns about thousands of cells and shows the
//! facts of a thousand configurations, and the template loops over them were about
//! half of the page's render and two thirds of the Markdown's (`rows.rs` did the same for the tables' rows). Each filter writes
//! exactly what the loop it replaced wrote (`LOOPS` below, and docs/TEMPLATES.md, where
//! an override can copy it to change the markup), from the template context's values,
//! each escaped as that template's formatter escapes it.

use minijinja::{Error, ErrorKind, Value};

use super::export::write_float;
use super::rows::{push_html, push_markdown};

/// The loops the filters write as, in order: `html_validity`, `markdown_validity`,
/// `html_provenance`, `markdown_provenance`, `html_comparisons`,
/// `markdown_comparisons`. The tests render each and compare; docs/TEMPLATES.md shows
/// them.
#[cfg(test)]
pub(super) const LOOPS: [&str; 6] = [
    r#"{% for w in validity %}<li>{% for f in w.flags %}<span class="chip">{{ f.name }}</span>{% endfor %}{% for f in w.warnings %}<span class="chip">{{ f.name }}</span>{% endfor %}{{ w.cell }}: {{ w.text }}</li>{% endfor %}"#,
    r"{% for w in validity %}- {{ w.cell }}: {{ w.text }}
{% endfor %}",
    r#"{% for p in provenance %}{% for w in p.warnings %}<div class="callout"><p><strong>Warning:</strong> {{ w }}</p></div>
{% endfor %}<details class="prov"{% if p.warnings %} open{% endif %}>
<summary>{{ p.config }}</summary>
<div class="table-wrap">
<table class="facts">
<tbody>
{% for f in p.facts %}<tr><th scope="row">{{ f.name }}</th><td>{% if f.differs %}<span class="differs">differs:</span> {% endif %}{{ f.value }}</td></tr>
{% endfor %}<tr><th scope="row">cells</th><td><code>{{ p.cells|join(", ") }}</code></td></tr>
</tbody>
</table>
</div>
</details>
{% endfor %}"#,
    r#"{% for p in provenance %}
### {{ p.config }}
{% for w in p.warnings %}
> **Warning:** {{ w }}
{% endfor %}
| fact | value |
|---|---|
{% for f in p.facts %}| {{ f.name }} | {% if f.differs %}**differs:** {% endif %}{{ f.value }} |
{% endfor %}| cells | {{ p.cells|join(", ") }} |
{% endfor %}"#,
    r#"{% for c in comparisons %}{% if c.verdict == "better" or c.verdict == "worse" %}{% set word = c.verdict_text|split(" ")|first %}{% else %}{% set word = c.verdict|replace("-", " ") %}{% endif %}<tr class="verdict-row-{{ c.verdict }}"><td><code>{{ c.metric }}</code></td><td>{{ c.baseline }}{% if c.pooled %}<span class="pool">pooled</span>{% endif %}</td><td>{{ c.candidate }}</td><td class="num"{% if c.diff_pct is not none %} data-sort="{{ c.diff_pct }}"{% endif %}>{{ c.difference }}</td><td class="why"><span class="verdict verdict-{{ c.verdict }}">{{ word }}</span>{% if c.significant %}<strong>{{ c.verdict_text[(word|length):]|trim(" :") }}</strong>{% else %}{{ c.verdict_text[(word|length):]|trim(" :") }}{% endif %}{% if c.pooled and c.pooled.left_out %} Left out of the pool: {{ c.pooled.left_out|join("; ") }}.{% endif %}</td></tr>
{% endfor %}"#,
    r"{% for c in comparisons %}| {{ c.metric }} | {{ c.baseline }} | {{ c.candidate }} | {{ c.difference }} | {% if c.significant %}**{{ c.verdict_text }}**{% else %}{{ c.verdict_text }}{% endif %} |
{% endfor %}",
];

/// Adds the filters to a template's environment.
pub(super) fn add_filters(env: &mut minijinja::Environment<'_>) {
    type Write = fn(&mut Out, &Value) -> Result<(), NotTheList>;
    let filters: [(&'static str, &'static str, Format, Write); 6] = [
        ("html_comparisons", "comparisons", Format::Html, comparison),
        (
            "markdown_comparisons",
            "comparisons",
            Format::Markdown,
            comparison,
        ),
        ("html_validity", "validity", Format::Html, validity),
        ("markdown_validity", "validity", Format::Markdown, validity),
        ("html_provenance", "provenance", Format::Html, provenance),
        (
            "markdown_provenance",
            "provenance",
            Format::Markdown,
            provenance,
        ),
    ];
    for (filter, of, format, write) in filters {
        env.add_filter(filter, move |list: Value| {
            written(&list, filter, of, format, write)
        });
    }
}

/// Which template a filter writes for, and so how its values are escaped.
#[derive(Clone, Copy, PartialEq)]
enum Format {
    Html,
    Markdown,
}

/// What a filter was given that is not the context's list it takes.
#[derive(Debug)]
struct NotTheList;

/// A section's items written by `write` into safe markup, or the filter's error.
fn written(
    list: &Value,
    filter: &str,
    of: &str,
    format: Format,
    write: fn(&mut Out, &Value) -> Result<(), NotTheList>,
) -> Result<Value, Error> {
    let mut out = Out {
        text: String::new(),
        format,
    };
    let each = list.try_iter().map_err(|_| NotTheList);
    let done = each.and_then(|items| {
        items
            .into_iter()
            .try_for_each(|item| write(&mut out, &item))
    });
    match done {
        Ok(()) => Ok(Value::from_safe_string(out.text)),
        Err(NotTheList) => Err(Error::new(
            ErrorKind::InvalidOperation,
            format!(
                "`{filter}` takes the report's `{of}` (`{{{{ {of}|{filter} }}}}`), not {}",
                list.kind()
            ),
        )),
    }
}

/// The markup being written, and how its values are escaped.
struct Out {
    text: String,
    format: Format,
}

impl Out {
    fn push(&mut self, markup: &str) {
        self.text.push_str(markup);
    }

    /// A text value, escaped as the template's formatter writes it.
    fn value(&mut self, value: &Value) -> Result<(), NotTheList> {
        let text = value.as_str().ok_or(NotTheList)?;
        self.escaped(text);
        Ok(())
    }

    fn escaped(&mut self, text: &str) {
        match self.format {
            Format::Html => push_html(&mut self.text, text),
            Format::Markdown => push_markdown(&mut self.text, text),
        }
    }
}

/// `item.name`, which must be there (the templates are strict).
fn attr(item: &Value, name: &str) -> Result<Value, NotTheList> {
    match item.get_attr(name) {
        Ok(v) if !v.is_undefined() => Ok(v),
        _ => Err(NotTheList),
    }
}

/// The items of the list `item.name`.
fn items(item: &Value, name: &str) -> Result<Vec<Value>, NotTheList> {
    Ok(attr(item, name)?
        .try_iter()
        .map_err(|_| NotTheList)?
        .collect())
}

/// The text of `value`, which must be text.
fn text(value: &Value) -> Result<&str, NotTheList> {
    value.as_str().ok_or(NotTheList)
}

/// One of `comparisons`, as its loop in `LOOPS` writes it.
fn comparison(out: &mut Out, c: &Value) -> Result<(), NotTheList> {
    let verdict_value = attr(c, "verdict")?;
    let (verdict, verdict_text) = (text(&verdict_value)?, attr(c, "verdict_text")?);
    let significant = attr(c, "significant")?.is_true();
    if out.format == Format::Markdown {
        for field in ["metric", "baseline", "candidate", "difference"] {
            out.push("| ");
            out.value(&attr(c, field)?)?;
            out.push(" ");
        }
        out.push("| ");
        if significant {
            out.push("**");
        }
        out.value(&verdict_text)?;
        if significant {
            out.push("**");
        }
        out.push(" |\n");
        return Ok(());
    }
    let verdict_text = text(&verdict_text)?;
    // The verdict's word, and the rest of its text after it (sliced by characters, as
    // a template slices), without the spaces and colons around it.
    let word = if verdict == "better" || verdict == "worse" {
        verdict_text
            .split(' ')
            .next()
            .unwrap_or_default()
            .to_string()
    } else {
        verdict.replace('-', " ")
    };
    let rest = verdict_text
        .chars()
        .skip(word.chars().count())
        .collect::<String>();
    let rest = rest.trim_matches([' ', ':']);
    let pooled = attr(c, "pooled")?;
    out.push("<tr class=\"verdict-row-");
    out.escaped(verdict);
    out.push("\"><td><code>");
    out.value(&attr(c, "metric")?)?;
    out.push("</code></td><td>");
    out.value(&attr(c, "baseline")?)?;
    if pooled.is_true() {
        out.push("<span class=\"pool\">pooled</span>");
    }
    out.push("</td><td>");
    out.value(&attr(c, "candidate")?)?;
    out.push("</td><td class=\"num\"");
    let diff = attr(c, "diff_pct")?;
    if !diff.is_none() {
        out.push(" data-sort=\"");
        let x = f64::try_from(diff).map_err(|_| NotTheList)?;
        let _ = write_float(x, |p| {
            out.escaped(p);
            Ok::<(), ()>(())
        });
        out.push("\"");
    }
    out.push(">");
    out.value(&attr(c, "difference")?)?;
    out.push("</td><td class=\"why\"><span class=\"verdict verdict-");
    out.escaped(verdict);
    out.push("\">");
    out.escaped(&word);
    out.push("</span>");
    if significant {
        out.push("<strong>");
    }
    out.escaped(rest);
    if significant {
        out.push("</strong>");
    }
    if pooled.is_true() {
        let left_out = items(&pooled, "left_out")?;
        if !left_out.is_empty() {
            let texts: Result<Vec<&str>, NotTheList> = left_out.iter().map(text).collect();
            out.push(" Left out of the pool: ");
            out.escaped(&texts?.join("; "));
            out.push(".");
        }
    }
    out.push("</td></tr>\n");
    Ok(())
}

/// One of `validity`, as its loop in `LOOPS` writes it.
fn validity(out: &mut Out, w: &Value) -> Result<(), NotTheList> {
    if out.format == Format::Markdown {
        out.push("- ");
    } else {
        out.push("<li>");
        for f in items(w, "flags")?.iter().chain(&items(w, "warnings")?) {
            out.push("<span class=\"chip\">");
            out.value(&attr(f, "name")?)?;
            out.push("</span>");
        }
    }
    out.value(&attr(w, "cell")?)?;
    out.push(": ");
    out.value(&attr(w, "text")?)?;
    out.push(match out.format {
        Format::Html => "</li>",
        Format::Markdown => "\n",
    });
    Ok(())
}

/// One of `provenance`, as its loop in `LOOPS` writes it.
fn provenance(out: &mut Out, p: &Value) -> Result<(), NotTheList> {
    let warnings = items(p, "warnings")?;
    let html = out.format == Format::Html;
    if html {
        for w in &warnings {
            out.push("<div class=\"callout\"><p><strong>Warning:</strong> ");
            out.value(w)?;
            out.push("</p></div>\n");
        }
        out.push("<details class=\"prov\"");
        if !warnings.is_empty() {
            out.push(" open");
        }
        out.push(">\n<summary>");
        out.value(&attr(p, "config")?)?;
        out.push("</summary>\n<div class=\"table-wrap\">\n<table class=\"facts\">\n<tbody>\n");
    } else {
        out.push("\n### ");
        out.value(&attr(p, "config")?)?;
        out.push("\n");
        for w in &warnings {
            out.push("\n> **Warning:** ");
            out.value(w)?;
            out.push("\n");
        }
        out.push("\n| fact | value |\n|---|---|\n");
    }
    for f in items(p, "facts")? {
        out.push(if html { "<tr><th scope=\"row\">" } else { "| " });
        out.value(&attr(&f, "name")?)?;
        out.push(if html { "</th><td>" } else { " | " });
        if attr(&f, "differs")?.is_true() {
            out.push(if html {
                "<span class=\"differs\">differs:</span> "
            } else {
                "**differs:** "
            });
        }
        out.value(&attr(&f, "value")?)?;
        out.push(if html { "</td></tr>\n" } else { " |\n" });
    }
    // `join(", ")` joins the texts as they are; the formatter escapes the whole.
    let mut cells = String::new();
    for (i, c) in items(p, "cells")?.iter().enumerate() {
        if i > 0 {
            cells.push_str(", ");
        }
        cells.push_str(c.as_str().ok_or(NotTheList)?);
    }
    if html {
        out.push("<tr><th scope=\"row\">cells</th><td><code>");
        out.escaped(&cells);
        out.push("</code></td></tr>\n</tbody>\n</table>\n</div>\n</details>\n");
    } else {
        out.push("| cells | ");
        out.escaped(&cells);
        out.push(" |\n");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::export::{assert_filter_writes_the_loop, render_template};
    use super::super::{Fact, Pooled, Provenance, Report};
    use super::LOOPS;
    use crate::stats::Verdict;

    /// The test reports, and the same with every case the loops branch on: warnings and
    /// none, facts that differ, several cells, flags and warnings on a validity
    /// warning, and text to escape in each format.
    fn reports() -> Vec<Report> {
        let plain = super::super::tests_exports::full_report();
        let mut odd = plain.clone();
        let hostile = "<b>|x</b> & 'y' / [z] `*` \\ \u{7}";
        for (i, p) in odd.provenance.iter_mut().enumerate() {
            p.config = format!("{hostile} {i}");
            p.warnings = (0..i % 3)
                .map(|k| format!("{hostile} warning {k}"))
                .collect();
            p.facts.push(Fact {
                name: format!("{hostile} name"),
                value: format!("{hostile} value"),
                differs: i % 2 == 0,
            });
            p.cells.push(format!("{hostile} cell"));
        }
        odd.provenance.push(Provenance {
            config: "no facts".into(),
            facts: Vec::new(),
            cells: Vec::new(),
            warnings: Vec::new(),
        });
        // Every verdict, pooled with and without boards left out, and a difference
        // with no percent, one that is whole and one that is not finite.
        let first = odd.comparisons[0].clone();
        odd.comparisons = [
            Verdict::Better,
            Verdict::Worse,
            Verdict::Equivalent,
            Verdict::Inconclusive,
            Verdict::NotComparable,
        ]
        .into_iter()
        .enumerate()
        .map(|(i, verdict)| {
            let mut c = first.clone();
            c.verdict = verdict;
            c.significant = i % 2 == 0;
            c.metric = format!("{hostile} {i}");
            c.baseline = format!("{hostile} baseline");
            c.difference = format!("+{i}% {hostile}");
            c.verdict_text = match i {
                0 => format!("faster: {hostile} (p = 0.001)"),
                1 => " slower:: <x>".into(),
                2 => "equivalent: within ±2%".into(),
                3 => format!("inconclusive: {hostile}; about 12 runs"),
                _ => String::new(),
            };
            c.diff_pct = [Some(42.5), Some(-3.0), None, Some(f64::NAN), Some(0.125)][i];
            c.pooled = (i % 2 == 1).then(|| Pooled {
                model: "Pi 4".into(),
                boards: vec!["a".into(), "b".into()],
                left_out: if i == 1 {
                    vec![format!("{hostile} c: too few runs"), "d".into()]
                } else {
                    Vec::new()
                },
            });
            c
        })
        .collect();
        for w in &mut odd.validity {
            w.cell = format!("{hostile} {}", w.cell);
            w.text = format!("{} {hostile}", w.text);
            for f in w.flags.iter_mut().chain(&mut w.warnings) {
                f.name = format!("{hostile} {}", f.name);
            }
        }
        vec![plain, odd]
    }

    /// Each filter writes, for every test report, byte for byte what the loop it
    /// replaced wrote with the same template's escaping.
    #[test]
    fn the_filters_write_what_the_template_loops_wrote() {
        let cases = [
            ("index.html", "validity", "html_validity", LOOPS[0]),
            ("index.md", "validity", "markdown_validity", LOOPS[1]),
            ("index.html", "provenance", "html_provenance", LOOPS[2]),
            ("index.md", "provenance", "markdown_provenance", LOOPS[3]),
            ("index.html", "comparisons", "html_comparisons", LOOPS[4]),
            ("index.md", "comparisons", "markdown_comparisons", LOOPS[5]),
        ];
        for (name, list, filter, lp) in cases {
            let filtered = format!("{{{{ {list}|{filter} }}}}");
            for (k, report) in reports().iter().enumerate() {
                let (validity, provenance) = (report.validity.len(), report.provenance.len());
                assert!(
                    validity > 0 && provenance > 0 && !report.comparisons.is_empty(),
                    "report {k} has items to write"
                );
                let chips: usize = report
                    .validity
                    .iter()
                    .map(|w| w.flags.len() + w.warnings.len())
                    .sum();
                assert!(chips > 0, "report {k} has flags to write");
                assert_filter_writes_the_loop(
                    name,
                    lp,
                    &filtered,
                    report,
                    &format!("{filter}, report {k}"),
                );
            }
        }
    }

    /// The embedded templates use the filters, and the loops they replaced are what
    /// docs/TEMPLATES.md shows an override.
    #[test]
    fn the_embedded_templates_use_the_filters_and_the_docs_show_the_loops() {
        let embedded = super::super::export::Templates::embedded();
        for used in [
            "{{ validity|html_validity }}",
            "{{ provenance_own|html_provenance }}",
        ] {
            assert!(embedded.html.source.contains(used), "{used}");
        }
        // The comparisons are tables per metric (`comparison_tables`), in the
        // templates: `html_comparisons` and `markdown_comparisons` are there for an
        // override.
        for used in [
            "{{ validity|markdown_validity }}",
            "{{ provenance_own|markdown_provenance }}",
        ] {
            assert!(embedded.markdown.source.contains(used), "{used}");
        }
        let docs = include_str!("../../docs/TEMPLATES.md");
        for lp in LOOPS {
            assert!(docs.contains(lp), "docs/TEMPLATES.md shows\n{lp}");
        }
    }

    /// Given anything but the list it takes, a filter is an error naming it.
    #[test]
    fn a_filter_given_another_value_is_an_error() {
        let report = &reports()[0];
        for (name, src, want) in [
            (
                "index.html",
                "{{ tables|html_validity }}",
                "`html_validity` takes the report's `validity`",
            ),
            (
                "index.md",
                "{{ 3|markdown_provenance }}",
                "`markdown_provenance` takes the report's `provenance`",
            ),
            (
                "index.html",
                "{{ validity|html_provenance }}",
                "`html_provenance` takes",
            ),
        ] {
            let e = render_template(name, src, report).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        }
    }
}
