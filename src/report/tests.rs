//! The report model and its exporters, on a fixture workspace and store.

use super::number;
use super::*;
use crate::model::CellPattern;
use crate::plan::{expand, fixtures};
use crate::stats;
use crate::store::{FORMAT, RunKind, Sample};

pub(super) fn with_samples(values: &[f64]) -> CellData {
    CellData {
        samples: values
            .iter()
            .enumerate()
            .map(|(i, v)| Sample {
                format: FORMAT,
                seq: i as u32 + 1,
                kind: RunKind::Measured,
                session: "s".into(),
                started: 1000.0 + i as f64,
                ended: 1001.0 + i as f64,
                metrics: BTreeMap::from([("random_read".to_string(), *v)]),
                flags: vec![],
                telemetry: None,
                command: "fio".into(),
                log: String::new(),
                order: None,
                board_seq: None,
            })
            .collect(),
        ..CellData::default()
    }
}

/// The fixture study with one comparison: USB storage against the SD card.
pub(super) fn usb_against_sd() -> (
    crate::model::Workspace,
    crate::model::Scenario,
    crate::plan::Plan,
) {
    let mut ws = fixtures::workspace();
    ws.scenarios[0].compare.push(crate::model::Compare {
        test: "disk-4k".into(),
        metric: "random_read".into(),
        baseline: CellPattern {
            storage: Some("sd".into()),
            ..CellPattern::default()
        },
        candidate: CellPattern {
            storage: Some("usb".into()),
            filesystem: Some("as-is".into()),
            ..CellPattern::default()
        },
        pool: None,
        noise_band: None,
        percent: crate::model::Percent::OfBaseline,
    });
    let scenario = ws.scenarios[0].clone();
    let plan = expand(&ws, &scenario);
    (ws, scenario, plan)
}

/// The seed's UASP table (14.41 vs 20.59 MB/s 4K random read), as three runs each.
#[test]
fn a_compare_row_says_how_much_better_and_whether_it_is_significant() {
    let (ws, scenario, plan) = usb_against_sd();
    let mut data = BTreeMap::new();
    for c in &plan.cells {
        let v: &[f64] = match (
            c.address
                .storage
                .as_ref()
                .map(crate::model::StorageName::as_str),
            c.address.board.as_str(),
        ) {
            (Some("sd"), "pi-1") => &[14.2, 14.5, 14.53],
            (Some("usb"), "pi-1") => &[20.4, 20.7, 20.67],
            (Some("sd"), "pi-2") => &[14.2, 14.5, 14.53],
            (Some("usb"), "pi-2") => &[14.0, 14.9, 14.33],
            _ => &[1.0, 1.1, 1.2],
        };
        data.insert(c.key.clone(), with_samples(v));
    }
    let r = build(&ws, &scenario, &plan, &data);
    assert_eq!(r.comparisons.len(), 2, "{:#?}", r.comparisons);
    let pi1 = &r.comparisons[0];
    assert_eq!(pi1.baseline, "pi-1 / sd / as-is / installed");
    assert_eq!(pi1.candidate, "pi-1 / usb / as-is / installed");
    assert!(
        pi1.difference.starts_with("+42.9% (95% CI"),
        "{}",
        pi1.difference
    );
    assert_eq!(pi1.verdict, stats::Verdict::Better);
    assert!(pi1.significant);
    assert!(pi1.verdict_text.starts_with("faster (p = "), "{pi1:?}");
    let (ratio, lo, hi) = (
        pi1.ratio.unwrap(),
        pi1.ci_low_pct.unwrap(),
        pi1.ci_high_pct.unwrap(),
    );
    assert!(
        (ratio - 20.59 / 14.41).abs() < 1e-3 && lo < 42.9 && 42.9 < hi,
        "{pi1:?}"
    );
    let pi2 = &r.comparisons[1];
    assert!(!pi2.significant, "{pi2:?}");
    // Equal means from three noisy runs each: too few runs to say, not "no difference".
    assert_eq!(pi2.verdict, stats::Verdict::Inconclusive, "{pi2:?}");
    assert!(pi2.runs_needed.is_some_and(|r| r.runs > 3), "{pi2:?}");
    assert!(
        pi2.difference.starts_with("95% CI ") && pi2.verdict_text.starts_with("inconclusive: "),
        "no lone percent where there is no difference: {pi2:?}"
    );
    assert!(
        pi1.difference.contains("+35.3% of the mean of both"),
        "the seed's 35%: {}",
        pi1.difference
    );
    let md = String::from_utf8(Markdown.render(&r).unwrap()).unwrap();
    // Named by the tables' labels (the compared storage as baseline and candidate, the
    // board, which varies, in its column), in the one convention said once above.
    assert!(
        md.contains(
            "| pi-1 | Samsung Evo+ 32GB | usb | +42.9% (+39.5% .. +46.4%) | **faster, p = "
        ),
        "{md}"
    );
    let at = md.find("## Comparisons").unwrap();
    let comparisons = &md[at..md[at + 1..].find("\n## ").map_or(md.len(), |e| at + 1 + e)];
    assert!(!comparisons.contains(" / "), "raw names: {comparisons}");
    assert!(!md.contains("of the mean of both"), "one convention: {md}");
    assert_eq!(
        md.matches("in percent of the baseline's mean").count(),
        1,
        "{md}"
    );
    assert!(md.contains("Fieller's 95% confidence interval"), "{md}");
}

/// A run whose throttle state is unknown is counted and shown like a flagged
/// one, and stays in the statistics even when flagged runs are left out.
#[test]
fn a_throttle_state_unknown_is_a_warning_that_excludes_nothing() {
    let (ws, mut scenario, _) = usb_against_sd();
    scenario.method.validity.exclude_flagged = true;
    let plan = expand(&ws, &scenario);
    let mut data = BTreeMap::new();
    for c in &plan.cells {
        let mut d = with_samples(&[14.2, 14.5, 14.53]);
        for (i, s) in d.samples.iter_mut().enumerate() {
            let mut t = crate::telemetry::TelemetrySummary::default();
            if i < 2 {
                t.throttled_state = Some("unknown".into());
                t.throttled_error = Some("vcgencmd get_throttled failed: exit 255".into());
            }
            if i == 2 {
                t.swap_out_pages = Some(10);
            }
            s.telemetry = Some(serde_json::to_value(&t).unwrap().into());
        }
        data.insert(c.key.clone(), d);
    }
    let r = build(&ws, &scenario, &plan, &data);
    let row = &r.tables[0].rows[0];
    assert_eq!(
        row.flagged,
        "1 of 3 (swapping), excluded; 2 of 3 (throttle state unknown), included"
    );
    assert_eq!((row.flagged_runs, row.warned_runs), (1, 2));
    assert_eq!(row.values[0].n, 2, "only the swapping run is left out");
    assert!(r.tables[0].any_flagged);
    let md = String::from_utf8(Markdown.render(&r).unwrap()).unwrap();
    // A mark per kind on each value, explained once under the table.
    assert!(
        md.lines()
            .any(|l| l.starts_with("| pi-1 | Samsung Evo+ 32GB |") && l.ends_with("¹,² |")),
        "{md}"
    );
    assert!(
        md.contains("¹ some runs: swapping (left out of the statistics). ² some runs: throttle state unknown (kept in the statistics)."),
        "{md}"
    );
    assert!(!md.contains("flagged runs"), "{md}");
}

/// Flagged runs that the method leaves out of the tables must not decide a
/// comparison either: nine throttled runs would otherwise make the USB "better".
#[test]
fn comparisons_leave_out_the_flagged_runs_the_tables_leave_out() {
    let (mut ws, _, _) = usb_against_sd();
    ws.scenarios[0].method.validity.exclude_flagged = true;
    let scenario = ws.scenarios[0].clone();
    let plan = expand(&ws, &scenario);
    let mut data = BTreeMap::new();
    for c in &plan.cells {
        let usb = c
            .address
            .storage
            .as_ref()
            .is_some_and(|s| s.as_str() == "usb");
        let mut d = with_samples(if usb {
            &[
                14.0, 14.9, 14.33, 30.0, 30.1, 30.2, 29.9, 30.0, 30.1, 30.2, 29.9, 30.0,
            ]
        } else {
            &[14.2, 14.5, 14.53]
        });
        if usb {
            for s in &mut d.samples[3..] {
                s.flags = vec!["throttled".into()];
            }
        }
        data.insert(c.key.clone(), d);
    }
    let r = build(&ws, &scenario, &plan, &data);
    assert!(!r.comparisons.is_empty());
    for row in &r.comparisons {
        assert!(!row.significant, "{row:?}");
        assert_ne!(row.verdict, stats::Verdict::Better, "{row:?}");
    }
}

#[test]
fn titles_and_descriptions_are_inert_in_markdown() {
    let (mut ws, _, _) = usb_against_sd();
    ws.scenarios[0].title = "<script>alert(1)</script> | a & b `x` [l](http://e)".into();
    ws.scenarios[0].description = Some("<img src=x onerror=alert(1)>\nline".into());
    ws.recipes.get_mut(&"xz".into()).unwrap().description = "*x* <b>".into();
    let scenario = ws.scenarios[0].clone();
    let plan = expand(&ws, &scenario);
    let r = build(&ws, &scenario, &plan, &BTreeMap::new());
    let md = String::from_utf8(Markdown.render(&r).unwrap()).unwrap();
    assert!(
        !md.contains("<script") && !md.contains("<img") && !md.contains("<b>"),
        "{md}"
    );
    assert!(
        md.starts_with(
            "# &lt;script&gt;alert(1)&lt;/script&gt; \\| a &amp; b \\`x\\` \\[l\\](http://e)\n"
        ),
        "{md}"
    );
    assert!(
        md.contains("&lt;img src=x onerror=alert(1)&gt;\nline"),
        "{md}"
    );
    assert!(md.contains("\\*x\\* &lt;b&gt;"), "{md}");
}

#[test]
fn numbers_have_four_significant_digits() {
    assert_eq!(number(12.3456), "12.35");
    assert_eq!(number(0.012345), "0.01235");
    assert_eq!(number(123456.0), "123456");
    assert_eq!(number(9.0), "9.000");
    assert_eq!(number(-0.00001), "-0.00001000");
    assert_eq!(number(0.0), "0");
}

/// The whole report of a small study, as Markdown and HTML. Nothing in a report is
/// volatile (no clock, no absolute path), so the snapshots are compared whole.
#[test]
fn report_snapshots() {
    let (ws, scenario, plan) = usb_against_sd();
    let mut data = BTreeMap::new();
    for (i, c) in plan.cells.iter().enumerate() {
        // One cell left unmeasured, to show the "Not complete" section.
        if i == 2 {
            continue;
        }
        let base = 10.0 + i as f64 * 3.0;
        let mut d = with_samples(&[base, base * 1.02, base * 0.97, base * 1.01]);
        // Stored facts for the first cells, to show the provenance section.
        if i < 2 {
            let f = super::tests_provenance::cell_with_facts(c, "Linux 6.1.0 aarch64");
            (d.record, d.facts) = (f.record, f.facts);
        }
        data.insert(c.key.clone(), d);
    }
    let r = build(&ws, &scenario, &plan, &data);
    // Volatile between builds, not between renders: the rendering benchpipe's version
    // and the cell keys (a fixture or key-format change moves them).
    let filtered = |bytes: Vec<u8>| {
        let mut text = String::from_utf8(bytes).unwrap().replace(
            &format!("benchpipe {}.", env!("CARGO_PKG_VERSION")),
            "benchpipe [version].",
        );
        for c in &plan.cells {
            text = text.replace(&c.key.to_string()[..super::provenance::SHORT_KEY], "[key]");
        }
        text
    };
    insta::assert_snapshot!("report_md", filtered(Markdown.render(&r).unwrap()));
    insta::assert_snapshot!("report_html", filtered(Html.render(&r).unwrap()));
}

#[test]
fn the_interval_decides_the_digits_of_the_mean() {
    use super::{mean_ci, percent};
    assert_eq!(mean_ci(181.7, 56.18), "182 ± 56");
    assert_eq!(mean_ci(6.337, 0.5353), "6.34 ± 0.54");
    assert_eq!(mean_ci(0.07, 0.02484), "0.070 ± 0.025");
    assert_eq!(mean_ci(44367.0, 13716.0), "44367 ± 13716");
    assert_eq!(percent(0.95), "95");
    assert_eq!(percent(0.025), "2.5");
}

#[test]
fn a_template_that_fails_is_an_export_error_naming_the_template() {
    let (ws, scenario, plan) = usb_against_sd();
    let r = build(&ws, &scenario, &plan, &BTreeMap::new());
    let e = export::render_template("index.md", "{{ nope.deeper }}", &r).unwrap_err();
    assert!(
        matches!(
            e,
            ExportError::Render {
                name: "index.md",
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().starts_with("rendering index.md: "), "{e}");
    let e = export::render_template("index.md", "{% if %}", &r).unwrap_err();
    assert!(matches!(e, ExportError::Template(_)), "{e:?}");
}

/// No filesystem comparison is drawn from a raw-device test, even from cells that carry
/// filesystems (a plan made before the recipe said `uses_storage = "device"`): the
/// differences between them are the device's noise ("btrfs -68.8%" for hdparm).
#[test]
fn a_raw_device_test_gives_no_filesystem_comparison() {
    let mut ws = fixtures::workspace();
    ws.scenarios[0].compare.push(crate::model::Compare {
        test: "disk-4k".into(),
        metric: "random_read".into(),
        baseline: CellPattern {
            filesystem: Some("as-is".into()),
            ..CellPattern::default()
        },
        candidate: CellPattern {
            filesystem: Some("ext4".into()),
            ..CellPattern::default()
        },
        pool: None,
        noise_band: None,
        percent: crate::model::Percent::OfBaseline,
    });
    let scenario = ws.scenarios[0].clone();
    let plan = expand(&ws, &scenario);
    let data: BTreeMap<_, _> = plan
        .cells
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let base = if c.filesystem.as_ref().is_some_and(|f| f.kind == "ext4") {
                30.0
            } else {
                100.0
            };
            (
                c.key.clone(),
                with_samples(&[base, base + 1.0 + i as f64, base + 2.0]),
            )
        })
        .collect();
    let rows = comparisons(&ws, &scenario, &plan, &data);
    assert!(
        !rows.is_empty(),
        "a file-writing test is compared across filesystems"
    );
    ws.recipes.get_mut(&"disk-4k".into()).unwrap().raw_device = true;
    assert!(comparisons(&ws, &scenario, &plan, &data).is_empty());
}

/// Watts are columns of their own with every metric's statistics, present only when
/// runs have them; per-watt and joules metrics come from the same runs; and a
/// comparison may be drawn on watts (the seed's UASP power savings).
#[test]
fn watts_and_metrics_derived_from_them_are_columns_with_statistics() {
    let (mut ws, mut scenario, _) = usb_against_sd();
    let recipe = ws.recipes.get_mut(&"disk-4k".into()).unwrap();
    for (name, derive, unit) in [
        (
            "read_per_w",
            crate::model::Derived::PerWatt("random_read".into()),
            "B/s/W",
        ),
        ("energy", crate::model::Derived::Joules, "J"),
    ] {
        recipe.metrics.push(crate::model::MetricSpec {
            name: name.into(),
            label: None,
            from: String::new(),
            scale: 1.0,
            unit: unit.into(),
            better: crate::model::Better::Higher,
            primary: false,
            derive: Some(derive),
            member: crate::model::MemberMetric::Whole,
            flag: None,
        });
    }
    scenario.compare[0].metric = "power_w".into();
    let plan = expand(&ws, &scenario);
    let without = plan
        .cells
        .iter()
        .map(|c| (c.key.clone(), with_samples(&[14.2, 14.5, 14.53])))
        .collect::<BTreeMap<_, _>>();
    let r = build(&ws, &scenario, &plan, &without);
    let names: Vec<&str> = r.tables[0]
        .columns
        .iter()
        .map(|m| m.name.as_str())
        .collect();
    assert_eq!(names, ["random_read", "read_per_w", "energy"]);
    assert_eq!(
        r.tables[0].rows[0].values[1].n, 0,
        "no watts, no per-watt value"
    );

    let mut data = BTreeMap::new();
    for c in &plan.cells {
        let usb = c
            .address
            .storage
            .as_ref()
            .is_some_and(|s| s.as_str() == "usb");
        let mut d = with_samples(&[14.0, 14.0, 14.0]);
        for (i, s) in d.samples.iter_mut().enumerate() {
            // Each run lasts 1 s (`with_samples`).
            let w = if usb { 4.87 } else { 5.29 } + i as f64 * 0.01;
            s.metrics.insert("power_w".into(), w);
            s.metrics
                .insert("idle_w".into(), if usb { 3.40 } else { 3.75 });
        }
        data.insert(c.key.clone(), d);
    }
    let r = build(&ws, &scenario, &plan, &data);
    let t = &r.tables[0];
    let names: Vec<&str> = t.columns.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(
        names,
        ["random_read", "read_per_w", "energy", "idle_w", "power_w"]
    );
    assert_eq!(t.columns[4].unit, "W");
    assert_eq!(t.columns[4].better, "lower is better");
    for row in &t.rows {
        let w = row.values[4].mean.unwrap();
        assert_eq!(row.values[4].n, 3);
        assert!(row.values[4].ci_half.is_some(), "{row:?}");
        // Means of per-run ratios and products: 14 / W and W × 1 s.
        let per_w: f64 = (0..3)
            .map(|i| 14.0 / (w - 0.01 + f64::from(i) * 0.01))
            .sum::<f64>()
            / 3.0;
        assert!(
            (row.values[1].mean.unwrap() - per_w).abs() < 1e-9,
            "{row:?}"
        );
        assert!((row.values[2].mean.unwrap() - w).abs() < 1e-9, "{row:?}");
        assert_eq!(row.values[3].sd, Some(0.0));
    }
    // results.csv's values, whether taken from what the views judged (the recipe's
    // metrics, derived ones too) or looked up (watts), are each run's own.
    let mut seen = std::collections::BTreeSet::new();
    let rows =
        super::tests_exports::parse_csv(&String::from_utf8(Csv.render(&r).unwrap()).unwrap());
    let column = |name: &str| rows[0].iter().position(|c| c == name).unwrap();
    let (key_column, test_column) = (column("cell"), column("test"));
    let mut runs_seen = 0;
    for (key, d) in &data {
        let of_cell: Vec<&Vec<String>> = rows[1..]
            .iter()
            .filter(|row| row[key_column] == key.to_string())
            .collect();
        assert_eq!(of_cell.len(), d.samples.len());
        for (row, s) in of_cell.iter().zip(&d.samples) {
            runs_seen += 1;
            for (_, spec) in r
                .sample_metrics
                .iter()
                .filter(|(t, _)| *t == row[test_column])
            {
                let want = spec.value(&s.metrics, s.ended - s.started);
                let text = &row[column(&format!("{} ({})", spec.name, spec.unit))];
                let got = (!text.is_empty()).then(|| text.parse::<f64>().unwrap());
                assert_eq!(got.map(f64::to_bits), want.map(f64::to_bits), "{row:?}");
                if got.is_some() {
                    seen.insert(spec.name.as_str());
                }
            }
        }
    }
    assert_eq!(runs_seen, rows.len() - 1);
    assert_eq!(
        seen,
        std::collections::BTreeSet::from([
            "energy",
            "idle_w",
            "power_w",
            "random_read",
            "read_per_w"
        ])
    );
    let cmp = &r.comparisons[0];
    assert_eq!(cmp.metric, "disk-4k.power_w");
    assert!(cmp.difference.starts_with('-'), "{cmp:?}");
    assert_eq!(cmp.verdict, stats::Verdict::Better, "{cmp:?}");
}

/// docs/TEMPLATES.md names every field of the templates' context: each key of the
/// serialized model (at any depth, of a report with comparisons, provenance, not-complete
/// and not-applicable rows) is in a code span there.
#[test]
fn the_template_context_is_documented() {
    fn keys(v: &serde_json::Value, out: &mut std::collections::BTreeSet<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    out.insert(k.clone());
                    keys(v, out);
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|v| keys(v, out)),
            _ => {}
        }
    }
    let (ws, scenario, plan) = usb_against_sd();
    let mut data = BTreeMap::new();
    for (i, c) in plan.cells.iter().enumerate().filter(|(i, _)| *i != 2) {
        let base = 10.0 + i as f64 * 3.0;
        let mut d = with_samples(&[base, base * 1.02, base * 0.97, base * 1.01]);
        let f = super::tests_provenance::cell_with_facts(c, "Linux 6.1.0 aarch64");
        (d.record, d.facts) = (f.record, f.facts);
        data.insert(c.key.clone(), d);
    }
    let r = build(&ws, &scenario, &plan, &data);
    assert!(!r.comparisons.is_empty() && !r.provenance.is_empty() && !r.incomplete.is_empty());
    let mut found = std::collections::BTreeSet::new();
    keys(&serde_json::to_value(&r).unwrap(), &mut found);
    let doc = include_str!("../../docs/TEMPLATES.md");
    let mut named = std::collections::BTreeSet::new();
    for (i, span) in doc.split('`').enumerate() {
        if i % 2 == 1 {
            named.extend(
                span.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .filter(|w| !w.is_empty())
                    .map(str::to_string),
            );
        }
    }
    let missing: Vec<&String> = found.difference(&named).collect();
    assert!(
        missing.is_empty(),
        "docs/TEMPLATES.md does not name {missing:?}"
    );
    // The top level by its own name: `tables[]`, `method.runs`, `title`.
    let top = serde_json::to_value(&r).unwrap();
    for k in top.as_object().unwrap().keys() {
        assert!(
            ["`", "[", "."]
                .iter()
                .any(|end| doc.contains(&format!("`{k}{end}"))),
            "docs/TEMPLATES.md has no entry for `{k}`"
        );
    }
}

/// An override template that would loop for ages runs out of fuel instead: a diagnostic
/// at its file, like any other mistake in it.
#[test]
fn an_override_template_that_loops_for_ages_runs_out_of_fuel() {
    let (ws, scenario, plan) = usb_against_sd();
    let r = build(&ws, &scenario, &plan, &BTreeMap::new());
    let t = Templates::embedded()
        .with_override(
            "index.html",
            "reports/templates/index.html".into(),
            "{% for a in range(100000) %}{% for b in range(100000) %}{% for c in range(100000) %}{% endfor %}{% endfor %}{% endfor %}".into(),
        )
        .unwrap();
    let started = std::time::Instant::now();
    match super::Exporter::render(&t.html, &r) {
        Err(ExportError::Override(d)) => {
            let text = d.to_string();
            assert!(text.contains("reports/templates/index.html"), "{text}");
            assert!(text.contains("fuel"), "{text}");
        }
        other => panic!("{other:?}"),
    }
    eprintln!("out of fuel after {:?}", started.elapsed());
}

/// Found writing the fuzz target `report_template`: fuel counts steps, not bytes, so a
/// long string written in a short loop rendered terabytes (`check` holds it in memory).
/// An override stops at `TEMPLATE_MAX_OUTPUT`, a diagnostic at its file.
#[test]
fn an_override_template_writing_without_end_stops_at_the_output_bound() {
    /// Counts what is written, keeping none of it.
    struct Counted(u64);
    impl std::io::Write for Counted {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len() as u64;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let (ws, scenario, plan) = usb_against_sd();
    let r = build(&ws, &scenario, &plan, &BTreeMap::new());
    let source = "{% set s = 'x' * 99999999 %}{% for i in range(100000) %}{{ s }}{% endfor %}";
    let t = Templates::embedded()
        .with_override(
            "index.md",
            "reports/templates/index.md".into(),
            source.into(),
        )
        .unwrap();
    let mut written = Counted(0);
    match super::Exporter::write_to(&t.markdown, &r, &mut written) {
        Err(ExportError::Override(d)) => {
            let text = d.to_string();
            assert!(text.contains("reports/templates/index.md"), "{text}");
            assert!(text.contains("writes more than"), "{text}");
        }
        other => panic!("{other:?}"),
    }
    assert!(written.0 <= TEMPLATE_MAX_OUTPUT, "{} bytes", written.0);
}

#[test]
fn a_table_has_a_watts_column_only_where_a_current_measured_run_has_watts() {
    let (ws, scenario, _) = usb_against_sd();
    let plan = expand(&ws, &scenario);
    let columns = |data: &BTreeMap<CellKey, CellData>| -> Vec<String> {
        build(&ws, &scenario, &plan, data).tables[0]
            .columns
            .iter()
            .map(|c| c.name.clone())
            .collect()
    };
    let plain = || -> BTreeMap<CellKey, CellData> {
        plan.cells
            .iter()
            .map(|c| (c.key.clone(), with_samples(&[14.2, 14.5, 14.53])))
            .collect()
    };
    let first = plan.cells[0].key.clone();

    // A warm-up's watts, and the watts of a run a redo superseded, say nothing of the
    // runs the table shows.
    let mut data = plain();
    let d = data.get_mut(&first).unwrap();
    d.samples[0].kind = RunKind::Warmup;
    d.samples[0].metrics.insert("power_w".into(), 5.0);
    d.samples[1].metrics.insert("idle_w".into(), 3.0);
    d.redo = Some(crate::store::Redo {
        format: FORMAT,
        after_seq: 2,
        at: 0.0,
        session: "s".into(),
    });
    assert_eq!(columns(&data), ["random_read"]);

    // One current measured run of one cell is enough for its column, in the table's
    // order (idle before load) whichever the run stored first.
    data.get_mut(&first).unwrap().samples[2]
        .metrics
        .insert("power_w".into(), 5.0);
    assert_eq!(columns(&data), ["random_read", "power_w"]);
    data.get_mut(&first).unwrap().samples[2]
        .metrics
        .insert("idle_w".into(), 3.0);
    assert_eq!(columns(&data), ["random_read", "idle_w", "power_w"]);
}
