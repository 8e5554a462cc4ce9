//! What a trace says about a run: a summary for the store, and the validity flags.
//! Pure functions; the thresholds come from the scenario's `[method] validity`.

use serde::{Deserialize, Serialize};

use super::trace::{PolicyTimes, Trace};
use crate::model::Validity;

/// The Raspberry Pi firmware's `get_throttled` bits, decoded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "one bool per bit of the firmware's word, as report.json names them"
)]
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

/// Points a run's series keeps at most: a 15-minute burn-in at ~1 Hz is 900 ticks.
pub const SERIES_MAX: usize = 240;

/// One tick of a run's series: seconds since the first tick, the hottest thermal
/// source, the mean clock over the CPUs that report one (absent where no cpufreq).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SeriesPoint {
    pub t: f64,
    pub temp_c: Option<f64>,
    pub freq_mhz: Option<f64>,
}

/// Up to `max` ticks evenly picked, first and last included: the same ticks for the
/// same trace.
pub fn series(samples: &[super::trace::TraceSample], max: usize) -> Vec<SeriesPoint> {
    let Some(first) = samples.first() else {
        return Vec::new();
    };
    let n = samples.len();
    let picks: Vec<usize> = if n <= max {
        (0..n).collect()
    } else {
        let mut v: Vec<usize> = (0..max).map(|i| i * (n - 1) / (max - 1).max(1)).collect();
        v.dedup();
        v
    };
    picks
        .into_iter()
        .map(|i| {
            let s = &samples[i];
            SeriesPoint {
                t: ((s.uptime - first.uptime).max(0.0) * 100.0).round() / 100.0,
                temp_c: s.temps_milli.iter().max().map(|m| *m as f64 / 1000.0),
                freq_mhz: (!s.freqs_khz.is_empty()).then(|| {
                    let sum: u64 = s.freqs_khz.iter().sum();
                    (sum as f64 / s.freqs_khz.len() as f64 / 1000.0 * 10.0).round() / 10.0
                }),
            }
        })
        .collect()
}

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
    /// Temperature and CPU clock over the run, at most `SERIES_MAX` points evenly
    /// picked from the ticks (the first and last kept); kept in the store only for
    /// recipes with `series = true`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<SeriesPoint>,
    /// Watts idle before the run and during it, from the board's `[meter]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power: Option<super::power::PowerSummary>,
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
            let capacity = (t1 - t0) * f64::from(trace.ncpu.unwrap_or(1));
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

    out.power = super::power::summarize(&trace.power);
    out.series = series(samples, SERIES_MAX);
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
    Judged::of(summary).warnings()
}

/// The warning for a board whose throttle state could not be read.
pub const THROTTLE_UNKNOWN: &str = "throttle state unknown";

/// Every flag `flags` can raise, in its order.
pub const FLAGS: [&str; 5] = [
    "throttled",
    "hot",
    "swapping",
    "background-load",
    "under-voltage",
];

/// The validity flags of a run, in a fixed order. Absent data raises no flag.
pub fn flags(summary: &TelemetrySummary, thresholds: &Thresholds) -> Vec<String> {
    Judged::of(summary).flags(thresholds)
}

/// What `flags` and `warnings` read of a summary, taken out of it once: a report judges
/// every run again under its scenario's thresholds, and a big store's summaries lie far
/// apart in memory, where this is kept in the sample itself (`StoredTelemetry`). Only
/// the two measures a threshold applies to are kept as numbers; the rest depend on no
/// threshold and are kept as their answers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Judged {
    /// The hottest temperature of the run, °C; NaN when none was read (NaN is above no
    /// threshold, as an absent reading raises no flag).
    temp_max: f64,
    /// The background load's share of the board's capacity; NaN when unknown.
    background: f64,
    /// The answers that need no threshold, one bit each (`Judged::THROTTLED` ...).
    bits: u8,
}

impl Judged {
    const THROTTLED: u8 = 1;
    const SWAPPING: u8 = 1 << 1;
    const UNDER_VOLTAGE: u8 = 1 << 2;
    const THROTTLE_UNKNOWN: u8 = 1 << 3;
    const POWER_UNKNOWN: u8 = 1 << 4;

    pub fn of(summary: &TelemetrySummary) -> Judged {
        // Sticky bits already set before the run say nothing about this run.
        let new_bits = |mask: u32| -> bool {
            let Some(seen) = summary.throttled_seen else {
                return false;
            };
            let before = summary.throttled_first.unwrap_or(0) & STICKY;
            (seen & !before) & mask != 0
        };
        let freq_dropped = summary
            .below_max_freq_fraction
            .is_some_and(|f| f > BELOW_MAX_TOLERANCE);
        let kernel = |kind: &str| summary.kernel_events.iter().any(|k| k == kind);
        let answers = [
            (
                Judged::THROTTLED,
                new_bits(SLOWED) || freq_dropped || kernel("throttled"),
            ),
            (
                Judged::SWAPPING,
                summary.swap_in_pages.unwrap_or(0) > 0 || summary.swap_out_pages.unwrap_or(0) > 0,
            ),
            (
                Judged::UNDER_VOLTAGE,
                new_bits(UNDER_VOLTAGE) || kernel("under-voltage"),
            ),
            (
                Judged::THROTTLE_UNKNOWN,
                summary.throttled_state.as_deref() == Some("unknown"),
            ),
            (
                Judged::POWER_UNKNOWN,
                summary
                    .power
                    .as_ref()
                    .is_some_and(super::power::PowerSummary::unknown),
            ),
        ];
        Judged {
            temp_max: summary.temp_c.map_or(f64::NAN, |t| t.max),
            background: summary.background_fraction.unwrap_or(f64::NAN),
            bits: answers
                .iter()
                .filter(|(_, yes)| *yes)
                .fold(0, |bits, (bit, _)| bits | bit),
        }
    }

    fn has(&self, bit: u8) -> bool {
        self.bits & bit != 0
    }

    /// `flags` of the summary this was taken from.
    pub fn flags(&self, thresholds: &Thresholds) -> Vec<String> {
        // `>` is false for NaN: an absent measure raises no flag.
        let raised = [
            self.has(Judged::THROTTLED),
            self.temp_max > thresholds.hot_celsius,
            self.has(Judged::SWAPPING),
            self.background > thresholds.background_load,
            self.has(Judged::UNDER_VOLTAGE),
        ];
        FLAGS
            .iter()
            .zip(raised)
            .filter(|(_, yes)| *yes)
            .map(|(flag, _)| flag.to_string())
            .collect()
    }

    /// `warnings` of the summary this was taken from.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.has(Judged::THROTTLE_UNKNOWN) {
            out.push(THROTTLE_UNKNOWN.to_string());
        }
        if self.has(Judged::POWER_UNKNOWN) {
            out.push(super::power::POWER_UNKNOWN.to_string());
        }
        out
    }
}

#[cfg(test)]
mod tests;
