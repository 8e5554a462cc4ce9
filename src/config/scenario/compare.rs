//! The report's `[[report.compare]]` (baseline and candidate patterns, the metric, the
//! pooling, noise band and percent convention) and `[report]`'s `noise_band` and `wide_ci`.

use toml::Spanned;

use super::Known;
use super::matrix::{Axes, pattern};
use crate::config::{Source, names, raw, units};
use crate::diag::Diagnostic;
use crate::model::Percent;
use crate::model::{Compare, FsName, ImageName, Matrix, Pool, Precision, TestName};

/// `[report] noise_band` and `wide_ci`, defaults where absent.
pub(super) fn precision(
    src: &Source,
    raw: Option<&raw::Report>,
    diags: &mut Vec<Diagnostic>,
) -> Precision {
    let mut p = Precision::default();
    let Some(r) = raw else {
        return p;
    };
    if let Some(v) = &r.noise_band
        && let Some(f) = percent(src, v, NOISE_BAND_HELP, diags)
    {
        p.noise_band = f;
    }
    if let Some(v) = &r.wide_ci
        && let Some(f) = percent(src, v, WIDE_CI_HELP, diags)
    {
        p.wide_ci = f;
    }
    p
}

const NOISE_BAND_HELP: &str =
    "the share of the baseline within which a difference is noise, like `2%`";
const WIDE_CI_HELP: &str = "the share of the mean beyond which a confidence interval's half-width is warned about, like `10%`";

fn percent(
    src: &Source,
    v: &Spanned<String>,
    help: &str,
    diags: &mut Vec<Diagnostic>,
) -> Option<f64> {
    units::parse_percent(v.get_ref())
        .map_err(|e| diags.push(src.at_value(v, e).with_help(help)))
        .ok()
}

/// The values each axis of a pattern may match: the scenario's.
pub(super) fn axes<'a>(matrix: &'a Matrix, selected_broken: bool, known: &'a Known) -> Axes<'a> {
    Axes {
        image: matrix.image.iter().map(ImageName::as_str).collect(),
        board: known.board_values(matrix),
        storage: known
            .storage_names(&matrix.board_patterns)
            .into_iter()
            .collect(),
        filesystem: matrix.filesystem.iter().map(FsName::as_str).collect(),
        network: matrix
            .board
            .iter()
            .filter_map(|b| known.boards.get(b))
            .flat_map(|b| b.network.iter().map(|n| n.name.as_str()))
            .collect(),
        test: matrix.test.iter().map(TestName::as_str).collect(),
        skip_storage: selected_broken,
    }
}

pub(super) fn compare(
    src: &Source,
    raw: &[Spanned<raw::Compare>],
    matrix: &Matrix,
    selected_broken: bool,
    known: &Known,
    diags: &mut Vec<Diagnostic>,
) -> Vec<Compare> {
    let axes = axes(matrix, selected_broken, known);
    let mut out = Vec::new();
    for c in raw {
        let c = c.get_ref();
        let baseline = pattern(src, &c.baseline, &axes, "baseline", diags);
        let candidate = c
            .candidate
            .as_ref()
            .map(|p| pattern(src, p, &axes, "candidate", diags))
            .unwrap_or_default();
        let Some((test, metric)) = compare_metric(src, &c.metric, matrix, known, diags) else {
            continue;
        };
        // A raw-device test's numbers are the device's: any difference between
        // filesystems would be noise, so none is drawn.
        let names_filesystem = baseline.filesystem.is_some() || candidate.filesystem.is_some();
        if names_filesystem && known.recipes.get(&test).is_some_and(|r| r.raw_device) {
            diags.push(
                src.at_value(
                    &c.metric,
                    format!("test `{test}` reads the raw device (`uses_storage = \"device\"`): its cells have no filesystem, so there is no filesystem comparison to draw"),
                )
                .with_help("compare it across storages or boards, or compare a test that writes files"),
            );
            continue;
        }
        let pool = match &c.pool {
            None => None,
            Some(p) if p.get_ref() == "model" => Some(Pool::Model),
            Some(p) => {
                diags.push(
                    src.at_value(
                        p,
                        format!(
                            "unknown pool `{}`; expected `model`",
                            p.get_ref().chars().take(40).collect::<String>()
                        ),
                    )
                    .with_help("`pool = \"model\"` adds one verdict per board model beside the per-board rows"),
                );
                continue;
            }
        };
        let noise_band = match &c.noise_band {
            None => None,
            Some(v) => match percent(src, v, NOISE_BAND_HELP, diags) {
                Some(f) => Some(f),
                None => continue,
            },
        };
        let percent = match &c.percent {
            None => Percent::default(),
            Some(p) => {
                if let Some(p) = Percent::parse(p.get_ref()) {
                    p
                } else {
                    diags.push(
                    src.at_value(
                        p,
                        format!(
                            "unknown percent `{}`; expected {}",
                            crate::shown::shown(&p.get_ref().chars().take(40).collect::<String>()),
                            Percent::NAMES.map(|n| format!("`{n}`")).join(" or ")
                        ),
                    )
                    .with_help("`of-baseline` (the default): (candidate - baseline) / baseline; `of-mean`: (candidate - baseline) / the mean of both, as the first seed's UASP table writes \"53% faster\""),
                );
                    continue;
                }
            }
        };
        out.push(Compare {
            test,
            metric,
            baseline,
            candidate,
            pool,
            noise_band,
            percent,
        });
    }
    out
}

/// Resolves `test.metric`; the test is the longest matrix test name that prefixes it,
/// since test names may themselves contain dots.
pub(super) fn compare_metric(
    src: &Source,
    value: &Spanned<String>,
    matrix: &Matrix,
    known: &Known,
    diags: &mut Vec<Diagnostic>,
) -> Option<(TestName, String)> {
    let text = value.get_ref();
    // The matrix's tests, and those only an `include` brings in (seed 1's iperf).
    let included: Vec<TestName> = matrix
        .include
        .iter()
        .filter_map(|p| p.test.as_deref())
        .map(TestName::from)
        .filter(|t| !matrix.test.contains(t) && known.recipes.contains_key(t))
        .collect();
    let test = matrix
        .test
        .iter()
        .chain(&included)
        .filter(|t| {
            text.strip_prefix(t.as_str())
                .is_some_and(|rest| rest.starts_with('.'))
        })
        .max_by_key(|t| t.as_str().len());
    let Some(test) = test else {
        let tests: Vec<&str> = matrix
            .test
            .iter()
            .chain(&included)
            .map(TestName::as_str)
            .collect();
        let head = text.split('.').next().unwrap_or(text);
        let help = names::help_for(head, tests.iter().copied(), "tests in the matrix");
        if !known.broken_recipes.contains(head) {
            diags.push(
                src.at_value(
                    value,
                    format!(
                        "compare metric `{text}`: expected `test.metric` with a test of matrix.test (or of an `include`)"
                    ),
                )
                .with_help(help),
            );
        }
        return None;
    };
    let metric = &text[test.as_str().len() + 1..];
    let recipe = known.recipes.get(test)?;
    if recipe.metric(metric).is_some() {
        Some((test.clone(), metric.to_string()))
    } else {
        let help = names::help_for(
            metric,
            recipe.metrics.iter().map(|m| m.name.as_str()),
            "metrics",
        );
        diags.push(
            src.at_value(value, format!("test `{test}` has no metric `{metric}`"))
                .with_help(format!(
                    "{help} (see [metrics] in {})",
                    recipe.file.display()
                )),
        );
        None
    }
}
