//! Integration tests: parsers. Each case runs a parser on output captured from the real
//! tool (tests/data/tool-outputs, provenance in its README.md) and checks the selected
//! metric against the value read from the fixture another way (a JSON Pointer, or the
//! number as it appears in the file).

use crate::scratch::Scratch;
use std::path::PathBuf;

use benchpipe::bench::parse::{check_path, parse, select};
use benchpipe::model::{ParserSpec, Stream};
use serde_json::Value;

fn fixture(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/tool-outputs")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn spec(name: &str) -> ParserSpec {
    ParserSpec::named(name).unwrap_or_else(|| panic!("no parser `{name}`"))
}

/// The fixture on the stream the parser reads (GNU time and dd write to stderr).
fn run_parser(kind: &str, name: &str) -> Result<Value, String> {
    let text = fixture(name);
    let parser = spec(kind);
    let stream = benchpipe::bench::parse::find(kind)
        .unwrap()
        .stream(&parser.options);
    let (stdout, stderr) = match stream {
        Stream::Stderr => ("", text.as_str()),
        Stream::Stdout => (text.as_str(), ""),
    };
    parse(&parser, stdout, stderr).map_err(|e| e.0)
}

/// Where the expected number comes from, without going through `select`.
enum Expected {
    /// RFC 6901 pointer into the fixture parsed by serde_json alone (text before the
    /// first `{` cut off by hand for fio).
    Pointer(&'static str),
    /// The number as printed in the fixture.
    Literal(f64),
}

#[test]
fn metrics_from_captured_output() {
    use Expected::*;
    let cases: &[(&str, &str, &str, Expected)] = &[
        ("hdparm", "hdparm-t.txt", "buffered_reads", Literal(157.41)),
        ("hdparm", "hdparm-T.txt", "cached_reads", Literal(9062.28)),
        (
            "hdparm",
            "hdparm-direct.txt",
            "direct_disk_reads",
            Literal(6326.45),
        ),
        (
            "hdparm",
            "hdparm-direct-T.txt",
            "direct_cached_reads",
            Literal(2098.32),
        ),
        // Real boards: a Raspberry Pi 5's `hdparm -t`, and Raspberry Pi 4 benchmark
        // script logs whose `--direct -t` line ends in colour codes after `MB/sec`.
        (
            "hdparm",
            "real-sbc-hdparm-t-rpi5-usb.txt",
            "buffered_reads",
            Literal(362.52),
        ),
        (
            "hdparm",
            "real-sbc-pibench-rpi4-sandisk-sd32g.log",
            "direct_disk_reads",
            Literal(41.90),
        ),
        (
            "hdparm",
            "real-sbc-pibench-rpi4-sandisk-sd32g.log",
            "direct_cached_reads",
            Literal(39.00),
        ),
        (
            "hdparm",
            "real-sbc-pibench-rpi4-kingston-a400-usb.log",
            "direct_disk_reads",
            Literal(335.75),
        ),
        (
            "hdparm",
            "real-sbc-pibench-rpi4-kingston-a400-usb.log",
            "direct_cached_reads",
            Literal(304.12),
        ),
        (
            "hdparm",
            "real-sbc-pibench-rpi4-samsung-fitplus-usb3.log",
            "direct_disk_reads",
            Literal(55.40),
        ),
        (
            "hdparm",
            "real-sbc-pibench-rpi4-samsung-fitplus-usb3.log",
            "direct_cached_reads",
            Literal(52.32),
        ),
        (
            "dd",
            "real-sbc-pibench-rpi4-kingston-a400-usb.log",
            "seconds",
            Literal(3.56692),
        ),
        ("dd", "dd-write.txt", "bytes", Literal(67108864.0)),
        ("dd", "dd-write.txt", "seconds", Literal(0.240754)),
        (
            "dd",
            "dd-write.txt",
            "bytes_per_second",
            Literal(67108864.0 / 0.240754),
        ),
        (
            "dd",
            "dd-comma-decimal-rpi4.txt",
            "seconds",
            Literal(17.3846),
        ),
        (
            "dd",
            "dd-comma-decimal-rpi4.txt",
            "bytes_per_second",
            Literal(335544320.0 / 17.3846),
        ),
        // iperf3 without -J on real boards (Pis, Orange Pis): the summary lines.
        (
            "iperf3-text",
            "iperf3-text-rpi4.txt",
            "receiver_bits_per_second",
            Literal(98.6e6),
        ),
        (
            "iperf3-text",
            "real-sbc-iperf3-opizerolts-eth.txt",
            "sender_bits_per_second",
            Literal(94.1e6),
        ),
        (
            "iperf3-text",
            "real-sbc-iperf3-opizerolts-eth.txt",
            "receiver_bytes",
            Literal(112.0 * 1048576.0),
        ),
        (
            "iperf3-text",
            "real-sbc-iperf3-rpi1b-eth.txt",
            "receiver_bits_per_second",
            Literal(46.4e6),
        ),
        (
            "iperf3-text",
            "real-sbc-iperf3-rpi1b-eth.txt",
            "receiver_seconds",
            Literal(11.30),
        ),
        (
            "iperf3-text",
            "real-sbc-iperf3-rpizerow-wifi.txt",
            "receiver_bits_per_second",
            Literal(32.3e6),
        ),
        (
            "iperf3-text",
            "real-sbc-iperf3-rpizerow-wifi.txt",
            "retransmits",
            Literal(0.0),
        ),
        // iperf 2: its CSV (exact bit/s) and its text.
        (
            "iperf2",
            "iperf2-csv.txt",
            "bits_per_second",
            Literal(4948913933.0),
        ),
        ("iperf2", "iperf2-csv.txt", "seconds", Literal(2.0)),
        ("iperf2", "iperf2.txt", "bits_per_second", Literal(4.55e9)),
        (
            "iperf2",
            "iperf2-reverse.txt",
            "bytes",
            Literal((1.33_f64 * 1073741824.0).round()),
        ),
        (
            "fio-json",
            "fio-randread.json",
            "jobs[0].read.bw_bytes",
            Pointer("/jobs/0/read/bw_bytes"),
        ),
        (
            "fio-json",
            "fio-randread.json",
            "jobs[jobname=randread].read.iops",
            Pointer("/jobs/0/read/iops"),
        ),
        (
            "fio-json",
            "fio-randwrite.json",
            "jobs[jobname=randwrite].write.bw_bytes",
            Pointer("/jobs/0/write/bw_bytes"),
        ),
        (
            "fio-json",
            "fio-randread.json",
            "jobs[0].read.clat_ns.percentile[\"99.000000\"]",
            Pointer("/jobs/0/read/clat_ns/percentile/99.000000"),
        ),
        // The recipe's own paths on a two-job run: the filter must pick the second job.
        (
            "fio-json",
            "fio-disk4k-2jobs.json",
            "jobs[jobname=randread].read.bw_bytes",
            Pointer("/jobs/0/read/bw_bytes"),
        ),
        (
            "fio-json",
            "fio-disk4k-2jobs.json",
            "jobs[jobname=randwrite].write.bw_bytes",
            Pointer("/jobs/1/write/bw_bytes"),
        ),
        (
            "fio-json",
            "fio-disk4k-2jobs.json",
            "jobs[jobname=randread].read.iops",
            Pointer("/jobs/0/read/iops"),
        ),
        (
            "fio-json",
            "fio-disk4k-2jobs.json",
            "jobs[jobname=randwrite].write.iops",
            Pointer("/jobs/1/write/iops"),
        ),
        (
            "fio-json",
            "fio-disk4k-2jobs.json",
            "jobs[groupid=1].write.iops",
            Pointer("/jobs/1/write/iops"),
        ),
        // A string value that holds a number.
        (
            "fio-json",
            "fio-disk4k-2jobs.json",
            "global options.runtime",
            Literal(1.0),
        ),
        (
            "fio-json",
            "fio-warning-before-json.json",
            "jobs[jobname=randread].read.bw_bytes",
            Pointer("/jobs/0/read/bw_bytes"),
        ),
        (
            "iperf3-json",
            "iperf3-up.json",
            "end.sum_received.bits_per_second",
            Pointer("/end/sum_received/bits_per_second"),
        ),
        (
            "iperf3-json",
            "iperf3-down.json",
            "end.sum_received.bits_per_second",
            Pointer("/end/sum_received/bits_per_second"),
        ),
        (
            "iperf3-json",
            "iperf3-up.json",
            "end.cpu_utilization_percent.host_total",
            Pointer("/end/cpu_utilization_percent/host_total"),
        ),
        (
            "json",
            "curl-json.json",
            "speed_download",
            Pointer("/speed_download"),
        ),
        ("json", "curl-json.json", "http_code", Pointer("/http_code")),
        ("time", "xz-time-format.txt", "real", Literal(10.60)),
        ("time", "xz-time-format.txt", "user", Literal(5.71)),
        ("time", "xz-time-format.txt", "sys", Literal(0.16)),
        (
            "time",
            "xz-time-format.txt",
            "max_rss_kib",
            Literal(113604.0),
        ),
        (
            "time",
            "xz-time-failed-command.txt",
            "max_rss_kib",
            Literal(1920.0),
        ),
        // pipeline/xz.toml's own command, pinned with taskset; and xz's warning when
        // it cuts its threads to fit the memory limit (a small board) before the line.
        ("time", "xz-time-tmpfs-taskset.txt", "real", Literal(19.21)),
        ("time", "xz-time-tmpfs-taskset.txt", "user", Literal(6.46)),
        ("time", "xz-time-tmpfs-taskset.txt", "sys", Literal(0.08)),
        (
            "time",
            "xz-time-threads-reduced.txt",
            "real",
            Literal(19.51),
        ),
        ("time", "xz-time-threads-reduced.txt", "sys", Literal(0.07)),
    ];
    for (kind, name, path, expected) in cases {
        let label = format!("{kind} {name} {path}");
        assert_eq!(check_path(path), Ok(()), "{label}");
        let doc = run_parser(kind, name).unwrap_or_else(|e| panic!("{label}: {e}"));
        let got = select(&doc, path).unwrap_or_else(|e| panic!("{label}: {e}"));
        let want = match expected {
            Literal(v) => *v,
            Pointer(pointer) => {
                let text = fixture(name);
                let json = &text[text.find('{').expect("fixture has JSON")..];
                let raw: Value = serde_json::from_str(json).expect("fixture is JSON");
                raw.pointer(pointer)
                    .and_then(Value::as_f64)
                    .unwrap_or_else(|| panic!("{label}: pointer {pointer} is not a number"))
            }
        };
        assert_eq!(got, want, "{label}");
    }
}

#[test]
fn parser_errors_say_what_was_expected_and_quote_what_was_found() {
    let fio_whole = fixture("fio-disk4k-2jobs.json");
    let truncated = &fio_whole[..fio_whole.len() / 2];
    let iperf3_truncated = fixture("iperf3-up.json");
    let iperf3_truncated = &iperf3_truncated[..iperf3_truncated.len() - 40];
    // (parser, stdout, stderr, fragments the message must contain)
    let cases: Vec<(&str, String, String, Vec<&str>)> = vec![
        (
            "fio-json",
            truncated.into(),
            String::new(),
            vec!["fio-json", "ends early", "near `"],
        ),
        (
            "iperf3-json",
            iperf3_truncated.into(),
            String::new(),
            vec!["iperf3-json", "ends early"],
        ),
        (
            "fio-json",
            String::new(),
            String::new(),
            vec!["fio --output-format=json", "empty output"],
        ),
        (
            "fio-json",
            "fio: failed to open /dev/nonexistent: No such file\n".into(),
            String::new(),
            vec![
                "expected fio's JSON report",
                "`fio: failed to open /dev/nonexistent",
            ],
        ),
        (
            "fio-json",
            fixture("fio-job-error.json"),
            String::new(),
            vec![
                "job `fullwrite`",
                "error 28",
                "ENOSPC",
                "No space left on device",
            ],
        ),
        (
            "iperf3-json",
            fixture("iperf3-error.json"),
            String::new(),
            vec![
                "iperf3 reported an error",
                "unable to connect to server: Connection refused",
            ],
        ),
        // A real Orange Pi Zero 2 whose summary lines are missing: an error, no number.
        (
            "iperf3-text",
            fixture("real-sbc-iperf3-opizero2-eth-nosummary.txt"),
            String::new(),
            vec![
                "iperf3-text",
                "no summary lines",
                "10 interval lines",
                "not summed",
            ],
        ),
        (
            "iperf3-text",
            fixture("iperf3-up.json"),
            String::new(),
            vec![
                "iperf3-text",
                "expected iperf3's summary lines",
                "the last line is `}`",
            ],
        ),
        (
            "iperf2",
            "connect failed: Connection refused\n".into(),
            String::new(),
            vec!["iperf2", "expected iperf 2's report", "Connection refused"],
        ),
        (
            "iperf3-json",
            fixture("iperf3-text-rpi4.txt"),
            String::new(),
            vec!["iperf3 -J", "invalid JSON", "[ ID] Interval"],
        ),
        (
            "time",
            String::new(),
            fixture("xz-time.txt"),
            vec![
                "expected a line of 4 numbers",
                "%e %U %S %M",
                "`Exit status: 0`",
            ],
        ),
        (
            "time",
            String::new(),
            fixture("xz-time-f.txt"),
            vec![
                "expected a line of 4 numbers",
                "`9.19 8.90 0.27 128452 99%` (5 fields)",
            ],
        ),
        (
            "time",
            String::new(),
            String::new(),
            vec!["4 numbers", "empty stderr"],
        ),
        (
            "time",
            String::new(),
            "xz: /x: No such file or directory\n".into(),
            vec!["4 numbers", "`xz: /x: No such file or directory`"],
        ),
        (
            "json",
            "Requests per second: 12.5\n".into(),
            String::new(),
            vec!["json", "invalid JSON", "Requests"],
        ),
    ];
    for (kind, stdout, stderr, fragments) in cases {
        let err = match parse(&spec(kind), &stdout, &stderr) {
            Ok(doc) => panic!("{kind}: expected an error, parsed {doc}"),
            Err(e) => e.0,
        };
        for fragment in fragments {
            assert!(err.contains(fragment), "{kind}: `{fragment}` not in: {err}");
        }
        assert!(err.len() < 400, "error too long: {err}");
    }
}

#[test]
fn select_errors_name_the_failing_segment() {
    let doc = run_parser("fio-json", "fio-disk4k-2jobs.json").expect("fixture parses");
    let cases: &[(&str, &[&str])] = &[
        (
            "jobs[jobname=randred].read.bw_bytes",
            &["[jobname=randred]", "randread, randwrite"],
        ),
        (
            "jobs[jobname=randread].raed.bw_bytes",
            &[
                "at `raed`",
                "`jobs[jobname=randread]`",
                "did you mean `read`?",
            ],
        ),
        ("jobs[5].read.iops", &["[5]", "out of range (2 elements)"]),
        (
            "jobs.read",
            &["at `read`", "an array of 2 elements has no keys"],
        ),
        ("jobs[0].read", &["expected a number, found an object"]),
        (
            "jobs[0].jobname",
            &["expected a number, found the string \"randread\""],
        ),
        ("fio version", &["expected a number", "fio-3.33"]),
        ("jobs[0].read.iops.x", &["at `x`", "the number"]),
        ("jobs[", &["never closed"]),
        ("", &["empty metric path"]),
    ];
    for (path, fragments) in cases {
        let err = select(&doc, path).expect_err(path).0;
        for fragment in *fragments {
            assert!(err.contains(fragment), "{path}: `{fragment}` not in: {err}");
        }
    }
}

#[test]
fn numbers_in_strings_must_be_finite() {
    let doc = serde_json::json!({"a": "12.5", "b": " 3 ", "c": "NaN", "d": "inf", "e": "1e3x", "f": null});
    assert_eq!(select(&doc, "a"), Ok(12.5));
    assert_eq!(select(&doc, "b"), Ok(3.0));
    for path in ["c", "d", "e", "f"] {
        assert!(select(&doc, path).is_err(), "{path}");
    }
}

#[test]
fn hdparm_without_permission_and_dd_without_a_summary_are_clear_errors() {
    let err = run_parser("hdparm", "hdparm-not-permitted.txt").unwrap_err();
    assert!(err.contains("Operation not permitted"), "{err}");
    assert!(err.contains("MB/sec"), "says what was expected: {err}");
    let err = parse(
        &spec("dd"),
        "",
        "dd: failed to open 'x': Permission denied\n",
    )
    .unwrap_err()
    .0;
    assert!(
        err.contains("Permission denied") && err.contains("copied"),
        "{err}"
    );
}

/// `-T` measures memory (the page cache), `--direct -T` the drive's own cache, `-t` and
/// `--direct -t` the device with and without the page cache: never one key for two.
#[test]
fn hdparm_cached_and_direct_reads_have_their_own_keys() {
    let keys = |name: &str| -> Vec<String> {
        match run_parser("hdparm", name) {
            Ok(Value::Object(m)) => m.keys().cloned().collect(),
            other => panic!("{name}: {other:?}"),
        }
    };
    assert_eq!(keys("hdparm-T.txt"), vec!["cached_reads"]);
    assert_eq!(keys("hdparm-direct-T.txt"), vec!["direct_cached_reads"]);
    assert_eq!(keys("hdparm-t.txt"), vec!["buffered_reads"]);
    assert_eq!(keys("hdparm-direct.txt"), vec!["direct_disk_reads"]);
    assert_eq!(
        keys("real-sbc-pibench-rpi4-sandisk-sd32g.log"),
        vec!["direct_cached_reads", "direct_disk_reads"]
    );
    // The shipped recipe selects a key the parser produces.
    let recipe = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("pipeline/hdparm.toml"),
    )
    .unwrap();
    assert!(recipe.contains("from = \"buffered_reads\""), "{recipe}");
}

fn has_control(text: &str) -> bool {
    text.chars().any(char::is_control)
}

/// Real logs carry colour codes; what a parser quotes back must never carry them (or
/// any other control byte) into an error, a failure record or a report.
#[test]
fn escape_sequences_and_control_bytes_never_reach_an_error() {
    // The real line, with its number garbled so that it cannot parse.
    let real = fixture("real-sbc-pibench-rpi4-sandisk-sd32g.log");
    let line = real
        .lines()
        .find(|l| l.contains("O_DIRECT disk reads"))
        .unwrap();
    assert!(line.ends_with("MB/sec\u{1b}(B\u{1b}[m"), "{line:?}");
    let garbled = line.replace("41.90", "4x.9\u{7}0\u{1b}]0;title\u{7}\u{8}");
    let err = parse(&spec("hdparm"), &garbled, "").unwrap_err();
    assert!(err.0.contains("expected `= N MB/sec`"), "{err}");
    assert!(err.0.contains("= 4x.90 MB/sec`"), "{err}");
    assert!(
        !has_control(&err.0) && !has_control(&err.to_string()),
        "{err:?}"
    );
    // Everywhere a parser quotes the output.
    for parser in ParserSpec::all() {
        let noise =
            "\u{1b}[31mfail\u{1b}(B\u{1b}[m\u{7}\u{0}\r\n\u{9b}2Jmore\u{1b}]8;;http://x\u{1b}\\\n";
        if let Err(e) = parse(&parser, noise, noise) {
            assert!(!has_control(&e.0), "{}: {:?}", parser.name(), e.0);
        }
    }
    // Keys of a JSON document hold what the tool put there, escapes included.
    let doc: Value = serde_json::from_str(r#"{"ra\u001b[31mte": 1, "x": {"y\u0007": 2}}"#).unwrap();
    for path in ["rate", "x.z", "x.y"] {
        let e = select(&doc, path).unwrap_err();
        assert!(!has_control(&e.0), "{path}: {:?}", e.0);
        assert!(!has_control(&e.to_string()), "{path}: {e}");
    }
}

/// A command that redirects its tool's output (`2>&1`, `>&2`, a wrapper that logs to
/// stderr) leaves the parser's stream empty; the error names the other stream.
#[test]
fn a_result_on_the_other_stream_is_named_in_the_error() {
    let hdparm = fixture("hdparm-t.txt");
    let time = fixture("xz-time-format.txt");
    let dd = fixture("dd-write.txt");
    let json = fixture("curl-json.json");
    // (parser, stdout, stderr, fragments)
    let cases: Vec<(&str, &str, &str, Vec<&str>)> = vec![
        (
            "hdparm",
            "",
            &hdparm,
            vec![
                "no hdparm result on stdout",
                "stderr has 1 line that looks like it",
                "`Timing buffered disk reads: 256 MB in 1.63 seconds = 157.41 MB/sec`",
            ],
        ),
        (
            "time",
            &time,
            "",
            vec![
                "no time result on stderr",
                "stdout has 1 line that looks like it",
            ],
        ),
        (
            "dd",
            &dd,
            "",
            vec!["no dd result on stderr", "stdout has 1 line", "copied"],
        ),
        (
            "json",
            "",
            &json,
            vec!["no json result on stdout", "stderr has"],
        ),
    ];
    for (kind, stdout, stderr, fragments) in cases {
        let err = parse(&spec(kind), stdout, stderr).unwrap_err().0;
        for f in fragments {
            assert!(err.contains(f), "{kind}: `{f}` not in: {err}");
        }
        assert!(err.len() < 600, "{err}");
    }
    // Nothing on either stream: no hint.
    let err = parse(&spec("hdparm"), "", "/dev/vda: Operation not permitted\n")
        .unwrap_err()
        .0;
    assert!(!err.contains("looks like it"), "{err}");
}

/// A failing tool's stderr goes into the failure's cause, the failure record and the
/// report: as a terminal shows it, without its colour codes.
#[test]
fn escape_codes_of_a_failing_tool_reach_neither_the_failure_nor_the_report() {
    let p = crate::spine::Project::local("escapes")
        .file(
            "pipeline/colour.toml",
            r#"description = "a tool that fails in colour"
uses_storage = false
[run]
command = "printf '\\033[31mfio: cannot open file\\033(B\\033[m\\007\\n' >&2; exit 3"
parse = "json"
[metrics]
value = { from = "value", unit = "s", better = "lower" }
"#,
        )
        .local_scenario("s", &["colour"], 1, "");
    let apply = p.bp(&["apply", "scenarios/s.toml"]);
    let err = String::from_utf8_lossy(&apply.stderr);
    assert!(err.contains("fio: cannot open file"), "{err}");
    let failure = std::fs::read_dir(p.dir.join("results"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("failure.json"))
        .find(|f| f.exists())
        .expect("a failure record");
    let failure = std::fs::read_to_string(failure).unwrap();
    let md = std::fs::read_to_string(p.dir.join("reports/s/index.md")).unwrap();
    assert!(md.contains("exit status 3: fio: cannot open file"), "{md}");
    for (what, text) in [
        ("stderr", err.as_ref()),
        ("failure.json", &failure),
        ("report", &md),
    ] {
        assert!(!text.contains('\u{1b}'), "{what}: {text:?}");
        assert!(!text.contains("\\u001b"), "{what}: {text:?}");
    }
}

/// Loads one recipe through config, as `check` does; Err is the rendered diagnostics.
fn load_recipe(name: &str, text: &str) -> Result<benchpipe::model::Recipe, String> {
    let dir = Scratch::new(&format!("regex-{name}"));
    std::fs::create_dir_all(dir.join("pipeline")).unwrap();
    std::fs::write(dir.join(format!("pipeline/{name}.toml")), text).unwrap();
    let loaded = benchpipe::config::load_recipes(&dir);
    drop(dir);
    let mut recipes = loaded.map_err(|d| d.to_string())?;
    Ok(recipes
        .remove(&benchpipe::model::TestName::new(name))
        .expect("the recipe"))
}

/// A recipe reading its tool's text with `parse = "regex"`: metric name -> group.
fn regex_recipe(stream: &str, extra: &str, patterns: &[&str], metrics: &[&str]) -> String {
    let patterns: Vec<String> = patterns.iter().map(|p| format!("  '{p}',\n")).collect();
    let metrics: Vec<String> = metrics
        .iter()
        .map(|m| format!("{m} = {{ from = \"{m}\", unit = \"x\", better = \"higher\" }}\n"))
        .collect();
    format!(
        "description = \"regex\"\nuses_storage = false\n[run]\ncommand = \"true\"\n\
         parse = \"regex\"\n[parse_regex]\nstream = \"{stream}\"\n{extra}patterns = [\n{}]\n\
         [metrics]\n{}",
        patterns.concat(),
        metrics.concat()
    )
}

/// Text tools read without Rust: each recipe goes through config and `bench::metrics`
/// on the tool's real output; each expected value is the number as the file prints it.
#[test]
fn regex_recipes_read_real_text_output() {
    /// (fixture, stream, extra options, patterns, (metric, number as printed))
    type Case<'a> = (
        &'a str,
        &'a str,
        &'a str,
        &'a [&'a str],
        &'a [(&'a str, &'a str)],
    );
    let cases: &[Case] = &[
        (
            "wrk.txt",
            "stdout",
            "",
            &[
                r"^Requests/sec:\s+(?P<requests_per_sec>[0-9.]+)$",
                r"^Transfer/sec:\s+(?P<transfer_mb>[0-9.]+)MB$",
            ],
            &[("requests_per_sec", "13.32"), ("transfer_mb", "726.86")],
        ),
        (
            "wrk-small.txt",
            "stdout",
            "",
            &[r"^Requests/sec:\s+(?P<requests_per_sec>[0-9.]+)$"],
            &[("requests_per_sec", "12657.97")],
        ),
        (
            "ab.txt",
            "stdout",
            "",
            &[
                r"^Requests per second:\s+(?P<requests_per_sec>[0-9.]+) \[#/sec\]",
                // Two "Time per request" lines; `(mean)$` picks the first.
                r"^Time per request:\s+(?P<ms_per_request>[0-9.]+) \[ms\] \(mean\)$",
                r"^Failed requests:\s+(?P<failed>\d+)$",
            ],
            &[
                ("requests_per_sec", "11.56"),
                ("ms_per_request", "864.870"),
                ("failed", "0"),
            ],
        ),
        (
            "iperf2.txt",
            "stdout",
            "",
            &[r"sec\s+[0-9.]+ \w+\s+(?P<gbits>[0-9.]+) Gbits/sec$"],
            &[("gbits", "4.55")],
        ),
        (
            "iperf2-reverse.txt",
            "stdout",
            "",
            &[r"sec\s+[0-9.]+ \w+\s+(?P<gbits>[0-9.]+) Gbits/sec$"],
            &[("gbits", "5.71")],
        ),
        (
            "smbclient.txt",
            "stdout",
            "",
            &[r"\(average (?P<kib_per_s>[0-9.]+) KiloBytes/sec\)"],
            &[("kib_per_s", "286033.5")],
        ),
        (
            "curl.txt",
            "stdout",
            "",
            &[r"^(?P<speed>\d+) (?P<size>\d+) (?P<seconds>[0-9.]+) (?P<code>\d{3})$"],
            &[
                ("speed", "1067578904"),
                ("seconds", "0.049110"),
                ("code", "200"),
            ],
        ),
        // A real Raspberry Pi 4: iperf3 without -J; sender and receiver summaries.
        (
            "iperf3-text-rpi4.txt",
            "stdout",
            "",
            &[
                r"(?P<sender_mbits>[0-9.]+) Mbits/sec\s+\d+\s+sender$",
                r"(?P<receiver_mbits>[0-9.]+) Mbits/sec\s+receiver$",
            ],
            &[("sender_mbits", "99.3"), ("receiver_mbits", "98.6")],
        ),
        // A real Raspberry Pi 4 whose locale prints decimal commas, dd on stderr.
        (
            "dd-comma-decimal-rpi4.txt",
            "stderr",
            "decimal_comma = true\n",
            &[r"copied, (?P<seconds>[0-9,]+) s, (?P<mb_per_s>[0-9,]+) MB/s"],
            &[("seconds", "17,3846"), ("mb_per_s", "19,3")],
        ),
    ];
    for (name, stream, extra, patterns, expected) in cases {
        let metrics: Vec<&str> = expected.iter().map(|(m, _)| *m).collect();
        let recipe = load_recipe("reader", &regex_recipe(stream, extra, patterns, &metrics))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let text = fixture(name);
        let (stdout, stderr) = match *stream {
            "stderr" => ("", text.as_str()),
            _ => (text.as_str(), ""),
        };
        let got = benchpipe::bench::metrics(&recipe, stdout, stderr)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        for (metric, printed) in *expected {
            assert!(
                text.contains(printed),
                "{name}: `{printed}` is not in the fixture"
            );
            let want: f64 = printed.replace(',', ".").parse().unwrap();
            assert_eq!(got[*metric], want, "{name} {metric}");
        }
    }
}

/// What goes wrong at run time says what was expected and quotes what was found.
#[test]
fn regex_failures_quote_the_output_and_name_the_fix() {
    let smb = load_recipe(
        "smb",
        &regex_recipe(
            "stdout",
            "",
            &[r"\(average (?P<kib_per_s>[0-9.]+) KiloBytes/sec\)"],
            &["kib_per_s"],
        ),
    )
    .unwrap();
    let err = benchpipe::bench::metrics(&smb, &fixture("smbclient-error.txt"), "")
        .unwrap_err()
        .to_string();
    assert!(err.contains("regex: pattern 1 `\\(average"), "{err}");
    assert!(err.contains("matched nothing on stdout"), "{err}");
    assert!(err.contains("NT_STATUS_"), "quotes smbclient's line: {err}");
    // The output went to stderr: the error names the stream that holds it.
    let err = benchpipe::bench::metrics(&smb, "", &fixture("smbclient.txt"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("no regex result on stdout"), "{err}");
    assert!(
        err.contains("stderr has 1 line that looks like it"),
        "{err}"
    );
    // Decimal commas are not guessed.
    let dd = load_recipe(
        "dd",
        &regex_recipe(
            "stderr",
            "",
            &[r"copied, (?P<seconds>[0-9,]+) s"],
            &["seconds"],
        ),
    )
    .unwrap();
    let err =
        benchpipe::bench::metrics(&dd, "", &fixture("dd-comma-decimal-rpi4.txt")).unwrap_err();
    assert!(
        matches!(
            &err,
            benchpipe::bench::MetricsError::Select {
                source: benchpipe::bench::parse::SelectError::NotANumber {
                    decimal_comma: true,
                    ..
                },
                ..
            }
        ),
        "{err:?}"
    );
    let err = err.to_string();
    assert!(err.contains("found the string \"17,3846\""), "{err}");
    assert!(err.contains("`decimal_comma = true`"), "{err}");
}

/// Config refuses a pattern before anything runs, at the position in the file of the
/// part that is wrong, with exit-2 diagnostics like any other bad input.
#[test]
fn regex_options_are_checked_at_load_with_positions() {
    let base = regex_recipe(
        "stdout",
        "",
        &[r"^Requests/sec:\s+(?P<rate>[0-9.]+)$"],
        &["rate"],
    );
    // (from, to, location, message)
    let cases: &[(&str, &str, &str, &str)] = &[
        // The caret lands on the unclosed `(`, inside the string.
        (
            r"(?P<rate>[0-9.]+)$",
            r"(?P<rate>[0-9.]+$",
            "pipeline/r.toml:9:21",
            "bad pattern: invalid regular expression: unclosed group",
        ),
        (
            r"(?P<rate>[0-9.]+)",
            r"([0-9.]+)",
            "pipeline/r.toml:9:",
            "no named group",
        ),
        (
            r"(?P<rate>",
            r"(?P<rate.x>",
            "pipeline/r.toml:9:25",
            "group name `rate.x`",
        ),
        (
            r"(?P<rate>[0-9.]+)$'",
            r"(?P<rate>[0-9.]+)$', '(?P<rate>\d)'",
            "pipeline/r.toml:9:47",
            "group `rate` is named in an earlier pattern",
        ),
        (
            r"(?P<rate>[0-9.]+)",
            r"(?P<rate>\w{500}){500}",
            "pipeline/r.toml:9:",
            "compiles to more than",
        ),
        (
            r"\s+(?P<rate>",
            r"(?<=x)(?P<rate>",
            "pipeline/r.toml:9:",
            "look-around",
        ),
        (
            "from = \"rate\"",
            "from = \"rates\"",
            "pipeline/r.toml:12:",
            "expected one of `rate`",
        ),
        (
            "stream = \"stdout\"",
            "stream = \"both\"",
            "pipeline/r.toml:7:10",
            "expected `stdout` or `stderr`",
        ),
        (
            "parse = \"regex\"",
            "parse = \"time\"",
            "pipeline/r.toml:6:1",
            "`[parse_regex]` is for `parse = \"regex\"`",
        ),
        (
            "parse = \"regex\"",
            "parse = \"regexp\"",
            "pipeline/r.toml:5:9",
            "did you mean `regex`?",
        ),
        (
            "patterns = [",
            "pattern = 'x(?P<y>z)'\npatterns = [",
            "pipeline/r.toml:8:",
            "`pattern` or `patterns`, not both",
        ),
        ("patterns", "patternz", "pipeline/r.toml:8:1", "unknown"),
    ];
    for (from, to, location, message) in cases {
        assert!(base.contains(from), "{from}");
        let text = base.replacen(from, to, 1);
        match load_recipe("r", &text) {
            Ok(_) => panic!("{to}: loaded without error:\n{text}"),
            Err(e) => assert!(
                e.contains(location) && e.contains(message),
                "{to}: expected `{location}` and `{message}` in:\n{e}\n{text}"
            ),
        }
    }
    // `parse = "regex"` alone.
    let e = load_recipe(
        "r",
        "uses_storage = false\n[run]\ncommand = \"true\"\nparse = \"regex\"\n\
         [metrics]\nx = { from = \"x\", unit = \"s\", better = \"lower\" }\n",
    )
    .unwrap_err();
    assert!(
        e.contains("pipeline/r.toml:4:9") && e.contains("needs a `[parse_regex]`"),
        "{e}"
    );
    // An escaped (basic) string: the caret still lands on the pattern's own text.
    let e = load_recipe(
        "r",
        "uses_storage = false\n[run]\ncommand = \"true\"\nparse = \"regex\"\n[parse_regex]\n\
         pattern = \"\\\\d+ (?P<x>\\\\d\"\n[metrics]\nx = { from = \"x\", unit = \"s\", better = \"lower\" }\n",
    )
    .unwrap_err();
    assert!(
        e.contains("pipeline/r.toml:6:17") && e.contains("unclosed group"),
        "{e}"
    );
}

/// Through the real binary: a regex recipe is planned, applied and stored on the local
/// board, and a changed pattern is a different cell (its key holds the patterns).
#[test]
fn a_regex_recipe_is_applied_and_its_patterns_are_part_of_the_key() {
    let wrk = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/tool-outputs/wrk.txt");
    let recipe = format!(
        "description = \"wrk's summary, read by a regex\"\nuses_storage = false\n\
         [params]\nfile = \"{}\"\n[run]\ncommand = \"cat {{{{ file }}}}\"\nparse = \"regex\"\n\
         [parse_regex]\npattern = '^Requests/sec:\\s+(?P<requests_per_sec>[0-9.]+)$'\n\
         [metrics]\nrps = {{ from = \"requests_per_sec\", unit = \"req/s\", better = \"higher\" }}\n",
        wrk.display()
    );
    let p = crate::spine::Project::local("regex")
        .file("pipeline/wrk.toml", &recipe)
        .local_scenario("s", &["wrk"], 2, "");
    let apply = p.bp(&["apply", "scenarios/s.toml"]);
    assert!(apply.status.success(), "{}", crate::spine::text(&apply));
    let samples = p.samples("wrk");
    let measured: Vec<f64> = samples
        .iter()
        .filter_map(|s| s["metrics"]["rps"].as_f64())
        .collect();
    assert!(measured.len() >= 2, "{samples:?}");
    assert!(measured.iter().all(|v| *v == 13.32), "{samples:?}");
    let plan = p.bp(&["plan", "--json", "scenarios/s.toml"]);
    let doc: Value = serde_json::from_slice(&plan.stdout).expect("plan --json");
    assert_eq!(doc["summary"]["complete"], 1, "{doc}");
    let p = p.edit(
        "pipeline/wrk.toml",
        "(?P<requests_per_sec>[0-9.]+)$",
        "(?P<requests_per_sec>[0-9.]+)",
    );
    let plan = p.bp(&["plan", "--json", "scenarios/s.toml"]);
    let doc: Value = serde_json::from_slice(&plan.stdout).expect("plan --json");
    assert_eq!(
        doc["summary"]["complete"], 0,
        "a new pattern is a new cell: {doc}"
    );
}
