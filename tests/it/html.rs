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

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::cannot_run;
use crate::spine::{Project, text};

/// Desktop and phone widths, in CSS pixels.
const WIDTHS: [u32; 2] = [1280, 390];
/// The tallest screenshot taken; a page taller than this is a failure of its own here.
const MAX_HEIGHT: u32 = 14_000;
/// At phone width no chart text may render smaller than this (CSS pixels).
const MIN_CHART_PX: f64 = 9.0;

const PRELUDE: &str = r#"<script>
window.__bp = { errors: [], console: [] };
window.addEventListener("error", function (e) { window.__bp.errors.push(String(e.message)); });
["log", "info", "warn", "error", "debug"].forEach(function (k) {
  var f = console[k];
  console[k] = function () { window.__bp.console.push(k + ": " + Array.prototype.join.call(arguments, " ")); return f.apply(console, arguments); };
});
</script>
"#;

const HARNESS: &str = r#"<script>
(function () {
  var out = { errors: window.__bp.errors, console: window.__bp.console, tables: [], charts: [], sorts: [] };
  try {
    var ds = document.querySelectorAll("details");
    for (var i = 0; i < ds.length; i++) ds[i].open = true;
    function rect(el) {
      var r = el.getBoundingClientRect();
      return { x: r.left + window.scrollX, y: r.top + window.scrollY, w: r.width, h: r.height, right: r.right };
    }
    var ts = document.querySelectorAll("table");
    for (var t = 0; t < ts.length; t++) {
      var table = ts[t], wrap = table.closest(".table-wrap");
      out.tables.push({
        cls: table.className,
        rows: table.tBodies.length ? table.tBodies[0].rows.length : 0,
        heads: table.tHead ? table.tHead.rows[0].cells.length : 0,
        buttons: table.tHead ? table.tHead.querySelectorAll("th > button").length : 0,
        text: table.textContent.replace(/\s+/g, " ").trim(),
        box: rect(table),
        wrap: wrap ? rect(wrap) : null
      });
    }
    var svgs = document.querySelectorAll("figure.chart > svg");
    for (var s = 0; s < svgs.length; s++) {
      var svg = svgs[s], box = rect(svg), vb = svg.viewBox.baseVal;
      var scale = vb && vb.width ? box.w / vb.width : 0, least = 1e9;
      var texts = svg.querySelectorAll("text"), bar_px = 0;
      var rects = svg.querySelectorAll(".bar");
      for (var b = 0; b < rects.length; b++) bar_px += parseFloat(rects[b].getAttribute("width")) * scale;
      for (var k = 0; k < texts.length; k++) {
        var size = parseFloat(texts[k].getAttribute("font-size") || getComputedStyle(texts[k]).fontSize);
        least = Math.min(least, size * scale);
      }
      out.charts.push({
        label: svg.getAttribute("aria-label"),
        bars: svg.querySelectorAll(".bar").length,
        cis: svg.querySelectorAll(".ci").length,
        lines: svg.querySelectorAll(".line").length,
        texts: texts.length,
        least_px: least,
        bar_px: bar_px,
        box: box
      });
    }
    out.inner_width = window.innerWidth;
    out.scroll_width = document.documentElement.scrollWidth;
    out.height = document.documentElement.scrollHeight;
    // Sorting, after measuring (the order of rows changes no box): each numeric column
    // clicked twice, what its cells' data-sort values were after each click.
    var sortable = document.querySelectorAll("table.sortable");
    for (var q = 0; q < sortable.length; q++) {
      var tb = sortable[q], heads = tb.tHead.rows[0].cells;
      for (var c = 0; c < heads.length; c++) {
        var th = heads[c], button = th.querySelector("button");
        if (th.getAttribute("data-type") !== "number" || !button) continue;
        var seen = [];
        for (var click = 0; click < 2; click++) {
          button.click();
          var col = [];
          for (var r = 0; r < tb.tBodies[0].rows.length; r++) {
            var cell = tb.tBodies[0].rows[r].cells[c], v = cell ? cell.getAttribute("data-sort") : null;
            col.push(v === null ? null : Number(v));
          }
          seen.push({ dir: th.getAttribute("aria-sort"), values: col });
        }
        out.sorts.push({ table: q, column: c, better: th.getAttribute("data-better"), clicks: seen });
      }
    }
  } catch (e) {
    out.errors.push("harness: " + e);
  }
  // In the test's frame (see `framed`), the result goes to the top document, which is
  // what --dump-dom prints.
  var doc = window.parent !== window ? window.parent.document : document;
  var pre = doc.createElement("pre");
  pre.id = "bp-harness";
  pre.style.display = "none";
  pre.textContent = JSON.stringify(out);
  doc.body.appendChild(pre);
})();
</script>
"#;

/// With BENCHPIPE_KEEP_SCREENSHOTS=DIR, a copy of each screenshot there, to look at.
fn keep(shot: &Path) {
    if let Some(dir) = std::env::var_os("BENCHPIPE_KEEP_SCREENSHOTS") {
        let to = Path::new(&dir).join(shot.file_name().unwrap());
        std::fs::copy(shot, &to).unwrap_or_else(|e| panic!("{}: {e}", to.display()));
    }
}

/// The chromium binary, or None (the caller says it cannot run).
fn chromium() -> Option<PathBuf> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
}

/// Runs headless chromium with `args` and `url`, with a profile of its own under `dir`,
/// bounded in time (a hang is a failure, not a stuck test).
fn browse(chromium: &Path, dir: &Path, args: &[String], url: &str) -> Output {
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--disable-extensions",
            "--force-color-profile=srgb",
            "--force-device-scale-factor=1",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chromium starts");
    // Read both pipes on threads so a full pipe never stalls the browser.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_t = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = out.read_to_end(&mut b);
        b
    });
    let err_t = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = err.read_to_end(&mut b);
        b
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(180) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium {args:?} did not finish within 180 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Output {
        status,
        stdout: out_t.join().unwrap(),
        stderr: err_t.join().unwrap(),
    }
}

/// The page's console lines chromium logged (`INFO:CONSOLE`), whatever their level.
fn console_lines(stderr: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect()
}

/// A decoded 8-bit RGB or RGBA PNG: width, height and RGB pixels, row by row. Chromium
/// writes non-interlaced 8-bit images; anything else is a failure here.
struct Png {
    width: usize,
    height: usize,
    rgb: Vec<[u8; 3]>,
}

fn decode_png(bytes: &[u8]) -> Png {
    assert!(
        bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
        "the screenshot is no PNG"
    );
    let (mut at, mut idat) = (8, Vec::new());
    let (mut width, mut height, mut channels) = (0usize, 0usize, 0usize);
    while at + 8 <= bytes.len() {
        let len = u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        let kind = &bytes[at + 4..at + 8];
        let data = &bytes[at + 8..at + 8 + len];
        match kind {
            b"IHDR" => {
                width = u32::from_be_bytes(data[0..4].try_into().unwrap()) as usize;
                height = u32::from_be_bytes(data[4..8].try_into().unwrap()) as usize;
                assert_eq!(data[8], 8, "bit depth");
                channels = match data[9] {
                    2 => 3,
                    6 => 4,
                    c => panic!("PNG colour type {c}"),
                };
                assert_eq!(data[12], 0, "interlaced PNG");
            }
            b"IDAT" => idat.extend_from_slice(data),
            b"IEND" => break,
            _ => {}
        }
        at += 12 + len;
    }
    assert!(width > 0 && height > 0, "a PNG without IHDR");
    let mut raw = Vec::new();
    flate2::read::ZlibDecoder::new(&idat[..])
        .read_to_end(&mut raw)
        .expect("the PNG's data inflates");
    let stride = width * channels;
    assert_eq!(raw.len(), height * (stride + 1), "PNG data size");
    let mut pixels = vec![0u8; height * stride];
    for y in 0..height {
        let filter = raw[y * (stride + 1)];
        let line = &raw[y * (stride + 1) + 1..(y + 1) * (stride + 1)];
        for i in 0..stride {
            let a = if i >= channels {
                pixels[y * stride + i - channels]
            } else {
                0
            };
            let b = if y > 0 {
                pixels[(y - 1) * stride + i]
            } else {
                0
            };
            let c = if y > 0 && i >= channels {
                pixels[(y - 1) * stride + i - channels]
            } else {
                0
            };
            let pred = match filter {
                0 => 0,
                1 => a,
                2 => b,
                3 => ((a as u16 + b as u16) / 2) as u8,
                4 => {
                    let p = a as i16 + b as i16 - c as i16;
                    let (pa, pb, pc) = (
                        (p - a as i16).abs(),
                        (p - b as i16).abs(),
                        (p - c as i16).abs(),
                    );
                    if pa <= pb && pa <= pc {
                        a
                    } else if pb <= pc {
                        b
                    } else {
                        c
                    }
                }
                f => panic!("PNG filter {f}"),
            };
            pixels[y * stride + i] = line[i].wrapping_add(pred);
        }
    }
    let rgb = pixels
        .chunks(channels)
        .map(|p| [p[0], p[1], p[2]])
        .collect();
    Png { width, height, rgb }
}

/// What one area of a screenshot holds: how many distinct colours, how many dark
/// (text, error bar) pixels and how many of the bars' blue.
#[derive(Debug)]
struct Area {
    pixels: usize,
    colours: usize,
    dark: usize,
    bar_blue: usize,
}

fn area(png: &Png, b: &Value) -> Area {
    let f = |k: &str| b[k].as_f64().unwrap();
    let x0 = f("x").max(0.0) as usize;
    let y0 = f("y").max(0.0) as usize;
    let x1 = ((f("x") + f("w")) as usize).min(png.width);
    let y1 = ((f("y") + f("h")) as usize).min(png.height);
    let mut colours = std::collections::BTreeSet::new();
    let (mut pixels, mut dark, mut bar_blue) = (0, 0, 0);
    for y in y0..y1 {
        for x in x0..x1 {
            let [r, g, bl] = png.rgb[y * png.width + x];
            pixels += 1;
            colours.insert([r, g, bl]);
            if (r as u32 + g as u32 + bl as u32) < 240 {
                dark += 1;
            }
            // The bars' #5b84c4, give or take antialiasing at their edges.
            if r.abs_diff(0x5b) < 10 && g.abs_diff(0x84) < 10 && bl.abs_diff(0xc4) < 10 {
                bar_blue += 1;
            }
        }
    }
    Area {
        pixels,
        colours: colours.len(),
        dark,
        bar_blue,
    }
}

/// A copy of `page` with the recording prelude and the measuring harness.
fn instrumented(page: &str) -> String {
    let head = page.find("<head>").expect("the page has <head>") + "<head>".len();
    let body = page.rfind("</body>").expect("the page has </body>");
    format!(
        "{}\n{PRELUDE}{}{HARNESS}{}",
        &page[..head],
        &page[head..body],
        &page[body..]
    )
}

/// Headless Chromium makes no window narrower than 500 px, so a phone's width is an
/// iframe's: the page in `srcdoc` (same origin as this wrapper, so the harness can write
/// here), `width` wide and `height` tall, at the top left. The page's media queries see
/// the frame's width.
fn framed(page: &str, width: u32, height: u32) -> String {
    let escaped = page
        .replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"></head><body style=\"margin:0\">\
         <iframe title=\"report\" style=\"display:block;border:0;width:{width}px;height:{height}px\" \
         srcdoc=\"{escaped}\"></iframe></body></html>"
    )
}

/// The window a frame of `width` needs.
fn window_width(width: u32) -> u32 {
    width.max(500)
}

fn harness_result(dom: &str) -> Value {
    let start = dom
        .find("<pre id=\"bp-harness\"")
        .unwrap_or_else(|| panic!("the harness wrote nothing: its script did not run:\n{dom}"));
    let json = &dom[start..];
    let json = &json[json.find('>').unwrap() + 1..json.find("</pre>").unwrap()];
    let json = json
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&");
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("harness JSON: {e}: {json}"))
}

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
    let p = Project::new("html")
        .write("pipeline/noisy.toml", NOISY)
        .scenario(
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
    .write(
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
        assert_eq!(r["inner_width"].as_u64(), Some(width as u64), "{r}");
        // The page itself never scrolls sideways; a wide table scrolls in its wrapper.
        assert!(
            r["scroll_width"].as_f64().unwrap() <= width as f64,
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
                wrap["right"].as_f64().unwrap() <= width as f64 + 0.5,
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
                c["box"]["right"].as_f64().unwrap() <= width as f64 + 0.5,
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
    let dir = std::env::temp_dir().join(format!("bp-it-html-harness-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
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
/// stops `report` and `check` with exit 2 at its file and line.
#[test]
fn a_report_template_override_is_used_and_a_broken_one_is_exit_2_at_its_line() {
    let p = Project::new("html-override").scenario("s", &["sleepy"], 2, "");
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
}
