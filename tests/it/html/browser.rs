//! The browser side of the HTML report's tests: headless Chromium run bounded in time,
//! the two scripts the test adds to a copy of the page (one records errors and console
//! calls, one measures every table and chart, clicks the sort buttons and writes what it
//! saw as JSON into the DOM), the phone-width frame, and a PNG decoder for screenshots.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub(super) const PRELUDE: &str = r#"<script>
window.__bp = { errors: [], console: [] };
window.addEventListener("error", function (e) { window.__bp.errors.push(String(e.message)); });
["log", "info", "warn", "error", "debug"].forEach(function (k) {
  var f = console[k];
  console[k] = function () { window.__bp.console.push(k + ": " + Array.prototype.join.call(arguments, " ")); return f.apply(console, arguments); };
});
</script>
"#;

pub(super) const HARNESS: &str = r#"<script>
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
pub(super) fn keep(shot: &Path) {
    if let Some(dir) = std::env::var_os("BENCHPIPE_KEEP_SCREENSHOTS") {
        let to = Path::new(&dir).join(shot.file_name().unwrap());
        std::fs::copy(shot, &to).unwrap_or_else(|e| panic!("{}: {e}", to.display()));
    }
}

/// The chromium binary, or None (the caller says it cannot run).
/// A binary that does not even print its version (a broken install) counts as none.
pub(super) fn chromium() -> Option<PathBuf> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .filter(|p| p.is_file())
        .find(|p| {
            Command::new(p)
                .arg("--version")
                .stdin(Stdio::null())
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

/// Runs headless chromium with `args` and `url`, with a profile of its own under `dir`,
/// bounded in time (a hang is a failure, not a stuck test).
pub(super) fn browse(chromium: &Path, dir: &Path, args: &[String], url: &str) -> Output {
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
pub(super) fn console_lines(stderr: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect()
}

/// A decoded 8-bit RGB or RGBA PNG: width, height and RGB pixels, row by row. Chromium
/// writes non-interlaced 8-bit images; anything else is a failure here.
pub(super) struct Png {
    pub width: usize,
    pub height: usize,
    pub rgb: Vec<[u8; 3]>,
}

pub(super) fn decode_png(bytes: &[u8]) -> Png {
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
                3 => u16::midpoint(u16::from(a), u16::from(b)) as u8,
                4 => {
                    let p = i16::from(a) + i16::from(b) - i16::from(c);
                    let (pa, pb, pc) = (
                        (p - i16::from(a)).abs(),
                        (p - i16::from(b)).abs(),
                        (p - i16::from(c)).abs(),
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
pub(super) struct Area {
    pub pixels: usize,
    pub colours: usize,
    pub dark: usize,
    pub bar_blue: usize,
}

pub(super) fn area(png: &Png, b: &Value) -> Area {
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
            if (u32::from(r) + u32::from(g) + u32::from(bl)) < 240 {
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
pub(super) fn instrumented(page: &str) -> String {
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
pub(super) fn framed(page: &str, width: u32, height: u32) -> String {
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
pub(super) fn window_width(width: u32) -> u32 {
    width.max(500)
}

pub(super) fn harness_result(dom: &str) -> Value {
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
