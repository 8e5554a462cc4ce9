//! Figure: runs spent and precision reached by the adaptive run count (min 3, max 20,
//! ±2% target at 95%) against the seed scripts' fixed method (4 runs, first discarded),
//! on synthetic metrics from steady to noisy. Prints a table; asserts nothing.
//!
//! `cargo bench --bench adaptive`

use benchpipe::stats::{RunDecision, RunRule, precision_reached};

const TRIALS: usize = 4000;
const TARGET: f64 = 0.02;
const CONFIDENCE: f64 = 0.95;
const TRUE_MEAN: f64 = 100.0;

/// xorshift64* with Box–Muller: deterministic across platforms, no crate needed.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in (0, 1]: never 0, so ln() below is finite.
    fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    fn normal(&mut self) -> f64 {
        let (u1, u2) = (self.uniform(), self.uniform());
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

/// A synthetic metric: normal noise around TRUE_MEAN, optionally with a slow first run
/// (cold cache) and rare spikes (a background job).
struct Metric {
    name: &'static str,
    rel_sd: f64,
    /// Extra slowness of the very first run, as a fraction.
    cold_first: f64,
    /// Probability and size of a spike on any run.
    spike: (f64, f64),
}

impl Metric {
    fn sample(&self, rng: &mut Rng, run: usize) -> f64 {
        let mut x = TRUE_MEAN * (1.0 + self.rel_sd * rng.normal());
        if run == 0 {
            x *= 1.0 + self.cold_first;
        }
        if rng.uniform() < self.spike.0 {
            x *= 1.0 + self.spike.1;
        }
        x
    }
}

#[derive(Default)]
struct Tally {
    runs: usize,
    met_target: usize,
    within_2pct_of_truth: usize,
}

impl Tally {
    fn record(&mut self, runs: usize, measured: &[f64]) {
        self.runs += runs;
        if precision_reached(measured, CONFIDENCE, TARGET) {
            self.met_target += 1;
        }
        let mean = measured.iter().sum::<f64>() / measured.len() as f64;
        if (mean / TRUE_MEAN - 1.0).abs() <= TARGET {
            self.within_2pct_of_truth += 1;
        }
    }

    fn row(&self) -> (f64, f64, f64) {
        let t = TRIALS as f64;
        (
            self.runs as f64 / t,
            100.0 * self.met_target as f64 / t,
            100.0 * self.within_2pct_of_truth as f64 / t,
        )
    }
}

fn main() {
    let metrics = [
        Metric {
            name: "steady 0.2%",
            rel_sd: 0.002,
            cold_first: 0.0,
            spike: (0.0, 0.0),
        },
        Metric {
            name: "steady 0.5%",
            rel_sd: 0.005,
            cold_first: 0.0,
            spike: (0.0, 0.0),
        },
        Metric {
            name: "normal 1%",
            rel_sd: 0.01,
            cold_first: 0.0,
            spike: (0.0, 0.0),
        },
        Metric {
            name: "noisy 2%",
            rel_sd: 0.02,
            cold_first: 0.0,
            spike: (0.0, 0.0),
        },
        Metric {
            name: "noisy 3%",
            rel_sd: 0.03,
            cold_first: 0.0,
            spike: (0.0, 0.0),
        },
        Metric {
            name: "noisy 5%",
            rel_sd: 0.05,
            cold_first: 0.0,
            spike: (0.0, 0.0),
        },
        Metric {
            name: "wifi 10%",
            rel_sd: 0.10,
            cold_first: 0.0,
            spike: (0.0, 0.0),
        },
        Metric {
            name: "1% + cold 1st +15%",
            rel_sd: 0.01,
            cold_first: 0.15,
            spike: (0.0, 0.0),
        },
        Metric {
            name: "1% + 10% spikes +20%",
            rel_sd: 0.01,
            cold_first: 0.0,
            spike: (0.1, 0.2),
        },
    ];
    // benchpipe's default method has one warm-up run before the adaptive ones.
    let rule = RunRule {
        min: 3,
        max: 20,
        target: Some(TARGET),
        confidence: CONFIDENCE,
    };
    let warmup = 1;

    println!(
        "Adaptive (1 warm-up + min 3, max 20 runs, stop at ±{}% CI at {}%) vs fixed (4 runs, first discarded).",
        TARGET * 100.0,
        CONFIDENCE * 100.0
    );
    println!(
        "{TRIALS} trials per metric. 'target' = CI half-width ≤ {}% of the mean; 'truth' = mean within {}% of the true mean.\n",
        TARGET * 100.0,
        TARGET * 100.0
    );
    println!(
        "{:<22} {:>10} {:>8} {:>7}   {:>10} {:>8} {:>7}",
        "metric", "adaptive", "target", "truth", "fixed", "target", "truth"
    );
    println!(
        "{:<22} {:>10} {:>8} {:>7}   {:>10} {:>8} {:>7}",
        "", "runs", "%", "%", "runs", "%", "%"
    );
    for (i, metric) in metrics.iter().enumerate() {
        let mut rng =
            Rng(0x9E37_79B9_7F4A_7C15 ^ (i as u64 + 1).wrapping_mul(0xBF58_476D_1CE4_E5B9));
        let (mut adaptive, mut fixed) = (Tally::default(), Tally::default());
        for _ in 0..TRIALS {
            // Adaptive: the warm-up run takes the cold first run; then run until told.
            let mut run = 0;
            for _ in 0..warmup {
                metric.sample(&mut rng, run);
                run += 1;
            }
            let mut measured = Vec::new();
            while rule.decide(&measured) == RunDecision::Continue {
                measured.push(metric.sample(&mut rng, run));
                run += 1;
            }
            adaptive.record(run, &measured);

            // Fixed: four runs, the first discarded.
            let runs: Vec<f64> = (0..4).map(|r| metric.sample(&mut rng, r)).collect();
            fixed.record(4, &runs[1..]);
        }
        let (ar, at, atr) = adaptive.row();
        let (fr, ft, ftr) = fixed.row();
        println!(
            "{:<22} {:>10.2} {:>8.1} {:>7.1}   {:>10.2} {:>8.1} {:>7.1}",
            metric.name, ar, at, atr, fr, ft, ftr
        );
    }
}
