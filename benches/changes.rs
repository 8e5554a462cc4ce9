//! Figure: benchpipe's change points (`stats::change_points`, default rule, no minimum
//! magnitude) against Apache Otava's (0.8.0, its defaults) on the same series from
//! otava-test-data's generators, with their ground truth: precision, recall and F1 per
//! pattern family, side by side. Prints a table; asserts nothing.
//!
//! `cargo bench --bench changes` (the series: `benches/otava/series.json`, made by
//! `benches/otava/generate.py`; another file: `CHANGES_SERIES=path`).

use benchpipe::stats::{ChangeRule, change_points};
use serde::Deserialize;

/// A detected change within this many runs of a true one finds it.
const TOLERANCE: usize = 1;

#[derive(Deserialize)]
struct File {
    generator: String,
    detector: String,
    families: Vec<Family>,
}

#[derive(Deserialize)]
struct Family {
    name: String,
    what: String,
    series: Vec<Series>,
}

#[derive(Deserialize)]
struct Series {
    data: Vec<f64>,
    truth: Vec<usize>,
    otava: Vec<usize>,
}

/// True positives, detections, truths.
#[derive(Default, Clone, Copy)]
struct Score {
    hits: usize,
    found: usize,
    truths: usize,
    /// Series with a detection where the truth has none.
    false_series: usize,
}

impl Score {
    fn add(&mut self, truth: &[usize], found: &[usize]) {
        let mut used = vec![false; found.len()];
        for t in truth {
            if let Some(i) =
                (0..found.len()).find(|&i| !used[i] && found[i].abs_diff(*t) <= TOLERANCE)
            {
                used[i] = true;
                self.hits += 1;
            }
        }
        self.found += found.len();
        self.truths += truth.len();
        self.false_series += usize::from(truth.is_empty() && !found.is_empty());
    }

    fn precision(self) -> Option<f64> {
        (self.found > 0).then(|| self.hits as f64 / self.found as f64)
    }

    fn recall(self) -> Option<f64> {
        (self.truths > 0).then(|| self.hits as f64 / self.truths as f64)
    }

    fn f1(self) -> Option<f64> {
        let (p, r) = (self.precision()?, self.recall()?);
        (p + r > 0.0).then(|| 2.0 * p * r / (p + r))
    }
}

fn cell(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_string(), |v| format!("{v:.2}"))
}

fn main() {
    let path = std::env::var("CHANGES_SERIES").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/benches/otava/series.json").to_string()
    });
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let file: File = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    let rule = ChangeRule::default();
    println!(
        "Change points on {} series ({}), a detection within {TOLERANCE} run of a true change counts",
        file.generator, file.detector
    );
    println!(
        "benchpipe: stats::change_points, max p {}, min magnitude 0, {} permutations\n",
        rule.max_pvalue, rule.permutations
    );
    println!(
        "| family | series | changes | Otava P | R | F1 | found | benchpipe P | R | F1 | found | ms |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut totals = (Score::default(), Score::default());
    for f in &file.families {
        let (mut otava, mut ours) = (Score::default(), Score::default());
        let start = std::time::Instant::now();
        for s in &f.series {
            let found: Vec<usize> = change_points(&s.data, &rule)
                .iter()
                .map(|c| c.index)
                .collect();
            ours.add(&s.truth, &found);
            otava.add(&s.truth, &s.otava);
        }
        let ms = start.elapsed().as_secs_f64() * 1000.0;
        for (t, s) in [(&mut totals.0, otava), (&mut totals.1, ours)] {
            t.hits += s.hits;
            t.found += s.found;
            t.truths += s.truths;
            t.false_series += s.false_series;
        }
        let found = |s: Score| {
            if s.truths == 0 {
                format!("{} ({} series)", s.found, s.false_series)
            } else {
                s.found.to_string()
            }
        };
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {ms:.0} |",
            f.name,
            f.series.len(),
            otava.truths,
            cell(otava.precision()),
            cell(otava.recall()),
            cell(otava.f1()),
            found(otava),
            cell(ours.precision()),
            cell(ours.recall()),
            cell(ours.f1()),
            found(ours),
        );
    }
    let (o, b) = totals;
    println!(
        "| all | | {} | {} | {} | {} | {} | {} | {} | {} | {} | |",
        o.truths,
        cell(o.precision()),
        cell(o.recall()),
        cell(o.f1()),
        o.found,
        cell(b.precision()),
        cell(b.recall()),
        cell(b.f1()),
        b.found
    );
    println!("\nfamilies:");
    for f in &file.families {
        println!("  {}: {}", f.name, f.what);
    }
}
