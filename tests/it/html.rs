//! Integration tests: the HTML report in a real browser. A report rendered by the real
//! binary from a real apply (two local boards, real xz, a comparison) is loaded in
//! headless Chromium (Debian's `chromium`) at desktop and phone width: every table and
//! chart is in the DOM with its content, sorts by column, sits inside the viewport (a
//! table scrolls in its wrapper), its chart text is big enough to read, and its area of
//! a screenshot is drawn (a real PNG, decoded here, not one colour); no console message
//! and no script error. Without script the page still draws every table and chart. And a
//! workspace's override template is used, stays deterministic, and a broken one is a
//! diagnostic at its file and line (exit 2).
//!
//! The browser cannot be asked questions without a remote-debugging client, so the test
//! copies the page with two scripts of its own: one first in `<head>` that records every
//! error and console call, one last in `<body>` that measures, clicks the sort buttons
//! and writes what it saw as JSON into the DOM, which `--dump-dom` prints.

mod browser;

use crate::scratch::Scratch;
use serde_json::Value;

use crate::cannot_run;
use crate::spine::{Project, text};
use browser::{
    area, browse, chromium, console_lines, decode_png, framed, harness_result, instrumented, keep,
    window_width,
};

/// Desktop and phone widths, in CSS pixels.
const WIDTHS: [u32; 2] = [1280, 390];
/// The tallest screenshot taken; a page taller than this is a failure of its own here.
const MAX_HEIGHT: u32 = 14_000;
/// At phone width no chart text may render smaller than this (CSS pixels).
const MIN_CHART_PX: f64 = 9.0;

/// Is `values` sorted in `dir` (`ascending`/`descending`), with empty cells last?
fn sorted(values: &[Value], dir: &str) -> bool {
    let present: Vec<f64> = values.iter().filter_map(Value::as_f64).collect();
    let first_null = values
        .iter()
        .position(Value::is_null)
        .unwrap_or(values.len());
    let nulls_last = values[first_null..].iter().all(Value::is_null);
    let ordered = present.windows(2).all(|w| match dir {
        "ascending" => w[0] <= w[1],
        "descending" => w[0] >= w[1],
        _ => false,
    });
    nulls_last && ordered
}

/// A recipe whose two metrics are random (from /dev/urandom), one higher and one lower
/// is better, so every bar has an error bar and both sort directions are used.
const NOISY: &str = r#"description = "two random numbers, a stand-in for a noisy tool"
uses_storage = false
[run]
command = "a=$(od -An -N1 -tu1 /dev/urandom | tr -d ' '); b=$(od -An -N1 -tu1 /dev/urandom | tr -d ' '); echo \"{\\\"a\\\": $((100 + a)), \\\"b\\\": $((20 + b))}\""
parse = "json"
[metrics]
throughput = { label = "throughput <of a & b>", from = "a", unit = "MB/s", better = "higher" }
latency = { label = "latency", from = "b", unit = "ms", better = "lower" }
"#;

/// Two local boards (one with a long model name), real xz and `noisy`, three measured
/// runs: a report with data tables and charts per test, a comparison table and
/// provenance tables.
fn project() -> Project {
    let p = Project::local("html")
        .file("pipeline/noisy.toml", NOISY)
        .local_scenario(
            "s",
            &["xz", "noisy"],
            3,
            "\n[[report.compare]]\nmetric = \"noisy.throughput\"\nbaseline = { board = \"here\" }\n\
             candidate = { board = \"there\" }\n",
        );
    let there = p.dir.join("there-work");
    p.edit(
        "scenarios/s.toml",
        "board = [\"here\"]",
        "board = [\"here\", \"there\"]",
    )
    .file(
        "boards/there.toml",
        &format!(
            "model = \"second controller with a long model name, Rev 1.4\"\nlocal = true\n\
             workdir = \"{w}\"\n\n\
             [[storage]]\nname = \"scratch\"\nrole = \"scratch\"\npath = \"{w}/scratch\"\n",
            w = there.display()
        ),
    )
}

/// The issue's check: the page in headless Chromium at desktop and phone width.
#[test]
fn the_report_page_in_headless_chromium_draws_every_table_and_chart_sorts_and_fits_a_phone() {
    let Some(chromium) = chromium() else {
        cannot_run(
            "html::the_report_page_in_headless_chromium",
            "no chromium (apt-get install -y chromium)",
        );
        return;
    };
    let p = project();
    let apply = p.bp(&["apply", "scenarios/s.toml"]);
    assert!(apply.status.success(), "{}", text(&apply));
    let page = std::fs::read_to_string(p.dir.join("reports/s/index.html")).unwrap();

    // Self-contained: nothing is fetched from anywhere.
    for external in [
        "src=",
        "href=\"http",
        "@import",
        "url(",
        "<link",
        "<img",
        "<iframe",
    ] {
        assert!(!page.contains(external), "the page loads `{external}`");
    }
    let source_tables = page.matches("<table").count();
    let source_charts = page.matches("<figure class=\"chart\"><svg").count();
    assert!(
        source_tables >= 4,
        "data tables, a comparison, provenance: {source_tables}"
    );
    assert!(
        source_charts >= 5,
        "xz's real, user, sys and noisy's two: {source_charts}"
    );
    assert!(
        page.contains("class=\"compare sortable\""),
        "a comparison table"
    );
    assert!(
        page.contains("throughput &lt;of a &amp; b&gt;") && !page.contains("<of a"),
        "labels are escaped"
    );

    let dir = p.dir.join("browser");
    std::fs::create_dir_all(&dir).unwrap();
    let page_copy = instrumented(&page);
    let frame = |width: u32, height: u32| {
        let copy = dir.join(format!("frame-{width}-{height}.html"));
        std::fs::write(&copy, framed(&page_copy, width, height)).unwrap();
        format!("file://{}", copy.display())
    };

    for width in WIDTHS {
        let o = browse(
            &chromium,
            &dir,
            &[
                "--dump-dom".into(),
                format!("--window-size={},900", window_width(width)),
            ],
            &frame(width, 900),
        );
        assert!(o.status.success(), "chromium --dump-dom: {}", text(&o));
        let console = console_lines(&o.stderr);
        assert!(
            console.is_empty(),
            "console messages at {width}px: {console:#?}"
        );
        let dom = String::from_utf8_lossy(&o.stdout);
        let r = harness_result(&dom);
        assert_eq!(
            r["errors"],
            serde_json::json!([]),
            "script errors at {width}px"
        );
        assert_eq!(
            r["console"],
            serde_json::json!([]),
            "console calls at {width}px"
        );
        assert_eq!(r["inner_width"].as_u64(), Some(u64::from(width)), "{r}");
        // The page itself never scrolls sideways; a wide table scrolls in its wrapper.
        assert!(
            r["scroll_width"].as_f64().unwrap() <= f64::from(width),
            "the page is wider than {width}px: {}",
            r["scroll_width"]
        );

        let tables = r["tables"].as_array().unwrap();
        assert_eq!(tables.len(), source_tables, "every table is in the DOM");
        for t in tables {
            let what = format!(
                "table {} at {width}px",
                t["text"]
                    .as_str()
                    .unwrap()
                    .chars()
                    .take(80)
                    .collect::<String>()
            );
            assert!(t["rows"].as_u64().unwrap() >= 1, "{what}: no rows");
            assert!(t["box"]["w"].as_f64().unwrap() > 50.0, "{what}: {t}");
            assert!(t["box"]["h"].as_f64().unwrap() > 20.0, "{what}: {t}");
            let wrap = &t["wrap"];
            assert!(wrap.is_object(), "{what}: not inside a .table-wrap");
            assert!(
                wrap["right"].as_f64().unwrap() <= f64::from(width) + 0.5,
                "{what}: its wrapper runs past the viewport: {wrap}"
            );
            if t["cls"].as_str().unwrap().contains("sortable") {
                // The page's own script ran: every header is a button.
                assert_eq!(
                    t["buttons"], t["heads"],
                    "{what}: headers without a sort button"
                );
            }
        }
        let charts = r["charts"].as_array().unwrap();
        assert_eq!(charts.len(), source_charts, "every chart is in the DOM");
        for c in charts {
            let what = format!("chart {} at {width}px", c["label"]);
            assert!(
                c["bars"].as_u64().unwrap() >= 2,
                "{what}: two boards, two bars: {c}"
            );
            let noisy = c["label"].as_str().unwrap().starts_with("throughput")
                || c["label"].as_str().unwrap().starts_with("latency");
            if noisy {
                assert_eq!(
                    c["cis"].as_u64(),
                    Some(2),
                    "{what}: an error bar per bar: {c}"
                );
            }
            assert!(c["box"]["w"].as_f64().unwrap() > 200.0, "{what}: {c}");
            assert!(
                c["box"]["right"].as_f64().unwrap() <= f64::from(width) + 0.5,
                "{what}: runs past the viewport: {c}"
            );
            if width < 500 {
                assert!(
                    c["least_px"].as_f64().unwrap() >= MIN_CHART_PX,
                    "{what}: text smaller than {MIN_CHART_PX}px: {c}"
                );
            }
        }
        let sorts = r["sorts"].as_array().unwrap();
        assert!(sorts.len() >= 3, "numeric columns sorted: {r}");
        for s in sorts {
            let clicks = s["clicks"].as_array().unwrap();
            let first = if s["better"] == "higher" {
                "descending"
            } else {
                "ascending"
            };
            let second = if first == "ascending" {
                "descending"
            } else {
                "ascending"
            };
            for (click, dir) in clicks.iter().zip([first, second]) {
                assert_eq!(click["dir"], dir, "{s}");
                assert!(
                    sorted(click["values"].as_array().unwrap(), dir),
                    "not sorted {dir}: {s}"
                );
            }
        }

        // The screenshot, as tall as the page: each table's and chart's area is drawn.
        let height = r["height"].as_f64().unwrap().ceil() as u32;
        assert!(height <= MAX_HEIGHT, "a page {height}px tall at {width}px");
        let shot = dir.join(format!("shot-{width}.png"));
        let o = browse(
            &chromium,
            &dir,
            &[
                format!("--screenshot={}", shot.display()),
                format!("--window-size={},{height}", window_width(width)),
            ],
            &frame(width, height),
        );
        assert!(o.status.success(), "chromium --screenshot: {}", text(&o));
        keep(&shot);
        let png = decode_png(&std::fs::read(&shot).unwrap());
        assert_eq!(
            (png.width, png.height),
            (window_width(width) as usize, height as usize)
        );
        let whole = area(
            &png,
            &serde_json::json!({"x": 0, "y": 0, "w": width, "h": height}),
        );
        assert!(
            whole.colours > 16,
            "the screenshot is (nearly) one colour: {whole:?}"
        );
        for t in tables {
            let a = area(&png, &t["box"]);
            let what = format!(
                "table {} at {width}px",
                t["text"]
                    .as_str()
                    .unwrap()
                    .chars()
                    .take(60)
                    .collect::<String>()
            );
            assert!(a.pixels > 1000, "{what}: off the screenshot: {a:?}");
            assert!(a.colours >= 8 && a.dark > 50, "{what}: not drawn: {a:?}");
        }
        for c in charts {
            let a = area(&png, &c["box"]);
            let what = format!("chart {} at {width}px", c["label"]);
            assert!(a.colours >= 8 && a.dark > 50, "{what}: not drawn: {a:?}");
            // A bar at a mean of 0 is one pixel wide; the random ones are long.
            if c["bar_px"].as_f64().unwrap() > 40.0 {
                assert!(a.bar_blue > 50, "{what}: no bar drawn: {a:?}");
            }
        }
    }

    // Without script: the page with its one script cut out (headless Chromium has no
    // switch that stops a page's script yet takes a screenshot), measured by the harness
    // at desktop width: every data table and the comparison have their rows and no sort
    // buttons, and they and every chart are drawn (provenance stays folded in its
    // <details>; the harness opens them only to measure).
    assert_eq!(
        page.matches("<script>").count(),
        1,
        "the page has one script"
    );
    let start = page.find("<script>").unwrap();
    let end = page.find("</script>").unwrap() + "</script>".len();
    let bare = instrumented(&format!("{}{}", &page[..start], &page[end..]));
    let copy = dir.join("bare.html");
    std::fs::write(&copy, &bare).unwrap();
    let url = format!("file://{}", copy.display());
    let width = WIDTHS[0];
    let o = browse(
        &chromium,
        &dir,
        &["--dump-dom".into(), format!("--window-size={width},900")],
        &url,
    );
    assert!(o.status.success(), "{}", text(&o));
    let r = harness_result(&String::from_utf8_lossy(&o.stdout));
    assert_eq!(r["errors"], serde_json::json!([]));
    let height = r["height"].as_f64().unwrap().ceil() as u32;
    let shot = dir.join("shot-noscript.png");
    let o = browse(
        &chromium,
        &dir,
        &[
            format!("--screenshot={}", shot.display()),
            format!("--window-size={width},{height}"),
        ],
        &url,
    );
    assert!(o.status.success(), "{}", text(&o));
    keep(&shot);
    let png = decode_png(&std::fs::read(&shot).unwrap());
    let tables = r["tables"].as_array().unwrap();
    assert_eq!(tables.len(), source_tables);
    for t in tables
        .iter()
        .filter(|t| t["cls"].as_str().unwrap().contains("sortable"))
    {
        assert_eq!(t["buttons"], 0, "no script, no buttons: {t}");
        assert!(t["rows"].as_u64().unwrap() >= 1, "{t}");
        let a = area(&png, &t["box"]);
        assert!(
            a.colours >= 8 && a.dark > 50,
            "without script, a table is not drawn: {a:?}: {t}"
        );
    }
    let charts = r["charts"].as_array().unwrap();
    assert_eq!(charts.len(), source_charts);
    for c in charts {
        let a = area(&png, &c["box"]);
        assert!(
            a.colours >= 8 && a.dark > 50,
            "without script, a chart is not drawn: {a:?}: {c}"
        );
    }
}

/// The harness itself can fail: a page whose script throws, and one whose table runs
/// past a phone's width, are caught (so a passing run above means something).
#[test]
fn the_report_page_harness_catches_a_script_error_and_an_overflowing_table() {
    let Some(chromium) = chromium() else {
        cannot_run("html::the_report_page_harness_catches", "no chromium");
        return;
    };
    let dir = Scratch::new("html-harness");
    let page = "<!DOCTYPE html><html><head><title>x</title></head><body>\
        <table style=\"width:900px\"><tbody><tr><td>wide</td></tr></tbody></table>\
        <script>console.warn('careful'); missing();</script></body></html>";
    let copy = dir.join("bad.html");
    std::fs::write(&copy, framed(&instrumented(page), 390, 900)).unwrap();
    let o = browse(
        &chromium,
        &dir,
        &["--dump-dom".into(), "--window-size=500,900".into()],
        &format!("file://{}", copy.display()),
    );
    let _ = std::fs::remove_dir_all(&dir);
    assert!(o.status.success(), "{}", text(&o));
    let r = harness_result(&String::from_utf8_lossy(&o.stdout));
    assert!(r["errors"][0].as_str().unwrap().contains("missing"), "{r}");
    assert_eq!(r["console"], serde_json::json!(["warn: careful"]));
    assert!(!console_lines(&o.stderr).is_empty());
    assert_eq!(r["inner_width"].as_u64(), Some(390), "{r}");
    assert!(r["scroll_width"].as_f64().unwrap() > 390.0, "{r}");
    assert!(r["tables"][0]["wrap"].is_null());
}

/// A workspace's `reports/templates/index.html` replaces the embedded page (and renders
/// the same bytes twice); one that does not parse, or names a variable the context lacks,
/// stops `report` and `check` with exit 2 at its file and line; a directory or a FIFO in
/// its place is refused without reading it.
#[test]
fn a_report_template_override_is_used_and_a_broken_one_is_exit_2_at_its_line() {
    let p = Project::local("html-override").local_scenario("s", &["sleepy"], 2, "");
    let apply = p.bp(&["apply", "scenarios/s.toml"]);
    assert!(apply.status.success(), "{}", text(&apply));
    let templates = p.dir.join("reports/templates");
    std::fs::create_dir_all(&templates).unwrap();
    std::fs::write(
        templates.join("index.html"),
        "<!DOCTYPE html>\n<title>{{ title }}</title>\n<h1>Mine: {{ scenario }}</h1>\n\
         {% for t in tables %}<p>{{ t.title }}: {% for r in t.rows %}{{ r.values[0].value }}{% endfor %}</p>\n{% endfor %}",
    )
    .unwrap();
    let read = |name: &str| std::fs::read(p.dir.join("reports/s").join(name)).unwrap();
    let o = p.bp(&["report", "scenarios/s.toml"]);
    assert!(o.status.success(), "{}", text(&o));
    let html = String::from_utf8(read("index.html")).unwrap();
    assert!(
        html.starts_with(
            "<!DOCTYPE html>\n<title>Test s</title>\n<h1>Mine: s</h1>\n<p>sleepy: 1.5"
        ),
        "{html}"
    );
    let md = read("index.md");
    let o = p.bp(&["report", "scenarios/s.toml"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        html.as_bytes(),
        &read("index.html")[..],
        "an override renders the same bytes"
    );
    assert_eq!(
        md,
        read("index.md"),
        "index.md is still the embedded template's"
    );
    assert!(String::from_utf8(md).unwrap().starts_with("# Test s"));

    // A block that never ends: at the end of line 4, where its end was expected.
    std::fs::write(
        templates.join("index.html"),
        "<!DOCTYPE html>\n<title>{{ title }}</title>\n{% for t in tables %}\n<p>{{ t.title }}</p>\n",
    )
    .unwrap();
    for args in [
        &["report", "scenarios/s.toml"][..],
        &["check", "scenarios/s.toml"][..],
    ] {
        let o = p.bp(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(err.contains("reports/templates/index.html:"), "{err}");
        assert!(err.contains("reports/templates/index.html:4:"), "{err}");
        assert!(
            err.contains("does not parse") && err.contains("expected end of block"),
            "{err}"
        );
        assert!(err.contains("docs/TEMPLATES.md"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    // A name the context lacks, on line 2: found by `check` before any apply.
    std::fs::write(
        templates.join("index.html"),
        "<!DOCTYPE html>\n<title>{{ report_title }}</title>\n",
    )
    .unwrap();
    let o = p.bp(&["check", "scenarios/s.toml"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(err.contains("reports/templates/index.html:2:"), "{err}");
    assert!(err.contains("undefined"), "{err}");
    // A directory in its place is refused, not read.
    std::fs::remove_file(templates.join("index.html")).unwrap();
    std::fs::create_dir(templates.join("index.html")).unwrap();
    let o = p.bp(&["report", "scenarios/s.toml"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("must be a regular file"),
        "{}",
        text(&o)
    );
    // A FIFO would block the read for ever: refused without opening it.
    std::fs::remove_dir(templates.join("index.html")).unwrap();
    let fifo = std::process::Command::new("mkfifo")
        .arg(templates.join("index.html"))
        .status()
        .unwrap();
    assert!(fifo.success());
    let o = p.bp(&["check", "scenarios/s.toml"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("must be a regular file"),
        "{}",
        text(&o)
    );
}
