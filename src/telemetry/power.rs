//! Watts: the board-side meter's shell (a sysfs file, a current/voltage pair, or the
//! Pi 5's PMIC read at each of the sampler's ticks), its trace records, and the
//! summary every sample stores: mean watts while idle before the run and during it.
//!
//! Trace records (see `trace.rs` for the rest of the format):
//!
//! ```text
//! power_source file /sys/class/hwmon/hwmon2/power1_input    what is read
//! power_scale 0.000001             watts per unit of the value (per unit² of a pair)
//! w 812.34 3712000                 uptime and the raw value (two values for a pair)
//! power_error cannot read /sys/...: no value     the first failed reading, once
//! load_start 817.40 5              uptime when the run began, and the idle window (s)
//! ```

use serde::{Deserialize, Serialize};

use crate::model::{IDLE_W, MeterSource, POWER_W};
use crate::transport::quote;

/// The warning of a run whose watts could not be read.
pub const POWER_UNKNOWN: &str = "power unknown";

/// The most of `vcgencmd pmic_read_adc`'s output read per tick (it prints ~26 lines).
const PMIC_READ_BYTES: u32 = 8192;

/// Parses `vcgencmd pmic_read_adc` on the board and prints `ok WATTS` or `fail WHY`.
/// Its real output (Jeff Geerling's Pi 5 write-up on jeffgeerling.com, and a full
/// capture in ml-energy/zeus `tests/device/machine/test_rpi.py`; one is kept in
/// `tests/data/pmic_read_adc-pi5.txt`) is one rail per line, currents then voltages:
///
/// ```text
///   VDD_CORE_A current(7)=0.75012000A
///   VDD_CORE_V volt(15)=0.86173300V
///      EXT5V_V volt(24)=5.09066000V
/// ```
///
/// The numbers in brackets are ADC channels, not rails: current and voltage pair by
/// the name before `_A`/`_V`. Rails with a voltage only (EXT5V, BATT) carry no power
/// of their own. The sum is what the PMIC's rails deliver, not what the board draws
/// at its input (conversion losses and the USB ports' 5 V are left out).
pub const PMIC_AWK: &str = r#"/ current\([0-9]+\)=/ { n = $1; sub(/_A$/, "", n); v = $2; sub(/.*=/, "", v); sub(/A$/, "", v); a[n] = v + 0; next }
/ volt\([0-9]+\)=/ { n = $1; sub(/_V$/, "", n); v = $2; sub(/.*=/, "", v); sub(/V$/, "", v); u[n] = v + 0; next }
/^rc=/ { rc = substr($0, 4) }
END {
  if (rc != "0") { print "fail exit " rc; exit }
  t = 0; k = 0
  for (n in a) if (n in u) { t += a[n] * u[n]; k++ }
  if (k == 0) print "fail no current and voltage of one rail"; else printf "ok %.6f\n", t
}"#;

/// The shell function `bp_power` the sampler calls at each tick: appends a `w` line
/// to its stdout, or tells the first failure as `power_error`. Reads only regular
/// files (the `read` builtin would never return on a device such as /dev/zero).
pub(super) fn power_fn(source: &MeterSource) -> String {
    let body = match source {
        MeterSource::File { path, .. } => format!(
            "  bp_power_read {p} || {{ bp_power_fail \"$bp_rv\"; return; }}\n  echo \"w $bp_up $bp_rv\"\n",
            p = quote::sh(path)
        ),
        MeterSource::Pair {
            current, voltage, ..
        } => format!(
            "  bp_power_read {c} || {{ bp_power_fail \"$bp_rv\"; return; }}\n  bp_pa=$bp_rv\n  bp_power_read {v} || {{ bp_power_fail \"$bp_rv\"; return; }}\n  echo \"w $bp_up $bp_pa $bp_rv\"\n",
            c = quote::sh(current),
            v = quote::sh(voltage)
        ),
        MeterSource::Pmic => format!(
            "  bp_pv=$( {{ vcgencmd pmic_read_adc 2>\"$bp_dir/pmicerr\"; bp_rc=$?; echo; echo \"rc=$bp_rc\"; }} | head -c {PMIC_READ_BYTES} | awk {awk})\n  case $bp_pv in\n    'ok '*) echo \"w $bp_up ${{bp_pv#ok }}\" ;;\n    *) bp_power_fail \"vcgencmd pmic_read_adc: ${{bp_pv#fail }} $(head -c 200 \"$bp_dir/pmicerr\" 2>/dev/null | tr -c '[:print:]' ' ')\" ;;\n  esac\n",
            awk = quote::sh(PMIC_AWK)
        ),
        // A controller-side meter has no board-side part.
        MeterSource::Command { .. } => return String::new(),
    };
    format!(
        r#"bp_power_read() {{
  if [ ! -f "$1" ] || [ ! -r "$1" ]; then bp_rv="cannot read $1: not a readable regular file"; return 1; fi
  bp_rv=; {{ read bp_rv < "$1"; }} 2>/dev/null
  case $bp_rv in
    ''|*[!0-9-]*) bp_rv="cannot read $1: not a number"; return 1 ;;
  esac
  return 0
}}
bp_power_fail() {{
  [ -n "$bp_power_told" ] && return
  bp_power_told=1
  echo "power_error $1"
}}
bp_power() {{
  bp_up=0; read bp_up _ < /proc/uptime
{body}}}
"#
    )
}

/// The header lines the start script writes for a board-side meter.
pub(super) fn header(source: &MeterSource) -> String {
    let scale = match source {
        MeterSource::File { scale, .. } | MeterSource::Pair { scale, .. } => *scale,
        _ => 1.0,
    };
    format!(
        "echo {}\necho 'power_scale {scale:e}'\n",
        quote::sh(&format!("power_source {}", source.label()))
    )
}

/// What a trace says about power.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PowerTrace {
    pub source: Option<String>,
    pub scale: Option<f64>,
    /// (uptime, watts).
    pub readings: Vec<(f64, f64)>,
    pub error: Option<String>,
    /// (uptime, idle window in seconds) when the run began.
    pub load_start: Option<(f64, f64)>,
}

impl PowerTrace {
    /// Parses one power record into the trace: None when `word` is not one, else
    /// whether the record was well formed.
    pub(super) fn record(&mut self, word: &str, rest: &str) -> Option<bool> {
        let ok = match word {
            "power_source" => {
                self.source = Some(rest.to_string());
                true
            }
            "power_scale" => match rest.parse::<f64>() {
                Ok(s) if s.is_finite() && s > 0.0 => {
                    self.scale = Some(s);
                    true
                }
                _ => false,
            },
            "w" => {
                let scale = self.scale.unwrap_or(1.0);
                let nums: Option<Vec<f64>> = rest
                    .split_whitespace()
                    .map(|f| f.parse::<f64>().ok().filter(|v| v.is_finite()))
                    .collect();
                let reading = match nums.as_deref() {
                    Some([up, v]) => Some((*up, v * scale)),
                    Some([up, a, v]) => Some((*up, a * v * scale)),
                    _ => None,
                };
                reading.map(|r| self.readings.push(r)).is_some()
            }
            "power_error" => {
                if self.error.is_none() {
                    self.error = Some(crate::bench::parse::visible(rest));
                }
                true
            }
            "load_start" => {
                let mut f = rest.split_whitespace().map(|v| v.parse::<f64>().ok());
                match (f.next().flatten(), f.next().flatten()) {
                    (Some(up), idle) => {
                        self.load_start = Some((up, idle.unwrap_or(0.0)));
                        true
                    }
                    _ => false,
                }
            }
            _ => return None,
        };
        Some(ok)
    }
}

/// Mean watts while idle before a run and during it, as stored in the sample's
/// telemetry (`power`) and as its `idle_w` and `power_w` metrics.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PowerSummary {
    /// What was read: `file /sys/...`, `vcgencmd pmic_read_adc`, `controller command`.
    pub source: String,
    /// Mean over the readings of the idle window; absent without one.
    pub idle_w: Option<f64>,
    pub idle_samples: usize,
    /// Mean over the readings taken during the run.
    pub power_w: Option<f64>,
    pub power_w_min: Option<f64>,
    pub power_w_max: Option<f64>,
    pub load_samples: usize,
    /// Why a reading failed (the first failure); the run is kept with a warning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl PowerSummary {
    /// Accumulates readings split into idle and load.
    pub fn of(source: String, idle: &[f64], load: &[f64], error: Option<String>) -> Self {
        let mean = |xs: &[f64]| (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64);
        PowerSummary {
            source,
            idle_w: mean(idle),
            idle_samples: idle.len(),
            power_w: mean(load),
            power_w_min: load.iter().copied().reduce(f64::min),
            power_w_max: load.iter().copied().reduce(f64::max),
            load_samples: load.len(),
            error,
        }
    }

    /// Whether the run's watts are unknown: a reading failed, or none fell in the run.
    pub fn unknown(&self) -> bool {
        self.error.is_some() || self.power_w.is_none()
    }

    /// The metrics a sample carries: `power_w`, and `idle_w` when there was an idle
    /// window. None of them when a reading failed: a mean over the readings that
    /// worked would not say what the run drew.
    pub fn metrics(&self) -> Vec<(&'static str, f64)> {
        if self.error.is_some() {
            return Vec::new();
        }
        let mut out = Vec::new();
        if let Some(w) = self.power_w {
            out.push((POWER_W, w));
        }
        if let Some(w) = self.idle_w {
            out.push((IDLE_W, w));
        }
        out
    }
}

/// The power summary of a board-side trace; None when the trace has no meter.
pub fn summarize(t: &PowerTrace) -> Option<PowerSummary> {
    let source = t.source.clone()?;
    let (start, idle_s) = t.load_start.unwrap_or((f64::NEG_INFINITY, 0.0));
    let idle: Vec<f64> = t
        .readings
        .iter()
        .filter(|(up, _)| idle_s > 0.0 && *up < start)
        .map(|(_, w)| *w)
        .collect();
    // Without a load_start record (a sampler that died early) nothing is known to be
    // the run's.
    let load: Vec<f64> = t
        .readings
        .iter()
        .filter(|(up, _)| t.load_start.is_some() && *up >= start)
        .map(|(_, w)| *w)
        .collect();
    let mut s = PowerSummary::of(source, &idle, &load, t.error.clone());
    if s.power_w.is_none() && s.error.is_none() {
        s.error =
            Some("no reading fell within the run (shorter than the sampler's interval?)".into());
    }
    Some(s)
}

/// Watts from a controller command's output: a bare number, or a number at `json`
/// (`apower` of a Shelly Gen2 `Switch.GetStatus`, `StatusSNS.ENERGY.Power` of a
/// Tasmota `Status 8`).
pub fn watts_of(stdout: &str, json: Option<&str>) -> Result<f64, String> {
    let text = stdout.trim();
    let w = match json {
        None => text.parse::<f64>().map_err(|_| {
            format!(
                "expected a number of watts, got `{}`",
                crate::bench::parse::visible(&text.chars().take(60).collect::<String>())
            )
        })?,
        Some(path) => {
            let doc: serde_json::Value =
                serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
            crate::bench::parse::select_number(&doc, path).map_err(|e| e.to_string())?
        }
    };
    if !w.is_finite() || w < 0.0 {
        return Err(format!("{w} is not a power in watts"));
    }
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::trace::parse_trace;
    use crate::transport::Transport;
    use crate::transport::local::Local;

    const PMIC: &str = include_str!("../../tests/data/power/pmic_read_adc-pi5.txt");

    /// Pairs `_A` and `_V` rails by name, in Rust, to check the board's awk against.
    fn rails_sum(text: &str) -> f64 {
        let mut amps = std::collections::BTreeMap::new();
        let mut volts = std::collections::BTreeMap::new();
        for line in text.lines() {
            let mut f = line.split_whitespace();
            let (Some(name), Some(reading)) = (f.next(), f.next()) else {
                continue;
            };
            let value: f64 = reading
                .split('=')
                .nth(1)
                .unwrap()
                .trim_end_matches(['A', 'V'])
                .parse()
                .unwrap();
            if let Some(rail) = name.strip_suffix("_A") {
                amps.insert(rail.to_string(), value);
            } else if let Some(rail) = name.strip_suffix("_V") {
                volts.insert(rail.to_string(), value);
            }
        }
        amps.iter()
            .filter_map(|(r, a)| volts.get(r).map(|v| a * v))
            .sum()
    }

    fn awk(input: &str) -> String {
        let out = Local::new()
            .run(
                &format!(
                    "printf '%s' {} | awk {}",
                    quote::sh(input),
                    quote::sh(PMIC_AWK)
                ),
                None,
            )
            .unwrap();
        assert!(out.exit.success(), "{}", out.stderr_str());
        out.stdout_str().trim().to_string()
    }

    #[test]
    fn the_boards_awk_sums_the_rails_of_a_real_pi5_pmic_read_adc() {
        let got = awk(&format!("{PMIC}\nrc=0\n"));
        let watts: f64 = got.strip_prefix("ok ").expect(&got).parse().unwrap();
        let want = rails_sum(PMIC);
        // 12 rails with both a current and a voltage; EXT5V and BATT have no current.
        assert!((watts - want).abs() < 1e-5, "{watts} vs {want}");
        assert!(watts > 5.0 && watts < 10.0, "a busy Pi 5's rails: {watts}");
        // VDD_CORE alone: 6.22421 A at 0.861733 V.
        assert!(watts > 6.22421 * 0.861733);
    }

    #[test]
    fn a_failing_or_foreign_pmic_read_adc_is_a_failure_not_zero_watts() {
        assert_eq!(
            awk("VCHI initialization failed\n\nrc=255\n"),
            "fail exit 255"
        );
        // A Pi 4's firmware answers the unknown command with an error and exit 0.
        assert_eq!(
            awk("error=1 error_msg=\"Command not registered\"\n\nrc=0\n"),
            "fail no current and voltage of one rail"
        );
    }

    #[test]
    fn every_board_side_power_function_is_valid_sh() {
        for source in [
            MeterSource::File {
                path: "/sys/x y/power1_input".into(),
                scale: 1e-6,
            },
            MeterSource::Pair {
                current: "/sys/a".into(),
                voltage: "/sys/b'c".into(),
                scale: 1e-6,
            },
            MeterSource::Pmic,
        ] {
            let script = format!("{}{}", power_fn(&source), header(&source));
            let out = Local::new()
                .run(&format!("sh -n -c {}", quote::sh(&script)), None)
                .unwrap();
            assert!(out.exit.success(), "{}\n{script}", out.stderr_str());
        }
    }

    #[test]
    fn the_power_function_reads_a_fake_file_and_tells_a_missing_one_once() {
        let dir = std::env::temp_dir().join(format!("bp-power-fn-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fake = dir.join("power1_input");
        std::fs::write(&fake, "4870000\n").unwrap();
        let run = |path: &std::path::Path| {
            let source = MeterSource::File {
                path: path.display().to_string(),
                scale: 1e-6,
            };
            let script = format!(
                "bp_dir={}\n{}bp_power\nbp_power\n",
                quote::sh(&dir.display().to_string()),
                power_fn(&source)
            );
            Local::new().run(&script, None).unwrap().stdout_str()
        };
        let text = format!(
            "power_source fake\npower_scale 1e-6\nload_start 0 0\n{}",
            run(&fake)
        );
        let s = summarize(&parse_trace(&text).power).unwrap();
        assert_eq!(s.load_samples, 2, "{text}");
        assert!((s.power_w.unwrap() - 4.87).abs() < 1e-9, "{s:?}");
        let missing = run(&dir.join("gone"));
        assert_eq!(missing.matches("power_error").count(), 1, "{missing}");
        assert!(missing.contains("not a readable regular file"), "{missing}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn readings_before_load_start_are_idle_and_after_it_the_runs() {
        let t = parse_trace(
            "power_source file /f\npower_scale 1e-3\nw 10.0 3000\nw 11.0 3500\nload_start 11.5 2\n\
             w 12.0 7000\nw 13.0 8000\n",
        );
        let s = summarize(&t.power).unwrap();
        assert_eq!((s.idle_samples, s.load_samples), (2, 2));
        assert!((s.idle_w.unwrap() - 3.25).abs() < 1e-9);
        assert!((s.power_w.unwrap() - 7.5).abs() < 1e-9);
        assert_eq!((s.power_w_min, s.power_w_max), (Some(7.0), Some(8.0)));
        assert!(!s.unknown());
        assert_eq!(s.metrics(), vec![(POWER_W, 7.5), (IDLE_W, 3.25)]);
        // A current and voltage pair multiplies (mA × mV = µW, scale 1e-6).
        let pair =
            parse_trace("power_source files\npower_scale 1e-6\nload_start 0 0\nw 1 1000 5000\n");
        assert_eq!(summarize(&pair.power).unwrap().power_w, Some(5.0));
        // No idle window: readings before the run are not idle watts.
        let no_idle =
            parse_trace("power_source f\npower_scale 1\nw 1 3\nload_start 1.5 0\nw 2 7\n");
        assert_eq!(summarize(&no_idle.power).unwrap().idle_w, None);
    }

    #[test]
    fn a_failed_reading_makes_the_run_power_unknown_without_metrics() {
        let t = parse_trace(
            "power_source file /f\npower_scale 1\npower_error cannot read /f: not a readable regular file\n\
             load_start 1 5\nw 2 4\n",
        );
        let s = summarize(&t.power).unwrap();
        assert!(s.unknown());
        assert!(s.metrics().is_empty());
        let summary = crate::telemetry::summarize(&t);
        assert_eq!(
            crate::telemetry::warnings(&summary),
            vec![POWER_UNKNOWN.to_string()]
        );
        // A trace without a meter says nothing about power.
        assert_eq!(summarize(&parse_trace("s 1 0.1 | | | | | -\n").power), None);
        // A run shorter than a tick has no reading: unknown, said why.
        let short = summarize(
            &parse_trace("power_source f\npower_scale 1\nw 1 3\nload_start 1.5 1\n").power,
        )
        .unwrap();
        assert!(short.unknown() && short.error.unwrap().contains("no reading"));
    }

    #[test]
    fn watts_come_from_a_number_or_a_json_path() {
        let shelly = include_str!("../../tests/data/power/shelly-switch-getstatus.json");
        assert_eq!(watts_of(shelly, Some("apower")), Ok(4.87));
        let tasmota =
            r#"{"StatusSNS":{"Time":"2024-01-01T00:00:00","ENERGY":{"Power":12,"Voltage":231}}}"#;
        assert_eq!(watts_of(tasmota, Some("StatusSNS.ENERGY.Power")), Ok(12.0));
        assert_eq!(watts_of(" 5.29\n", None), Ok(5.29));
        assert!(watts_of(shelly, Some("watts")).is_err());
        assert!(
            watts_of("<html>", None)
                .unwrap_err()
                .contains("expected a number")
        );
        assert!(watts_of("-1", None).is_err());
        assert!(
            watts_of("{\"apower\": 1", Some("apower"))
                .unwrap_err()
                .contains("not JSON")
        );
    }
}
