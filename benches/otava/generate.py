#!/usr/bin/env python3
"""benches/otava/series.json: series with known change points from otava-test-data's
generators (ground truth), and Apache Otava's change points on each, for the `changes`
bench (`cargo bench --bench changes`), which runs benchpipe's detector on the same
series and prints precision, recall and F1 side by side.

Needs a venv with apache-otava 0.8.0 and otava-test-data 0.1.9 (PyPI):

    python3 -m venv /tmp/otava && /tmp/otava/bin/pip install apache-otava==0.8.0 otava-test-data==0.1.9
    /tmp/otava/bin/python benches/otava/generate.py > benches/otava/series.json

Deterministic: every generator is given its seed. Otava runs with its defaults
(`compute_change_points(series, window_len=50, max_pvalue=0.001, min_magnitude=0.0)`).
"""

import json
import sys

import otava_test_data as g
from otava.analysis import compute_change_points

SEEDS = range(20)


def families():
    """(name, what, generator of one series from a seed)."""
    yield ("noise", "30 runs of N(100, 5): no change", lambda s: g.noise_normal(30, 100.0, 5.0, seed=s))
    yield ("step", "30 runs, +20% at run 15, sigma 5%", lambda s: g.step_function(30, 100.0, 120.0, 15, sigma=5.0, seed=s))
    yield ("step-small", "30 runs, +10% at run 15, sigma 3%", lambda s: g.step_function(30, 100.0, 110.0, 15, sigma=3.0, seed=s))
    yield ("step-short", "10 runs, +25% at run 5, sigma 3%", lambda s: g.step_function(10, 100.0, 125.0, 5, sigma=3.0, seed=s))
    yield ("regression-fix", "30 runs, +25% for runs 12-16, then fixed, sigma 3%",
           lambda s: g.regression_fix(30, 100.0, 125.0, 100.0, 12, 5, sigma=3.0, seed=s))
    yield ("regression-fix-noisy", "30 runs, +25% for runs 12-16, then fixed, sigma 6%",
           lambda s: g.regression_fix(30, 100.0, 125.0, 100.0, 12, 5, sigma=6.0, seed=s))
    yield ("multiple", "60 runs, 100 -> 115 -> 105 -> 125 at 15, 30, 45, sigma 3%",
           lambda s: g.multiple_changes(60, [100.0, 115.0, 105.0, 125.0], [15, 30, 45], sigma=3.0, seed=s))
    yield ("variance", "30 runs, sigma 2 -> 10 at run 15, same mean",
           lambda s: g.variance_change(30, 100.0, 2.0, 10.0, 15, seed=s))
    yield ("outlier", "30 runs, sigma 3%, one value at +50% (run 10)",
           lambda s: g.outlier(30, 100.0, 150.0, 10, sigma=3.0, seed=s))


def main():
    out = {"generator": "otava-test-data 0.1.9", "detector": "apache-otava 0.8.0 compute_change_points defaults", "families": []}
    for name, what, make in families():
        series = []
        for seed in SEEDS:
            ts = make(seed)
            data = [round(float(x), 4) for x in ts.data]
            cps, _ = compute_change_points(data, window_len=50, max_pvalue=0.001, min_magnitude=0.0)
            series.append({
                "seed": seed,
                "data": data,
                "truth": sorted(int(i) for i in ts.get_change_point_indices()),
                "otava": sorted(int(c.index) for c in cps),
            })
        out["families"].append({"name": name, "what": what, "series": series})
    json.dump(out, sys.stdout, indent=None, separators=(",", ":"))
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
