//! Watts around a measured run: which sampler options a board's `[meter]` asks for,
//! the controller-side meter's thread and idle window, and what a sample keeps of
//! them (its telemetry's `power`, its `power_w` and `idle_w` metrics).

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use super::worker::{Worker, board_host};
use crate::bench::{self, Vars};
use crate::model::MeterSource;
use crate::telemetry::plug::PlugMeter;
use crate::telemetry::power::PowerSummary;
use crate::telemetry::{SamplerOptions, TelemetrySummary};

/// How often a controller-side meter is read.
const PLUG_INTERVAL: Duration = Duration::from_secs(1);

impl Worker<'_> {
    /// The sampler's options for a measured run: a board-side meter goes with them.
    pub(super) fn sampler_options(&self, timeout: Option<Duration>) -> SamplerOptions {
        let mut o = SamplerOptions::for_run(timeout);
        o.meter = self.board.meter.clone().filter(|m| m.source.on_board());
        o
    }

    /// Starts the board's controller-side meter, if it has one, and waits out its idle
    /// window; the run's readings begin when this returns. An interrupt ends the wait
    /// early (the caller checks the stop flag next).
    pub(super) fn start_plug(&self, max: Duration) -> Option<PlugMeter> {
        let meter = self.board.meter.as_ref()?;
        let MeterSource::Command { command, json } = &meter.source else {
            return None;
        };
        let mut vars = Vars::new();
        vars.set("board", self.board.name.as_str())
            .set("host", board_host(self.board));
        let command = match bench::render(command, &vars) {
            Ok(c) => c,
            Err(e) => {
                self.phase(None, format!("no power reading: the meter's command: {e}"));
                return None;
            }
        };
        let plug = PlugMeter::start(
            command,
            json.clone(),
            !meter.idle.is_zero(),
            PLUG_INTERVAL,
            max,
        );
        if !meter.idle.is_zero() {
            self.phase(None, format!("idle power {}s", meter.idle.as_secs()));
        }
        let _ = self.sleep(meter.idle);
        plug.load();
        Some(plug)
    }
}

/// Puts the run's power into its telemetry and metrics: the controller-side meter's
/// summary when there is one, else what the board's sampler read. A run without
/// telemetry but with a controller-side reading gets telemetry holding only that.
pub(super) fn attach(
    telemetry: &mut Option<Value>,
    metrics: &mut BTreeMap<String, f64>,
    plug: Option<PowerSummary>,
) {
    let mut summary: Option<TelemetrySummary> = telemetry
        .as_ref()
        .and_then(|t| serde_json::from_value(t.clone()).ok());
    if let Some(p) = plug {
        let s = summary.get_or_insert_with(TelemetrySummary::default);
        s.power = Some(p);
        *telemetry = serde_json::to_value(&*s).ok();
    }
    if let Some(p) = summary.as_ref().and_then(|s| s.power.as_ref()) {
        for (name, w) in p.metrics() {
            metrics.insert(name.to_string(), w);
        }
    }
}
