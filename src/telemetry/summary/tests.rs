//! Summaries and flags from real trace lines: throttle bits, kernel events, swap, load.

use super::super::trace::{TraceSample, parse_trace};
use super::*;

fn th() -> Thresholds {
    Thresholds {
        hot_celsius: 80.0,
        background_load: 0.10,
    }
}

/// A trace of `n` ticks one second apart on a 2-CPU board.
fn ticks(lines: &[&str]) -> String {
    let mut t = String::from("benchpipe-telemetry 1\nclk_tck 100\nncpu 2\n");
    for l in lines {
        t.push_str(l);
        t.push('\n');
    }
    t
}

#[test]
fn decodes_every_pi_bit() {
    let all = decode_throttled(0xF000F);
    assert_eq!(all.names().len(), 8);
    assert_eq!(decode_throttled(0), ThrottleBits::default());
    let b = decode_throttled(0x50005);
    assert!(b.under_voltage && b.throttled && b.under_voltage_occurred && b.throttled_occurred);
    assert!(!b.freq_capped && !b.soft_temp_limit && !b.freq_capped_occurred);
    assert_eq!(
        decode_throttled(1 << 3).names(),
        vec!["soft-temperature-limit"]
    );
    assert_eq!(
        decode_throttled(1 << 17).names(),
        vec!["arm-frequency-capped-occurred"]
    );
    // Bits outside 0-3 and 16-19 mean nothing.
    assert_eq!(decode_throttled(0xFFF0_FFF0), ThrottleBits::default());
}

#[test]
fn a_clean_run_has_no_flags() {
    let t = parse_trace(&ticks(&[
        "s 10.0 0.1 | 100 0 50 1000 0 0 0 0 | 5 5 | 45000 | 1500000 | 0x0",
        "s 11.0 0.1 | 110 0 52 1190 0 0 0 0 | 5 5 | 46000 | 1500000 | 0x0",
        "times 0m0.00s 0m0.00s",
        "times 0m0.10s 0m0.01s",
    ]));
    let s = summarize(&t);
    assert_eq!(s.samples, 2);
    assert_eq!(s.seconds, 1.0);
    assert_eq!(
        s.temp_c.map(|r| (r.min, r.max, r.mean)),
        Some((45.0, 46.0, 45.5))
    );
    assert_eq!(s.busy_cpu_seconds, Some(0.12));
    assert!((s.background_cpu_seconds.unwrap() - 0.01).abs() < 1e-9);
    assert!(flags(&s, &th()).is_empty(), "{:?}", flags(&s, &th()));
}

#[test]
fn hot_is_strictly_over_the_limit() {
    for (milli, hot) in [(80000, false), (80001, true), (85000, true)] {
        let t = parse_trace(&ticks(&[&format!("s 1 - | | - - | 40000 {milli} | | -")]));
        let f = flags(&summarize(&t), &th());
        assert_eq!(f.contains(&"hot".to_string()), hot, "{milli}");
    }
}

#[test]
fn swapping_from_a_real_vmstat_pair() {
    // pswpin/pswpout as read from /proc/vmstat on this project's VM around a real
    // swap episode: a pipeline holding 24 MB in a 16 MB memory cgroup, with a swap
    // file on (tests/it/telemetry.rs does this live where it can).
    let t = parse_trace(&ticks(&[
        "s 1 - | | 556681 324399 | | | -",
        "s 2 - | | 561844 327526 | | | -",
    ]));
    let s = summarize(&t);
    assert_eq!(
        (s.swap_in_pages, s.swap_out_pages),
        (Some(5163), Some(3127))
    );
    assert_eq!(flags(&s, &th()), vec!["swapping"]);
    let quiet = parse_trace(&ticks(&["s 1 - | | 7 7 | | | -", "s 2 - | | 7 7 | | | -"]));
    assert!(flags(&summarize(&quiet), &th()).is_empty());
}

#[test]
fn background_load_is_what_the_test_did_not_use() {
    // 2 CPUs for 10 s = 20 CPU-seconds; 12 busy; the test used 10.
    let run = |test: &str| {
        let t = parse_trace(&ticks(&[
            "s 0 - | 0 0 0 0 0 0 0 0 | - - | | | -",
            "s 10 - | 1000 0 200 800 0 0 0 0 | - - | | | -",
            &format!("times 0m0.0s 0m0.0s\ntimes {test} 0m0.0s"),
        ]));
        let s = summarize(&t);
        (s.background_fraction, flags(&s, &th()))
    };
    let (frac, f) = run("0m10.0s");
    assert!((frac.unwrap() - 0.10).abs() < 1e-9);
    assert!(f.is_empty(), "10% is not over a 10% limit: {f:?}");
    let (frac, f) = run("0m8.0s");
    assert!((frac.unwrap() - 0.20).abs() < 1e-9);
    assert_eq!(f, vec!["background-load"]);
    // Without the test's CPU time there is no judgement (a controller-side test).
    let t = parse_trace(&ticks(&[
        "s 0 - | 0 0 0 0 0 0 0 0 | - - | | | -",
        "s 10 - | 2000 0 0 0 0 0 0 0 | - - | | | -",
    ]));
    let s = summarize(&t);
    assert_eq!(s.background_fraction, None);
    assert!(flags(&s, &th()).is_empty());
}

#[test]
fn throttle_bits_already_set_before_the_run_do_not_flag_it() {
    let run = |values: &[&str]| {
        let lines: Vec<String> = values
            .iter()
            .map(|v| format!("s 1 - | | - - | | | {v}"))
            .collect();
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        flags(&summarize(&parse_trace(&ticks(&refs))), &th())
    };
    assert!(run(&["0x50000", "0x50000"]).is_empty());
    assert_eq!(
        run(&["0x0", "0x50005", "0x50000"]),
        vec!["throttled", "under-voltage"]
    );
    assert_eq!(run(&["0x0", "0x80000"]), vec!["throttled"]);
    assert_eq!(run(&["0x10000", "0x10001"]), vec!["under-voltage"]);
    assert_eq!(run(&["0x20000", "0x20002"]), vec!["throttled"]);
}

#[test]
fn time_below_max_under_performance_is_throttling() {
    let trace = |governor: &str, low_end: u64| {
        parse_trace(&format!(
            "tis start\npolicy /p0 {governor} 1500000\n600000 100\n1500000 5000\n\
             s 1 - | | - - | | | -\n\
             tis end\npolicy /p0 {governor} 1500000\n600000 {low_end}\n1500000 5100\n"
        ))
    };
    let s = summarize(&trace("performance", 150));
    assert!((s.below_max_freq_fraction.unwrap() - 50.0 / 150.0).abs() < 1e-9);
    assert_eq!(flags(&s, &th()), vec!["throttled"]);
    assert!(flags(&summarize(&trace("performance", 100)), &th()).is_empty());
    // schedutil lowers the clock on purpose when idle: recorded, not flagged.
    let s = summarize(&trace("schedutil", 150));
    assert_eq!(s.below_max_freq_fraction, None);
    assert!(s.below_max_freq_fraction_any_governor.unwrap() > 0.3);
    assert!(flags(&s, &th()).is_empty());
}

#[test]
fn kernel_log_lines_as_the_kernels_print_them() {
    for (line, kind) in [
        (
            "[  937.1] raspberrypi-firmware soc:firmware: Under-voltage detected! (0x00050005)",
            Some("under-voltage"),
        ),
        (
            "[   12.0] hwmon hwmon1: Undervoltage detected!",
            Some("under-voltage"),
        ),
        (
            "[  940.0] raspberrypi-firmware soc:firmware: Voltage normalised (0x00000000)",
            Some("under-voltage"),
        ),
        ("[ 1.0] cpu frequency capped", Some("throttled")),
        (
            "[ 5.0] CPU0: Core temperature above threshold, cpu clock throttled (total events = 1)",
            Some("throttled"),
        ),
        ("[ 6.0] CPU0: Core temperature/speed normal", None),
        (
            "[ 7.0] loop0: detected capacity change from 0 to 327680",
            None,
        ),
    ] {
        assert_eq!(kernel_event(line), kind, "{line}");
    }
}

#[test]
fn kernel_events_flag_a_run_whose_sticky_bits_were_already_set() {
    let t = parse_trace(&ticks(&[
        "vcgencmd /usr/bin/vcgencmd",
        "klog_mark 10 200.000000",
        "s 1 - | | - - | | | 0x50000",
        "s 2 - | | - - | | | 0x50000",
        "klog [  201.000000] Under-voltage detected! (0x00050005)",
        "klog [  201.500000] usb 1-1: reset high-speed USB device",
    ]));
    let s = summarize(&t);
    assert_eq!(s.kernel_log.as_deref(), Some("read"));
    assert_eq!(s.kernel_events, vec!["under-voltage"]);
    assert_eq!(s.kernel_lines.len(), 1);
    assert_eq!(s.throttled_state.as_deref(), Some("known"));
    assert_eq!(flags(&s, &th()), vec!["under-voltage"]);
    assert!(warnings(&s).is_empty());
    // The stored summary re-judges the same way, and an older one without these
    // fields still loads.
    let v = serde_json::to_value(&s).unwrap();
    let back: TelemetrySummary = serde_json::from_value(v).unwrap();
    assert_eq!(flags(&back, &th()), vec!["under-voltage"]);
    let old: TelemetrySummary = serde_json::from_str(
        r#"{"samples": 2, "seconds": 1.0,
        "temp_c": null, "freq_mhz_min": null, "freq_mhz_max": null, "load1_max": null,
        "swap_in_pages": null, "swap_out_pages": null, "cpus": 2,
        "busy_cpu_seconds": null, "test_cpu_seconds": null,
        "background_cpu_seconds": null, "background_fraction": null,
        "sampler_cpu_seconds": null, "throttled_first": 0, "throttled_seen": 0,
        "throttled_names": [], "governors": [], "below_max_freq_fraction": null,
        "below_max_freq_fraction_any_governor": null}"#,
    )
    .unwrap();
    assert!(flags(&old, &th()).is_empty() && warnings(&old).is_empty());
}

#[test]
fn the_throttle_state_is_unknown_when_vcgencmd_fails_or_the_log_hides_events() {
    let failing = summarize(&parse_trace(&ticks(&[
        "vcgencmd /usr/bin/vcgencmd",
        "vcgencmd_error 255 VCHI initialization failed",
        "s 1 - | | - - | | | ?",
        "s 2 - | | - - | | | ?",
    ])));
    assert_eq!(failing.throttled_state.as_deref(), Some("unknown"));
    assert_eq!(
        failing.throttled_error.as_deref(),
        Some("vcgencmd get_throttled failed: exit 255: VCHI initialization failed")
    );
    assert_eq!(warnings(&failing), vec![THROTTLE_UNKNOWN]);
    assert!(flags(&failing, &th()).is_empty());
    let hidden = summarize(&parse_trace(&ticks(&[
        "vcgencmd /usr/bin/vcgencmd",
        "klog_error exit 1: dmesg: read kernel buffer failed: Operation not permitted",
        "s 1 - | | - - | | | 0x50000",
    ])));
    assert_eq!(hidden.throttled_state.as_deref(), Some("unknown"));
    assert!(
        hidden
            .kernel_log
            .as_deref()
            .unwrap()
            .starts_with("unreadable: exit 1"),
        "{hidden:?}"
    );
    // Without sticky bits set, a new event would show in them: known.
    let clean = summarize(&parse_trace(&ticks(&[
        "vcgencmd /usr/bin/vcgencmd",
        "klog_error exit 1: dmesg: read kernel buffer failed: Operation not permitted",
        "s 1 - | | - - | | | 0x0",
    ])));
    assert_eq!(clean.throttled_state.as_deref(), Some("known"));
    // No vcgencmd at all (not a Raspberry Pi): nothing to know, no warning.
    let none = summarize(&parse_trace(&ticks(&["s 1 - | | - - | | | -"])));
    assert_eq!(none.throttled_state, None);
    assert!(warnings(&none).is_empty());
}

#[test]
fn an_empty_trace_summarizes_to_nothing() {
    let s = summarize(&parse_trace(""));
    assert_eq!(s.samples, 0);
    assert!(flags(&s, &th()).is_empty());
    assert!(serde_json::to_value(&s).is_ok());
}

/// A long run's series is at most `max` points, evenly picked with the first and the
/// last tick kept; the clock is the mean over the CPUs that report one, and a tick
/// without thermal zones or cpufreq gives nulls, never zeros.
#[test]
fn a_series_is_bounded_evenly_picked_and_null_where_absent() {
    let samples: Vec<TraceSample> = (0..1000)
        .map(|i| TraceSample {
            uptime: 100.0 + i as f64,
            temps_milli: vec![40_000 + i, 30_000],
            freqs_khz: vec![1_500_000, 600_000],
            ..TraceSample::default()
        })
        .collect();
    let s = series(&samples, 240);
    assert_eq!(s.len(), 240);
    assert_eq!(s[0].t, 0.0);
    assert_eq!(s[239].t, 999.0);
    assert_eq!(s[239].temp_c, Some(40.999));
    assert!(s.iter().all(|p| p.freq_mhz == Some(1050.0)));
    assert!(s.windows(2).all(|w| w[0].t < w[1].t));
    let bare = vec![
        TraceSample {
            uptime: 1.0,
            ..TraceSample::default()
        };
        3
    ];
    let s = series(&bare, 240);
    assert_eq!(s.len(), 3);
    assert!(s.iter().all(|p| p.temp_c.is_none() && p.freq_mhz.is_none()));
    assert!(series(&[], 240).is_empty());
}

/// What a run did not measure raises no flag, however low the thresholds: its judged
/// form keeps an absent temperature or load as NaN, which is above no threshold. Every
/// flag raised at once comes out in `FLAGS` order, and judging the kept form gives what
/// judging the summary does.
#[test]
fn absent_measures_raise_no_flag_and_every_flag_comes_in_its_order() {
    let low = Thresholds {
        hot_celsius: f64::MIN,
        background_load: f64::MIN,
    };
    let nothing = TelemetrySummary::default();
    assert!(
        flags(&nothing, &low).is_empty(),
        "{:?}",
        flags(&nothing, &low)
    );
    let everything = TelemetrySummary {
        temp_c: Some(Range {
            min: 90.0,
            max: 91.0,
            mean: 90.5,
        }),
        background_fraction: Some(0.5),
        swap_in_pages: Some(3),
        throttled_first: Some(0),
        throttled_seen: Some(SLOWED | UNDER_VOLTAGE),
        throttled_state: Some("unknown".into()),
        ..TelemetrySummary::default()
    };
    assert_eq!(flags(&everything, &th()), FLAGS.map(String::from).to_vec());
    assert_eq!(warnings(&everything), vec![THROTTLE_UNKNOWN.to_string()]);
    let stored = super::super::StoredTelemetry::from(Box::new(everything.clone()));
    assert_eq!(stored.flags(&th()), Some(flags(&everything, &th())));
    assert_eq!(stored.warnings(), warnings(&everything));
}
