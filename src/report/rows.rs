//! A table's body rows as the embedded templates write them, in code: the `html_rows`
//! and `markdown_rows` filters (`{{ t|html_rows }}`).
//!
//! A big report's tables have thousands of rows of several values each, and a template
//! loop over them was about two thirds of the Markdown report's render and half of the
//! page's. Each filter writes exactly what the loop it replaced wrote
//! (`LOOPS` below, and docs/TEMPLATES.md, where an override can copy it to change the
//! markup): every value escaped for its format, numbers as the templates' formatter
//! writes them.

use minijinja::{Error, ErrorKind, Value};

use super::Table;
use super::export::{MarkdownEscaped, html_escaped, write_float};
use super::lazy::TableValue;

/// The loops the filters write as, in order: the HTML page's, then the Markdown
/// report's. The tests render both and compare; docs/TEMPLATES.md shows them.
#[cfg(test)]
pub(super) const LOOPS: [&str; 2] = [
    r#"{% for r in t.rows %}<tr><th scope="row">{{ r.label }}</th>{% for v in r.values %}<td class="num"{% if v.mean is not none %} data-sort="{{ v.mean }}"{% endif %}><span class="v">{{ v.value }}</span>{% if v.note %} <span class="n{% if v.flagged or v.outliers %} flagged{% endif %}">{{ v.note }}</span>{% endif %}</td>{% endfor %}{% if t.adaptive %}<td class="runs">{{ r.runs or "incomplete" }}</td>{% endif %}{% if t.any_flagged %}<td class="flags">{{ r.flagged or "none" }}</td>{% endif %}</tr>
{% endfor %}"#,
    r#"{% for r in t.rows %}|{% for a in r.axis_cells %} {{ a }} |{% endfor %}{% for v in r.values %} {{ v.brief }} |{% endfor %}{% if t.n_column %} {{ r.n }} |{% endif %}{% if t.adaptive %} {{ r.runs or "incomplete" }} |{% endif %}
{% endfor %}"#,
];

/// Adds the filters to a template's environment.
pub(super) fn add_filters(env: &mut minijinja::Environment<'_>) {
    env.add_filter("html_rows", |table: Value| {
        Ok(Value::from_safe_string(html(table_of(
            &table,
            "html_rows",
        )?)))
    });
    env.add_filter("markdown_rows", |table: Value| {
        Ok(Value::from_safe_string(markdown(table_of(
            &table,
            "markdown_rows",
        )?)))
    });
}

/// The table a filter was given: one of the context's `tables`.
fn table_of<'v>(value: &'v Value, filter: &str) -> Result<&'v Table, Error> {
    value
        .downcast_object_ref::<TableValue>()
        .map(TableValue::table)
        .ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidOperation,
                format!(
                    "`{filter}` takes one of the report's tables (`t` in `{{% for t in tables %}}`), not {}",
                    value.kind()
                ),
            )
        })
}

/// `text` as the HTML page's auto-escaping writes it.
pub(super) fn push_html(out: &mut String, text: &str) {
    let _ = html_escaped(text, |p| {
        out.push_str(p);
        Ok::<(), ()>(())
    });
}

/// `text` as the Markdown report's formatter writes it.
pub(super) fn push_markdown(out: &mut String, text: &str) {
    let _ = MarkdownEscaped(text).write_with(|p| {
        out.push_str(p);
        Ok::<(), ()>(())
    });
}

/// `text`, or `instead` when it is empty (the loops' `text or "none"`).
fn or<'t>(text: &'t str, instead: &'t str) -> &'t str {
    if text.is_empty() { instead } else { text }
}

/// The page's rows: `<tr>` per row, each on its own line.
pub(super) fn html(t: &Table) -> String {
    let mut out = String::with_capacity(t.rows.len() * (80 + 160 * t.columns.len()));
    for r in &t.rows {
        out.push_str("<tr><th scope=\"row\">");
        push_html(&mut out, &r.label);
        out.push_str("</th>");
        for v in &r.values {
            out.push_str("<td class=\"num\"");
            if let Some(mean) = v.mean {
                out.push_str(" data-sort=\"");
                let _ = write_float(mean, |p| {
                    push_html(&mut out, p);
                    Ok::<(), ()>(())
                });
                out.push('"');
            }
            out.push_str("><span class=\"v\">");
            push_html(&mut out, &v.value);
            out.push_str("</span>");
            if !v.note.is_empty() {
                out.push_str(" <span class=\"n");
                if v.flagged != 0 || v.outliers != 0 {
                    out.push_str(" flagged");
                }
                out.push_str("\">");
                push_html(&mut out, &v.note);
                out.push_str("</span>");
            }
            out.push_str("</td>");
        }
        if t.adaptive {
            out.push_str("<td class=\"runs\">");
            push_html(&mut out, or(r.runs.as_deref().unwrap_or(""), "incomplete"));
            out.push_str("</td>");
        }
        if t.any_flagged {
            out.push_str("<td class=\"flags\">");
            push_html(&mut out, or(&r.flagged, "none"));
            out.push_str("</td>");
        }
        out.push_str("</tr>\n");
    }
    out
}

/// The Markdown report's rows: a table line per row.
pub(super) fn markdown(t: &Table) -> String {
    let mut out = String::with_capacity(t.rows.len() * (40 + 40 * t.columns.len()));
    for r in &t.rows {
        out.push('|');
        for a in &r.axis_cells {
            out.push(' ');
            push_markdown(&mut out, a);
            out.push_str(" |");
        }
        for v in &r.values {
            out.push(' ');
            push_markdown(&mut out, &v.brief);
            out.push_str(" |");
        }
        if t.n_column {
            out.push(' ');
            push_markdown(&mut out, &r.n);
            out.push_str(" |");
        }
        if t.adaptive {
            out.push(' ');
            push_markdown(&mut out, or(r.runs.as_deref().unwrap_or(""), "incomplete"));
            out.push_str(" |");
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::export::{assert_filter_writes_the_loop, render_template};
    use super::super::{Report, Stat};
    use super::LOOPS;

    /// The test reports, and the same with every case the loops branch on: a precision
    /// target (`runs`), flagged rows, no mean, a mean that is not finite, whole and
    /// negative means, an empty and a missing `runs`, and text to escape in each format.
    fn reports() -> Vec<Report> {
        let plain = super::super::tests_exports::full_report();
        let mut odd = plain.clone();
        for t in &mut odd.tables {
            let t = Arc::make_mut(t);
            t.adaptive = !t.adaptive;
            t.any_flagged = true;
            t.n_column = !t.n_column;
            for (i, r) in t.rows.iter_mut().enumerate() {
                r.label = format!("<b>|{i}</b> & 'x' / [y] `*` \\ \u{7}");
                r.axis_cells = vec![r.label.clone(), format!("{i} ¹")];
                r.n = format!("{i}/<3>");
                r.runs = match i % 3 {
                    0 => None,
                    1 => Some(String::new()),
                    _ => Some("5, target <reached>".into()),
                };
                r.flagged = if i % 2 == 0 {
                    String::new()
                } else {
                    "1 of 3 (hot|swap)".into()
                };
                for (j, v) in r.values.iter_mut().enumerate() {
                    v.mean = match (i + j) % 6 {
                        0 => None,
                        1 => Some(f64::NAN),
                        2 => Some(f64::NEG_INFINITY),
                        3 => Some(42.0),
                        4 => Some(-0.125),
                        _ => v.mean,
                    };
                    v.outliers = j % 2;
                    v.flagged = (i + 1) % 2;
                    if j == 1 {
                        v.note = String::new();
                    }
                    v.value = format!("{} <&> |", v.value);
                    v.text = format!("{} *[x]*", v.text);
                    v.brief = format!("{} *[x]*¹", v.brief);
                }
                r.values.push(Stat::empty());
            }
        }
        vec![plain, odd]
    }

    /// Each filter writes, for every table of every test report, byte for byte what the
    /// loop it replaced wrote with the same template's escaping.
    #[test]
    fn the_filters_write_what_the_template_loops_wrote() {
        for (name, filter, lp) in [
            ("index.html", "html_rows", LOOPS[0]),
            ("index.md", "markdown_rows", LOOPS[1]),
        ] {
            let looped = format!("{{% for t in tables %}}{lp}<end>\n{{% endfor %}}");
            let filtered =
                format!("{{% for t in tables %}}{{{{ t|{filter} }}}}<end>\n{{% endfor %}}");
            for (k, report) in reports().iter().enumerate() {
                let rows: usize = report.tables.iter().map(|t| t.rows.len()).sum();
                assert!(rows > 2, "report {k} has rows to write");
                assert_filter_writes_the_loop(
                    name,
                    &looped,
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
        assert!(embedded.html.source.contains("{{ t|html_rows }}"));
        assert!(embedded.markdown.source.contains("{{ t|markdown_rows }}"));
        let docs = include_str!("../../docs/TEMPLATES.md");
        for lp in LOOPS {
            assert!(docs.contains(lp), "docs/TEMPLATES.md shows\n{lp}");
        }
    }

    /// Given anything but a table of the context, a filter is an error naming it.
    #[test]
    fn a_filter_given_no_table_is_an_error() {
        let report = &reports()[0];
        for (name, src) in [
            ("index.html", "{{ tables[0].rows|html_rows }}"),
            ("index.md", "{{ 3|markdown_rows }}"),
        ] {
            let e = render_template(name, src, report).unwrap_err().to_string();
            assert!(e.contains("takes one of the report's tables"), "{e}");
        }
    }
}
