//! Statistics: pure, documented functions over `&[f64]`. No I/O.

use serde::Serialize;

/// Descriptive statistics of one metric's samples, with a confidence interval of the mean.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (divides by n-1); 0 when n = 1.
    pub sd: f64,
    /// sd / |mean|; NaN-free: 0 when the mean is 0.
    pub rel_sd: f64,
    /// Standard error of the mean: sd / sqrt(n).
    pub se: f64,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub confidence: f64,
    /// Half-width of the Student's t confidence interval; None when n < 2.
    pub ci_half: Option<f64>,
}

/// Summarises `xs` at the given confidence level; None for an empty slice.
pub fn summarize(xs: &[f64], confidence: f64) -> Option<Summary> {
    let _ = (xs, confidence);
    None
}

/// Whether the confidence interval half-width is within `target` (a fraction) of the mean.
pub fn precision_reached(xs: &[f64], confidence: f64, target: f64) -> bool {
    let _ = (xs, confidence, target);
    false
}
