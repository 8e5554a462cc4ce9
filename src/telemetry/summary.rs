//! What a trace says about a run: a summary for the store, and the validity flags.
//! Pure functions; the thresholds come from the scenario's `[method] validity`.

use serde::{Deserialize, Serialize};

use super::trace::{PolicyTimes, Trace};
use crate::model::Validity;

/// The Raspberry Pi firmware's `get_throttled` bits, decoded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThrottleBits {
    pub under_voltage: bool,
    pub freq_capped: bool,
    pub throttled: bool,
    pub soft_temp_limit: bool,
    pub under_voltage_occurred: bool,
    pub freq_capped_occurred: bool,
    pub throttled_occurred: bool,
    pub soft_temp_limit_occurred: bool,
}

/// Bits 0-3 say what holds now; bits 16-19 that it happened since boot.
pub fn decode_throttled(value: u32) -> ThrottleBits {
    let bit = |n: u32| value & (1 << n) != 0;
    ThrottleBits {
        under_voltage: bit(0),
        freq_capped: bit(1),
        throttled: bit(2),
        soft_temp_limit: bit(3),
        under_voltage_occurred: bit(16),
        freq_capped_occurred: bit(17),
        throttled_occurred: bit(18),
        soft_temp_limit_occurred: bit(19),
    }
}

impl ThrottleBits {
    /// Names of the set bits, for people reading the store.
    pub fn names(&self) -> Vec<&'static str> {
        [
            (self.under_voltage, "under-voltage"),
            (self.freq_capped, "arm-frequency-capped"),
            (self.throttled, "throttled"),
            (self.soft_temp_limit, "soft-temperature-limit"),
            (self.under_voltage_occurred, "under-voltage-occurred"),
            (self.freq_capped_occurred, "arm-frequency-capped-occurred"),
            (self.throttled_occurred, "throttled-occurred"),
            (
                self.soft_temp_limit_occurred,
                "soft-temperature-limit-occurred",
            ),
        ]
        .into_iter()
        .filter_map(|(set, name)| set.then_some(name))
        .collect()
    }
}

/// The "has occurred" half of get_throttled: sticky since boot.
const STICKY: u32 = 0xF_0000;
/// Under-voltage, now or newly occurred.
const UNDER_VOLTAGE: u32 = (1 << 0) | (1 << 16);
/// Capped, throttled or at the soft limit, now or newly occurred.
const SLOWED: u32 = 0b1110 | (0b1110 << 16);

/// The share of time_in_state spent below the top frequency that still counts as
/// running at the top: frequency changes are sampled in 10 ms units.
const BELOW_MAX_TOLERANCE: f64 = 0.01;

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Range {
    pub min: f64,
    pub max: f64,
    pub mean: f64,
}

/// One run's telemetry, as stored in a sample's `telemetry` field.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TelemetrySummary {
    /// Sampler ticks, including the final one taken when the run ended.
    pub samples: usize,
    /// From the first to the last tick.
    pub seconds: f64,
    /// The hottest thermal source at each tick, °C.
    pub temp_c: Option<Range>,
    pub freq_mhz_min: Option<f64>,
    pub freq_mhz_max: Option<f64>,
    pub load1_max: Option<f64>,
    /// Pages swapped in and out during the run (/proc/vmstat deltas).
    pub swap_in_pages: Option<u64>,
    pub swap_out_pages: Option<u64>,
    /// CPUs of the board; the capacity is `seconds * cpus`.
    pub cpus: Option<u32>,
    /// CPU time all processes used during the run (/proc/stat).
    pub busy_cpu_seconds: Option<f64>,
    /// CPU time of the test command (its `times`); absent for controller-side tests.
    pub test_cpu_seconds: Option<f64>,
    /// busy - test: what else ran, the sampler included.
    pub background_cpu_seconds: Option<f64>,
    /// background / capacity.
    pub background_fraction: Option<f64>,
    /// The sampler's own CPU time, to keep its cost in sight.
    pub sampler_cpu_seconds: Option<f64>,
    /// get_throttled at the first tick, and every bit seen at any tick.
    pub throttled_first: Option<u32>,
    pub throttled_seen: Option<u32>,
    pub throttled_names: Vec<String>,
    /// cpufreq governors of the policies (distinct, sorted).
    pub governors: Vec<String>,
    /// Share of time_in_state time spent below each policy's scaling_max_freq, over
    /// policies with the `performance` governor (where anything below max is a cap).
    pub below_max_freq_fraction: Option<f64>,
    /// The same over all policies, whatever their governor; informative only.
    pub below_max_freq_fraction_any_governor: Option<f64>,
    /// `known` when every tick read get_throttled and nothing hid a new event,
    /// `unknown` when vcgencmd failed, or when its sticky bits were already set and
    /// the kernel log could not be read; absent on boards without vcgencmd.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttled_state: Option<String>,
    /// Why the throttle state is unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttled_error: Option<String>,
    /// `read`, or `unreadable: <why>`; absent in traces from before it was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_log: Option<String>,
    /// What the kernel logged during the run (`under-voltage`, `throttled`): unlike
    /// the firmware's sticky bits, an event already seen before the run does not
    /// hide a new one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernel_events: Vec<String>,
    /// The first of those kernel log lines, for people reading the store.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernel_lines: Vec<String>,
}

/// The kernel's own words for events that invalidate a run, lower case:
/// `Under-voltage detected! (0x00050005)` and `Voltage normalised (0x00000000)`
/// (the Raspberry Pi firmware driver), `Undervoltage detected!` (mainline's
/// raspberrypi-hwmon), `cpu frequency capped`, and x86's `Core temperature above
/// threshold, cpu clock throttled`. A voltage that normalised during the run was low
/// during it. The sampler's coarse filter on the board (`KLOG_FILTER`) must pass
/// every one of these.
const KERNEL_EVENTS: &[(&str, &str)] = &[
    ("under-voltage detected", "under-voltage"),
    ("undervoltage detected", "under-voltage"),
    ("voltage normalised", "under-voltage"),
    ("voltage normalized", "under-voltage"),
    ("frequency capped", "throttled"),
    ("clock throttled", "throttled"),
];

/// Kernel log lines kept in the summary, and characters of each.
const KERNEL_LINES_KEPT: usize = 8;
const KERNEL_LINE_CHARS: usize = 200;

/// The events a kernel log line reports (`under-voltage`, `throttled`), if any.
pub fn kernel_event(line: &str) -> Option<&'static str> {
    let lower = line.to_ascii_lowercase();
    KERNEL_EVENTS
        .iter()
        .find(|(words, _)| lower.contains(words))
        .map(|(_, kind)| *kind)
}

/// Limits the flags are judged against.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Thresholds {
    pub hot_celsius: f64,
    /// Share of the board's CPU capacity (0.1 = 10%).
    pub background_load: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds::from(&Validity::default())
    }
}

impl From<&Validity> for Thresholds {
    fn from(v: &Validity) -> Self {
        Thresholds {
            hot_celsius: v.hot_celsius,
            background_load: v.background_load,
        }
    }
}

pub fn summarize(trace: &Trace) -> TelemetrySummary {
    let samples = &trace.samples;
    let mut out = TelemetrySummary {
        samples: samples.len(),
        cpus: trace.ncpu,
        test_cpu_seconds: trace.test_cpu_seconds,
        sampler_cpu_seconds: trace.sampler_cpu_seconds,
        ..TelemetrySummary::default()
    };
    if let (Some(first), Some(last)) = (samples.first(), samples.last()) {
        out.seconds = (last.uptime - first.uptime).max(0.0);
    }

    let hottest: Vec<f64> = samples
        .iter()
        .filter_map(|s| s.temps_milli.iter().max().map(|m| *m as f64 / 1000.0))
        .collect();
    if !hottest.is_empty() {
        out.temp_c = Some(Range {
            min: hottest.iter().copied().fold(f64::INFINITY, f64::min),
            max: hottest.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            mean: hottest.iter().sum::<f64>() / hottest.len() as f64,
        });
    }
    let freqs = samples.iter().flat_map(|s| s.freqs_khz.iter().copied());
    out.freq_mhz_min = freqs.clone().min().map(|k| k as f64 / 1000.0);
    out.freq_mhz_max = freqs.max().map(|k| k as f64 / 1000.0);
    out.load1_max = samples
        .iter()
        .filter_map(|s| s.load1)
        .fold(None, |acc: Option<f64>, v| {
            Some(acc.map_or(v, |a| a.max(v)))
        });

    let swaps: Vec<(u64, u64)> = samples.iter().filter_map(|s| s.swap).collect();
    if let (Some(a), Some(b)) = (swaps.first(), swaps.last()) {
        out.swap_in_pages = Some(b.0.saturating_sub(a.0));
        out.swap_out_pages = Some(b.1.saturating_sub(a.1));
    }

    let cpu: Vec<_> = samples
        .iter()
        .filter_map(|s| s.cpu.map(|c| (s.uptime, c)))
        .collect();
    if let (Some((t0, a)), Some((t1, b))) = (cpu.first(), cpu.last()) {
        let busy = b.busy().saturating_sub(a.busy()) as f64 / trace.clk_tck;
        out.busy_cpu_seconds = Some(busy);
        if let Some(test) = trace.test_cpu_seconds {
            let background = (busy - test).max(0.0);
            out.background_cpu_seconds = Some(background);
            let capacity = (t1 - t0) * trace.ncpu.unwrap_or(1) as f64;
            if capacity > 0.0 {
                out.background_fraction = Some((background / capacity).min(1.0));
            }
        }
    }

    let throttles: Vec<u32> = samples.iter().filter_map(|s| s.throttled).collect();
    out.throttled_first = throttles.first().copied();
    out.throttled_seen = throttles.iter().copied().reduce(|a, b| a | b);
    if let Some(seen) = out.throttled_seen {
        out.throttled_names = decode_throttled(seen)
            .names()
            .into_iter()
            .map(str::to_string)
            .collect();
    }

    let mut governors: Vec<String> = trace
        .tis_start
        .iter()
        .filter_map(|p| p.governor.clone())
        .collect();
    governors.sort();
    governors.dedup();
    out.governors = governors;
    out.below_max_freq_fraction = below_max(&trace.tis_start, &trace.tis_end, true);
    out.below_max_freq_fraction_any_governor = below_max(&trace.tis_start, &trace.tis_end, false);

    if trace.klog_marked || trace.klog_error.is_some() {
        out.kernel_log = Some(match &trace.klog_error {
            Some(why) => format!("unreadable: {}", crate::bench::parse::visible(why)),
            None => "read".into(),
        });
    }
    if trace.klog_error.is_none() {
        for line in &trace.klog_lines {
            let Some(kind) = kernel_event(line) else {
                continue;
            };
            if !out.kernel_events.iter().any(|k| k == kind) {
                out.kernel_events.push(kind.to_string());
            }
            if out.kernel_lines.len() < KERNEL_LINES_KEPT {
                out.kernel_lines.push(
                    crate::bench::parse::visible(line)
                        .chars()
                        .take(KERNEL_LINE_CHARS)
                        .collect(),
                );
            }
        }
        out.kernel_events.sort();
    }

    if trace.has_vcgencmd {
        let failed = samples.iter().any(|s| s.throttled_failed)
            || (!samples.is_empty() && throttles.is_empty());
        let sticky_before = out.throttled_first.is_some_and(|v| v & STICKY != 0);
        let (state, why) = if failed {
            let why = trace
                .vcgencmd_error
                .as_deref()
                .map_or_else(|| "no value".into(), crate::bench::parse::visible);
            (
                "unknown",
                Some(format!("vcgencmd get_throttled failed: {why}")),
            )
        } else if sticky_before && trace.klog_error.is_some() {
            // The sticky bits cannot show a new event, and the kernel log that could
            // was not readable.
            let why = crate::bench::parse::visible(trace.klog_error.as_deref().unwrap_or_default());
            (
                "unknown",
                Some(format!(
                    "sticky throttle bits were set before the run and the kernel log is unreadable: {why}"
                )),
            )
        } else {
            ("known", None)
        };
        out.throttled_state = Some(state.into());
        out.throttled_error = why;
    }
    out
}

/// Share of the time_in_state time that grew during the run at frequencies below the
/// policy's maximum (its scaling_max_freq at the start, else the top of its table).
fn below_max(start: &[PolicyTimes], end: &[PolicyTimes], performance_only: bool) -> Option<f64> {
    let mut below: u64 = 0;
    let mut total: u64 = 0;
    let mut any = false;
    for s in start {
        if performance_only && s.governor.as_deref() != Some("performance") {
            continue;
        }
        let Some(e) = end.iter().find(|e| e.path == s.path) else {
            continue;
        };
        let Some(max) = s.max_khz.or_else(|| s.times.iter().map(|(f, _)| *f).max()) else {
            continue;
        };
        any = true;
        for (freq, t_end) in &e.times {
            let t_start = s
                .times
                .iter()
                .find(|(f, _)| f == freq)
                .map_or(0, |(_, t)| *t);
            let grew = t_end.saturating_sub(t_start);
            total = total.saturating_add(grew);
            if *freq < max {
                below = below.saturating_add(grew);
            }
        }
    }
    (any && total > 0).then(|| below as f64 / total as f64)
}

/// The validity warnings of a run: counted and shown like flags, but they never leave
/// a run out of the statistics (they say what could not be judged, not what went
/// wrong).
pub fn warnings(summary: &TelemetrySummary) -> Vec<String> {
    let mut out = Vec::new();
    if summary.throttled_state.as_deref() == Some("unknown") {
        out.push(THROTTLE_UNKNOWN.to_string());
    }
    out
}

/// The warning for a board whose throttle state could not be read.
pub const THROTTLE_UNKNOWN: &str = "throttle state unknown";

/// The validity flags of a run, in a fixed order. Absent data raises no flag.
pub fn flags(summary: &TelemetrySummary, thresholds: &Thresholds) -> Vec<String> {
    // Sticky bits already set before the run say nothing about this run.
    let new_bits = |mask: u32| -> bool {
        let Some(seen) = summary.throttled_seen else {
            return false;
        };
        let before = summary.throttled_first.unwrap_or(0) & STICKY;
        (seen & !before) & mask != 0
    };
    let mut out = Vec::new();
    let freq_dropped = summary
        .below_max_freq_fraction
        .is_some_and(|f| f > BELOW_MAX_TOLERANCE);
    let kernel = |kind: &str| summary.kernel_events.iter().any(|k| k == kind);
    if new_bits(SLOWED) || freq_dropped || kernel("throttled") {
        out.push("throttled");
    }
    if summary
        .temp_c
        .is_some_and(|t| t.max > thresholds.hot_celsius)
    {
        out.push("hot");
    }
    if summary.swap_in_pages.unwrap_or(0) > 0 || summary.swap_out_pages.unwrap_or(0) > 0 {
        out.push("swapping");
    }
    if summary
        .background_fraction
        .is_some_and(|f| f > thresholds.background_load)
    {
        out.push("background-load");
    }
    if new_bits(UNDER_VOLTAGE) || kernel("under-voltage") {
        out.push("under-voltage");
    }
    out.into_iter().map(str::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::super::trace::parse_trace;
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
}
