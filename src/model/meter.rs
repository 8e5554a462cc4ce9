//! A board's power meter (`[meter]` in its board file): where its watts come from, and
//! how long the idle reading before each measured run lasts.

use std::time::Duration;

use serde::Serialize;

/// The idle window when the board file names none.
pub const DEFAULT_METER_IDLE: Duration = Duration::from_secs(5);

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Meter {
    pub source: MeterSource,
    /// Read before each measured run, the board otherwise idle; zero reads no idle.
    #[serde(with = "super::secs")]
    pub idle: Duration,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum MeterSource {
    /// A file on the board holding one integer (hwmon `power1_input` in µW, a
    /// power-supply `power_now`); watts = value × `scale`.
    File { path: String, scale: f64 },
    /// A current file and a voltage file on the board (hwmon `curr1_input` in mA and
    /// `in1_input` in mV, an INA219's); watts = current × voltage × `scale`.
    Pair {
        current: String,
        voltage: String,
        scale: f64,
    },
    /// A Raspberry Pi 5's PMIC through `vcgencmd pmic_read_adc`: the sum of its rails.
    Pmic,
    /// A command template run on the controller that prints watts, or JSON holding
    /// them at `json` (a smart plug's HTTP API through curl, a USB meter's tool).
    Command {
        command: String,
        json: Option<String>,
    },
}

impl MeterSource {
    /// Whether the board's sampler reads it (else a controller thread runs it).
    pub fn on_board(&self) -> bool {
        !matches!(self, MeterSource::Command { .. })
    }

    /// A short name for the store and reports.
    pub fn label(&self) -> String {
        match self {
            MeterSource::File { path, .. } => format!("file {path}"),
            MeterSource::Pair {
                current, voltage, ..
            } => format!("files {current} × {voltage}"),
            MeterSource::Pmic => "vcgencmd pmic_read_adc".into(),
            MeterSource::Command { .. } => "controller command".into(),
        }
    }
}
