//! The sampler's trace file as data: one text format written by the board's shell,
//! parsed here without I/O. Lines that do not parse are counted, never fatal, because
//! a sampler killed mid-run may leave anything behind.
//!
//! The format (version 1), one record per line:
//!
//! ```text
//! benchpipe-telemetry 1
//! clk_tck 100                      jiffies per second (USER_HZ)
//! ncpu 4                           CPUs listed in /proc/stat
//! wall 1700000000                  Unix time when the sampler started
//! vcgencmd /usr/bin/vcgencmd       present only when vcgencmd is on PATH
//! tis start                        cpufreq time_in_state, before the run ...
//! policy /sys/.../policy0 performance 1500000     path, governor, scaling_max_freq (kHz)
//! 600000 1234                      frequency (kHz), time there (10 ms units)
//! s UP LOAD1 | USER NICE SYSTEM IDLE IOWAIT IRQ SOFTIRQ STEAL | PSWPIN PSWPOUT | TEMPS.. | FREQS.. | THROTTLED
//! sampler_stat <the sampler's /proc/PID/stat line, just before it was stopped>
//! tis end                          ... and after it
//! times 0m0.01s 0m0.00s            `times` of the wrapped test command: the shell's
//! times 0m1.23s 0m0.05s            own user/sys, then its children's
//! vcgencmd_error 255 VCHI initialization failed   the first failing get_throttled:
//!                                  its exit status and the start of its stderr
//! klog_mark 812 936.270000         the kernel log at the start: its line count and
//!                                  its last line's timestamp (`-` without one)
//! klog_error exit 1: dmesg: read kernel buffer failed: Operation not permitted
//! klog [  937.1] Under-voltage detected! (0x00050005)   a kernel log line that
//!                                  appeared during the run and may matter
//! trace_dropped 1234               bytes the read-back left out of the middle
//! ```
//!
//! `s` lines: UP from /proc/uptime (seconds), LOAD1 from /proc/loadavg, the aggregate
//! `cpu` line of /proc/stat (jiffies), pswpin/pswpout from /proc/vmstat (`-` when
//! absent), every thermal source in millidegrees, every cpufreq policy's
//! scaling_cur_freq in kHz, and `vcgencmd get_throttled`'s value (`-` without it,
//! `?` when it failed).

use serde::{Deserialize, Serialize};

/// The aggregate `cpu` line of /proc/stat, in jiffies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuJiffies {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl CpuJiffies {
    /// Time some process or interrupt used a CPU. Idle and iowait are not work, and
    /// steal is time a hypervisor gave to other guests, not load on this board.
    pub fn busy(&self) -> u64 {
        self.user
            .saturating_add(self.nice)
            .saturating_add(self.system)
            .saturating_add(self.irq)
            .saturating_add(self.softirq)
    }
}

/// One tick of the sampler.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TraceSample {
    /// Seconds since boot: monotonic, and readable without starting a process.
    pub uptime: f64,
    pub load1: Option<f64>,
    pub cpu: Option<CpuJiffies>,
    /// (pswpin, pswpout): pages swapped in and out since boot.
    pub swap: Option<(u64, u64)>,
    /// Every thermal source's reading, millidegrees Celsius.
    pub temps_milli: Vec<i64>,
    /// Every cpufreq policy's current frequency, kHz.
    pub freqs_khz: Vec<u64>,
    /// `vcgencmd get_throttled`'s value.
    pub throttled: Option<u32>,
    /// vcgencmd is there but gave no value at this tick.
    pub throttled_failed: bool,
}

/// One cpufreq policy's `stats/time_in_state`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PolicyTimes {
    pub path: String,
    pub governor: Option<String>,
    pub max_khz: Option<u64>,
    /// (frequency kHz, time in 10 ms units), in the kernel's order.
    pub times: Vec<(u64, u64)>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trace {
    pub version: Option<u32>,
    /// Jiffies per second; 100 when the board did not say.
    pub clk_tck: f64,
    pub ncpu: Option<u32>,
    pub wall_start: Option<i64>,
    pub has_vcgencmd: bool,
    pub samples: Vec<TraceSample>,
    pub tis_start: Vec<PolicyTimes>,
    pub tis_end: Vec<PolicyTimes>,
    /// user+sys CPU seconds of the wrapped test command and everything it waited for.
    pub test_cpu_seconds: Option<f64>,
    /// user+sys(+children) CPU seconds the sampler itself used.
    pub sampler_cpu_seconds: Option<f64>,
    /// The first failure of `vcgencmd get_throttled`: `exit 255: VCHI ...`.
    pub vcgencmd_error: Option<String>,
    /// Whether the kernel log's position was taken at the start.
    pub klog_marked: bool,
    /// Why the kernel log could not be read (at the start or the end).
    pub klog_error: Option<String>,
    /// Kernel log lines that appeared during the run and passed the board's filter.
    pub klog_lines: Vec<String>,
    /// Bytes of the trace left out by the bounded read-back.
    pub dropped_bytes: Option<u64>,
    /// Lines that matched no record: a truncated last line, a newer format.
    pub skipped_lines: usize,
    /// The meter's records (`power.rs`), when the board has a board-side meter.
    pub power: super::power::PowerTrace,
}

#[derive(Clone, Copy, PartialEq)]
enum Section {
    None,
    TisStart,
    TisEnd,
}

/// Parses a trace. Never fails: what cannot be read is counted in `skipped_lines`.
pub fn parse_trace(text: &str) -> Trace {
    let mut trace = Trace {
        clk_tck: 100.0,
        ..Trace::default()
    };
    let mut section = Section::None;
    let mut times_lines: Vec<f64> = Vec::new();
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            continue;
        }
        let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
        let rest = rest.trim();
        let parsed = match word {
            "benchpipe-telemetry" => rest.parse().ok().map(|v| trace.version = Some(v)),
            "clk_tck" => rest
                .parse::<f64>()
                .ok()
                .filter(|v| *v > 0.0 && v.is_finite())
                .map(|v| trace.clk_tck = v),
            "ncpu" => rest
                .parse::<u32>()
                .ok()
                .filter(|n| *n > 0)
                .map(|n| trace.ncpu = Some(n)),
            "wall" => rest.parse().ok().map(|w| trace.wall_start = Some(w)),
            "vcgencmd" => {
                trace.has_vcgencmd = true;
                Some(())
            }
            "tis" => {
                let next = match rest {
                    "start" => Some(Section::TisStart),
                    "end" => Some(Section::TisEnd),
                    _ => None,
                };
                next.map(|n| section = n)
            }
            "policy" if section != Section::None => {
                let mut f = rest.split_whitespace();
                f.next().map(|path| {
                    let governor = f.next().filter(|g| *g != "-").map(str::to_string);
                    let max_khz = f.next().and_then(|m| m.parse().ok());
                    let p = PolicyTimes {
                        path: path.to_string(),
                        governor,
                        max_khz,
                        times: Vec::new(),
                    };
                    match section {
                        Section::TisStart => trace.tis_start.push(p),
                        _ => trace.tis_end.push(p),
                    }
                })
            }
            "s" => parse_sample(rest).map(|s| trace.samples.push(s)),
            "sampler_stat" => stat_cpu_ticks(rest)
                .map(|ticks| trace.sampler_cpu_seconds = Some(ticks as f64 / trace.clk_tck)),
            "times" => parse_times_line(rest).map(|s| times_lines.push(s)),
            "vcgencmd_error" => {
                if trace.vcgencmd_error.is_none() {
                    let (code, text) = rest.split_once(' ').unwrap_or((rest, ""));
                    trace.vcgencmd_error = Some(match text.trim() {
                        "" => format!("exit {code}"),
                        t => format!("exit {code}: {t}"),
                    });
                }
                Some(())
            }
            "klog_mark" => {
                trace.klog_marked = true;
                Some(())
            }
            "klog_error" => {
                if trace.klog_error.is_none() {
                    trace.klog_error = Some(rest.to_string());
                }
                Some(())
            }
            "klog" => {
                trace.klog_lines.push(rest.to_string());
                Some(())
            }
            "trace_dropped" => rest.parse().ok().map(|n| trace.dropped_bytes = Some(n)),
            "power_source" | "power_scale" | "w" | "power_error" | "load_start" => {
                trace.power.record(word, rest).filter(|ok| *ok).map(|_| ())
            }
            _ if section != Section::None => {
                let policies = match section {
                    Section::TisStart => &mut trace.tis_start,
                    _ => &mut trace.tis_end,
                };
                two_numbers(line).and_then(|pair| policies.last_mut().map(|p| p.times.push(pair)))
            }
            _ => None,
        };
        if word != "tis" && word != "policy" && two_numbers(line).is_none() {
            // Any other record ends a time_in_state block.
            section = Section::None;
        }
        if parsed.is_none() {
            trace.skipped_lines += 1;
        }
    }
    if !times_lines.is_empty() {
        trace.test_cpu_seconds = Some(times_lines.iter().sum());
    }
    trace
}

fn two_numbers(line: &str) -> Option<(u64, u64)> {
    let mut f = line.split_whitespace();
    let a = f.next()?.parse().ok()?;
    let b = f.next()?.parse().ok()?;
    f.next().is_none().then_some((a, b))
}

fn dash_or<T: std::str::FromStr>(s: &str) -> Option<T> {
    if s == "-" { None } else { s.parse().ok() }
}

fn parse_sample(rest: &str) -> Option<TraceSample> {
    let parts: Vec<&str> = rest.split('|').map(str::trim).collect();
    if parts.len() != 6 {
        return None;
    }
    let mut head = parts[0].split_whitespace();
    let uptime: f64 = head.next()?.parse().ok().filter(|u: &f64| u.is_finite())?;
    let load1 = head.next().and_then(dash_or::<f64>);
    let jiffies: Vec<u64> = parts[1]
        .split_whitespace()
        .map_while(|w| w.parse().ok())
        .collect();
    let cpu = (jiffies.len() == 8).then(|| CpuJiffies {
        user: jiffies[0],
        nice: jiffies[1],
        system: jiffies[2],
        idle: jiffies[3],
        iowait: jiffies[4],
        irq: jiffies[5],
        softirq: jiffies[6],
        steal: jiffies[7],
    });
    let mut swap_words = parts[2].split_whitespace();
    let swap = match (
        swap_words.next().and_then(dash_or::<u64>),
        swap_words.next().and_then(dash_or::<u64>),
    ) {
        (Some(i), Some(o)) => Some((i, o)),
        _ => None,
    };
    let temps_milli = parts[3]
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    let freqs_khz = parts[4]
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    let throttled = parse_throttled(parts[5]);
    let throttled_failed = parts[5] == "?";
    Some(TraceSample {
        uptime,
        load1,
        cpu,
        swap,
        temps_milli,
        freqs_khz,
        throttled,
        throttled_failed,
    })
}

/// `throttled=0x50005`, `0x50005` or `0`.
pub fn parse_throttled(text: &str) -> Option<u32> {
    let v = text.trim();
    let v = v.strip_prefix("throttled=").unwrap_or(v);
    match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => v.parse().ok(),
    }
}

/// utime + stime + cutime + cstime (clock ticks) from a /proc/PID/stat line. The
/// command name in parentheses may hold spaces, so fields count from the last `)`.
fn stat_cpu_ticks(line: &str) -> Option<u64> {
    let after = &line[line.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // fields[0] is the state (field 3 of proc(5)); utime is field 14.
    let mut total: u64 = 0;
    for i in 11..=14 {
        total = total.saturating_add(fields.get(i)?.parse::<u64>().ok()?);
    }
    Some(total)
}

/// One line of `times`: `0m1.230000s 0m0.050000s` (dash) or `0m1.230s 0m0.050s`
/// (bash): user + sys in seconds.
fn parse_times_line(rest: &str) -> Option<f64> {
    let mut total = 0.0;
    let mut n = 0;
    for word in rest.split_whitespace() {
        let (min, sec) = word.strip_suffix('s')?.split_once('m')?;
        let min: f64 = min.parse().ok()?;
        let sec: f64 = sec.parse().ok()?;
        total += min * 60.0 + sec;
        n += 1;
    }
    (n == 2 && total.is_finite() && total >= 0.0).then_some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = "\
benchpipe-telemetry 1
clk_tck 100
ncpu 4
wall 1700000000
vcgencmd /usr/bin/vcgencmd
tis start
policy /sys/devices/system/cpu/cpufreq/policy0 performance 1500000
600000 100
1500000 5000
s 100.50 0.10 | 1000 10 500 90000 20 0 5 0 | 7 9 | 45000 47000 | 1500000 | 0x0
s 101.51 0.20 | 1100 10 520 90300 20 0 5 0 | 7 9 | 46000 48000 | 1500000 | 0x50005
sampler_stat 4242 (sh) S 1 4242 4242 0 -1 4194304 100 200 0 0 3 2 40 15 20 0 1 0 5 1 1
s 102.52 0.30 | 1200 10 540 90600 20 0 5 0 | 7 12 | 47000 49000 | 600000 | throttled=0x50000
tis end
policy /sys/devices/system/cpu/cpufreq/policy0 performance 1500000
600000 150
1500000 5100
times 0m0.010000s 0m0.000000s
times 0m1.230000s 0m0.050000s
s 103 garbage
";

    #[test]
    fn reads_every_record() {
        let t = parse_trace(TRACE);
        assert_eq!(t.version, Some(1));
        assert_eq!(t.ncpu, Some(4));
        assert_eq!(t.wall_start, Some(1_700_000_000));
        assert!(t.has_vcgencmd);
        assert_eq!(t.samples.len(), 3);
        let s = &t.samples[1];
        assert_eq!(s.uptime, 101.51);
        assert_eq!(s.load1, Some(0.2));
        assert_eq!(s.cpu.map(|c| c.busy()), Some(1100 + 10 + 520 + 5));
        assert_eq!(s.swap, Some((7, 9)));
        assert_eq!(s.temps_milli, vec![46000, 48000]);
        assert_eq!(s.freqs_khz, vec![1_500_000]);
        assert_eq!(s.throttled, Some(0x50005));
        assert_eq!(t.samples[2].throttled, Some(0x50000));
        assert_eq!(t.tis_start.len(), 1);
        assert_eq!(t.tis_start[0].governor.as_deref(), Some("performance"));
        assert_eq!(t.tis_start[0].max_khz, Some(1_500_000));
        assert_eq!(
            t.tis_start[0].times,
            vec![(600_000, 100), (1_500_000, 5000)]
        );
        assert_eq!(t.tis_end[0].times, vec![(600_000, 150), (1_500_000, 5100)]);
        // utime 3 + stime 2 + cutime 40 + cstime 15 ticks at 100 Hz.
        assert_eq!(t.sampler_cpu_seconds, Some(0.6));
        let cpu = t.test_cpu_seconds.unwrap();
        assert!((cpu - 1.29).abs() < 1e-9, "{cpu}");
        assert_eq!(t.skipped_lines, 1);
    }

    #[test]
    fn missing_sources_are_none_not_errors() {
        let t = parse_trace("s 5.0 - | | - - | | | -\n");
        assert_eq!(t.samples.len(), 1);
        let s = &t.samples[0];
        assert_eq!(
            (s.load1, s.cpu, s.swap, s.throttled),
            (None, None, None, None)
        );
        assert!(s.temps_milli.is_empty() && s.freqs_khz.is_empty());
        assert_eq!(t.clk_tck, 100.0);
    }

    #[test]
    fn survives_arbitrary_garbage() {
        for text in [
            "",
            "s",
            "s |||||",
            "sampler_stat )",
            "sampler_stat 1 (a) b",
            "times 1m",
            "tis start\n1 2 3\npolicy\n",
            "clk_tck 0\nclk_tck -5\nclk_tck NaN",
            "\u{0}\u{ffff}",
            "s NaN 1 | 1 2 3 4 5 6 7 8 | 1 2 | | | ",
        ] {
            let t = parse_trace(text);
            assert!(t.clk_tck > 0.0);
            assert!(t.samples.iter().all(|s| s.uptime.is_finite()), "{text:?}");
        }
    }

    #[test]
    fn command_names_with_spaces_and_parens() {
        let line = "9 (my (odd) sh) S 1 9 9 0 -1 0 0 0 0 0 1 1 1 1 20 0 1 0 5 1 1";
        assert_eq!(stat_cpu_ticks(line), Some(4));
    }

    #[test]
    fn throttled_values() {
        assert_eq!(parse_throttled("throttled=0x50005"), Some(0x50005));
        assert_eq!(parse_throttled("0x0"), Some(0));
        assert_eq!(parse_throttled("0"), Some(0));
        assert_eq!(parse_throttled("throttled=zz"), None);
        assert_eq!(parse_throttled("-"), None);
    }
}
