//! The targets of what tools and boards print: a benchmark tool's output through its
//! parser and the metrics every built-in recipe selects from it, a board command's
//! output through the parser of that command, and a `.bmap` block map.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use crate::bench::{self, members, parse};
use crate::model::{ParserSpec, Recipe, TestName};

/// The built-in recipes, loaded once.
fn builtin_recipes() -> &'static BTreeMap<TestName, Recipe> {
    static RECIPES: OnceLock<BTreeMap<TestName, Recipe>> = OnceLock::new();
    RECIPES.get_or_init(|| {
        crate::check::load_texts(crate::config::texts::Texts::default(), 1)
            .expect("the built-in recipes load")
            .recipes
    })
}

/// Splits a fuzz input's text into stdout and the stderr after a `\n@@stderr\n` line.
fn streams(text: &str) -> (&str, &str) {
    text.split_once("\n@@stderr\n").unwrap_or((text, ""))
}

/// A tool's output: the first line names a parser (`fio-json`, `time`, `wrk+login`...;
/// any other line picks one by its first byte), the rest is its stdout, and stderr
/// after a `@@stderr` line. The output goes through the parser as apply's runs give
/// it (`bench::parse::parse`, with every built-in recipe's options for it), then
/// through each built-in recipe of that parser (`bench::metrics`, and the per-member
/// split of a `per_member` run). A value it gives is finite.
pub fn tool_output(data: &[u8]) {
    let (name, rest) = super::split_first_line(data);
    let name = super::text(name);
    let text = super::text(rest);
    let (stdout, stderr) = streams(&text);
    let name: &str = if let Some(spec) = ParserSpec::named(&name) {
        spec.name()
    } else {
        let all: Vec<ParserSpec> = ParserSpec::all().collect();
        all[name.bytes().next().map_or(0, usize::from) % all.len()].name()
    };
    let recipes: Vec<&Recipe> = builtin_recipes()
        .values()
        .filter(|r| r.parser.name() == name)
        .collect();
    let mut specs: Vec<ParserSpec> = recipes.iter().map(|r| r.parser.clone()).collect();
    // The regex parser is always given its patterns; the others take no options.
    if name != "regex" {
        specs.extend(ParserSpec::named(name));
    }
    for spec in &specs {
        if let Ok(doc) = parse::parse(spec, stdout, stderr)
            && let serde_json::Value::Object(top) = &doc
        {
            for key in top.keys() {
                let _ = parse::select_number(&doc, key);
            }
        }
    }
    for recipe in recipes {
        if let Ok(metrics) = bench::metrics(recipe, stdout, stderr) {
            assert!(metrics.values().all(|v| v.is_finite()), "{metrics:?}");
        }
        let members = ["lab-1".to_string(), "lab-2".to_string()];
        if let Ok(sections) = members::split("fuzz", &members, stdout, stderr)
            && let Ok(metrics) = members::metrics(recipe, &sections)
        {
            assert!(metrics.values().all(|v| v.is_finite()), "{metrics:?}");
        }
    }
}

/// What a board command printed, given to the parser of that command: the first line
/// names it (`sections`, `ethtool`, `iw`, `link-facts`, `links`, `lsblk`, `lsusb`,
/// `mountinfo`, `storage-facts`, `cmdline`, `probe`, `trace`, `watts`, `os-release`;
/// any other line picks one by its first byte), the rest is the output.
pub fn board_output(data: &[u8]) {
    const PARSERS: [&str; 14] = [
        "sections",
        "ethtool",
        "iw",
        "link-facts",
        "links",
        "lsblk",
        "lsusb",
        "mountinfo",
        "storage-facts",
        "cmdline",
        "probe",
        "trace",
        "watts",
        "os-release",
    ];
    let (name, rest) = super::split_first_line(data);
    let name = super::text(name);
    let text = super::text(rest);
    let text: &str = &text;
    let which = PARSERS
        .iter()
        .copied()
        .find(|p| *p == name)
        .unwrap_or_else(|| PARSERS[name.bytes().next().map_or(0, usize::from) % PARSERS.len()]);
    match which {
        "sections" => {
            let s = crate::sections::parse(text);
            assert!(s.iter().count() <= crate::sections::MAX_SECTIONS);
            for (name, lines) in s.iter() {
                assert!(lines.len() <= crate::sections::MAX_LINES);
                let _ = s.joined(name);
            }
        }
        "ethtool" => drop(crate::network::parse::ethtool(text)),
        "iw" => drop(crate::network::parse::iw_link(text)),
        "link-facts" => {
            drop(crate::network::parse::facts("eth0", text));
            let _ = crate::network::parse::sysfs_speed(text);
            let _ = crate::network::parse::sysfs_duplex(text);
        }
        "links" => {
            if let Ok((links, _)) = crate::network::links::parse(text) {
                let _ = crate::network::links::holding(&links, "192.168.1.2");
            }
        }
        "lsblk" => {
            if let Ok((disks, _)) = crate::storage::lsblk::parse(text) {
                for d in &disks {
                    let _ = (d.in_use(), d.is_storage());
                }
            }
        }
        "lsusb" => {
            if let Ok(tree) = crate::storage::lsusb::parse(text) {
                let _ = tree.mass_storage().count();
            }
        }
        "mountinfo" => drop(crate::storage::parse_mountinfo(text)),
        "storage-facts" => drop(crate::storage::facts::parse("/dev/sda", text)),
        "cmdline" => {
            let path = "/boot/firmware/cmdline.txt";
            let _ = crate::storage::cmdline::has_quirk(path, text, "152d:0578");
            for uas in [false, true] {
                if let Ok(Some(edited)) =
                    crate::storage::cmdline::edit(path, text, "152d:0578", uas)
                {
                    // An edit is undone by the opposite one, or needs none.
                    assert_eq!(
                        crate::storage::cmdline::has_quirk(path, &edited, "152d:0578").ok(),
                        Some(!uas),
                        "{edited:?}"
                    );
                }
            }
        }
        "probe" => drop(crate::probe::parse(text)),
        "trace" => {
            use crate::telemetry::summary;
            let trace = crate::telemetry::parse_trace(text);
            let s = summary::summarize(&trace);
            let _ = summary::warnings(&s);
            let _ = summary::flags(&s, &summary::Thresholds::default());
            let _ = summary::series(&trace.samples, 64);
            let _ = crate::telemetry::power::summarize(&trace.power);
            let _ = crate::telemetry::trace::parse_throttled(text);
        }
        "watts" => {
            let (stdout, json) = streams(text);
            if let Ok(w) = crate::telemetry::power::watts_of(stdout, Some(json)) {
                assert!(w.is_finite(), "{w}");
            }
            let _ = crate::telemetry::power::watts_of(text, None);
        }
        "os-release" => {
            let _ = crate::image::expect::parse_os_release(text);
        }
        _ => unreachable!("{which} is in PARSERS"),
    }
}

/// A `.bmap` (`flash::bmap::parse`): a map it takes keeps what its type promises
/// (ranges ascending, apart and inside the image, a block size of whole sectors), and
/// a stream of the image's first bytes is followed against it.
pub fn bmap(data: &[u8]) {
    use crate::flash::bmap;
    let text = super::text(data);
    let Ok(map) = bmap::parse(&text) else {
        return;
    };
    assert!(map.block_bytes > 0 && map.block_bytes % 512 == 0, "{map:?}");
    let mut last_end = 0;
    for &(start, end) in &map.ranges {
        assert!(
            last_end <= start && start < end && end <= map.image_bytes,
            "{map:?}"
        );
        last_end = end;
    }
    assert!(map.mapped_bytes() <= map.image_bytes);
    let _ = map.read_back_lines();
    let mut mapped = bmap::Mapped::new(&map);
    let zeros = [0u8; 4096];
    let shown = map.image_bytes.min(64 * 1024);
    let mut at = 0;
    while at < shown {
        let n = (shown - at).min(zeros.len() as u64);
        mapped.update(at, &zeros[..n as usize]);
        at += n;
    }
    assert_eq!(mapped.stray, None);
}
