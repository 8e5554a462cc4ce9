#!/usr/bin/env python3
"""Writes reference.json beside this file: datasets and the statistics numpy, scipy and
statsmodels compute for them. tests/it/stats.rs reads the result; nothing runs this
script during the tests. See README.md for the versions and how to run it.

Each statistic is computed here independently of benchpipe's Rust code: quantiles by
numpy, t-tests and t quantiles by scipy, the quadratic's roots by numpy.roots (an
eigenvalue method, where the Rust code uses closed formulas), power by statsmodels.
"""
import json
import platform
import sys
from pathlib import Path

import numpy as np
import scipy
import scipy.stats as st
import statsmodels
from statsmodels.stats.power import TTestIndPower

OUT = Path(__file__).resolve().parent / "reference.json"
rng = np.random.default_rng(20261129)

ds = {
    "n2": [10.0, 12.0],
    "n2_b": [11.0, 13.5],
    "n3": [1.02, 0.98, 1.05],
    "n3_b": [1.10, 1.07, 1.12],
    "all_equal": [5.0] * 6,
    "all_equal_b": [7.0] * 4,
    "xz_real_a": [9.19, 9.21, 9.15, 9.30, 9.18],
    "xz_real_b": [9.02, 9.05, 8.99, 9.10, 9.01],
    "fio_bw_a": [152519698.0, 151002311.0, 153880020.0, 149877003.0],
    "fio_bw_b": [98112374.0, 97001233.0, 99823110.0, 96522002.0, 98110000.0],
    "wide": [100.0, 140.0, 80.0, 120.0, 60.0, 110.0, 95.0],
    "tight": [100.1, 100.2, 99.9, 100.0, 100.05, 99.95],
    "negative": [-3.2, -2.9, -3.5, -3.1],
    "negative_b": [-2.1, -2.3, -1.9, -2.2, -2.0],
    "tiny": [1.2e-6, 1.25e-6, 1.18e-6, 1.22e-6, 1.21e-6],
    "huge": [4.1e12, 4.3e12, 4.2e12, 4.25e12],
    "with_outlier": [10.1, 10.2, 10.0, 10.3, 10.2, 14.9, 10.1],
    # A mean near zero (a difference in seconds): no ratio to it is bounded.
    "near_zero": [0.012, -0.021, 0.015, -0.004, 0.002],
    # The lab throughputs: intervals wider than the means.
    "lab_ext4": [250.0, 40.0, 120.0],
    "lab_btrfs": [20.0, 200.0, 62.0],
    # The seed's UASP disk table, three runs each around its means.
    "uasp_off": [14.2, 14.5, 14.53],
    "uasp_on": [20.4, 20.7, 20.67],
    "large_n": [round(float(x), 6) for x in rng.normal(50.0, 2.0, 500)],
    "large_n_b": [round(float(x), 6) for x in rng.normal(50.3, 6.0, 300)],
    "separated": [round(float(x), 6) for x in rng.normal(10.0, 0.1, 200)],
    "separated_b": [round(float(x), 6) for x in rng.normal(10.5, 0.1, 200)],
}
confs = [0.9, 0.95, 0.99]
NOISE_BAND = 0.02
POWER = 0.8
MAX_RUNS = 1000


def summary(xs):
    a = np.array(xs)
    n = len(a)
    m = float(np.mean(a))
    sd = float(np.std(a, ddof=1))
    sem = float(st.sem(a))
    cis = {}
    for c in confs:
        if sem == 0.0:
            cis[str(c)] = [m, m]  # scipy returns nan for scale=0; degenerate interval
        else:
            lo, hi = st.t.interval(c, n - 1, loc=m, scale=sem)
            cis[str(c)] = [float(lo), float(hi)]
    return {
        "values": xs, "n": n, "mean": m, "sd": sd,
        "median": float(np.median(a)), "min": float(a.min()), "max": float(a.max()),
        "q1": float(np.percentile(a, 25)), "q3": float(np.percentile(a, 75)),
        "mad": float(st.median_abs_deviation(a, scale=1.0)),
        "ci": cis,
    }


def moments(strata):
    """Equally weighted mean of strata means, the variance of it, and Welch sums."""
    k = len(strata)
    mean = sum(float(np.mean(s)) for s in strata) / k
    var = sum(float(np.var(s, ddof=1)) / (len(s) * k * k) for s in strata)
    var_sq_df = sum((float(np.var(s, ddof=1)) / (len(s) * k * k)) ** 2 / (len(s) - 1)
                    for s in strata)
    per_run = sum(float(np.var(s, ddof=1)) / (k * k) for s in strata)
    per_run_sq = sum((float(np.var(s, ddof=1)) / (k * k)) ** 2 for s in strata)
    runs = sum(len(s) for s in strata)
    longest = max(len(s) for s in strata)
    positive = all(x > 0 for s in strata for x in s)
    return dict(mean=mean, var=var, var_sq_df=var_sq_df, per_run=per_run,
                per_run_sq=per_run_sq, runs=runs, k=k, longest=longest, positive=positive)


def welch_df(b, c):
    se2 = b["var"] + c["var"]
    if se2 == 0.0 or b["var_sq_df"] + c["var_sq_df"] == 0.0:
        return float(b["runs"] + c["runs"] - b["k"] - c["k"])
    return se2 * se2 / (b["var_sq_df"] + c["var_sq_df"])


def fieller(b, c, t):
    """Fieller's set for mu_c / mu_b by numpy.roots, cut at 0 for positive data."""
    mb, mc, vb, vc = b["mean"], c["mean"], b["var"], c["var"]
    A = mb * mb - t * t * vb
    B = mb * mc
    C = mc * mc - t * t * vc
    D = t * t * (mb * mb * vc + mc * mc * vb - t * t * vb * vc)
    if A > 0:
        r = sorted(float(x.real) for x in np.roots([A, -2 * B, C]))
        s = {"kind": "interval", "low": r[0], "high": r[-1]}
    elif A < 0:
        if D <= 0:
            s = {"kind": "interval", "low": None, "high": None}
        else:
            r = sorted(float(x.real) for x in np.roots([A, -2 * B, C]))
            s = {"kind": "outside", "below": r[0], "above": r[1]}
    else:
        raise ValueError("A = 0 exactly: not in the reference")
    if b["positive"] and c["positive"]:
        if s["kind"] == "interval":
            s["low"] = 0.0 if s["low"] is None else max(s["low"], 0.0)
        elif s["below"] < 0:
            s = {"kind": "interval", "low": max(s["above"], 0.0), "high": None}
    return s


def t_at(p, df):
    return float(st.t.ppf(p, df))


def runs_to_detect(per_run, per_run_sq, effect, conf, start):
    """The documented shifted-t rule, by a plain scan (the Rust code bisects)."""
    start = min(max(start, 2), MAX_RUNS)
    effect = abs(effect)
    if per_run == 0.0:
        return {"runs": start, "more_than": False} if effect > 0 else {"runs": MAX_RUNS, "more_than": True}
    if effect == 0.0:
        return {"runs": MAX_RUNS, "more_than": True}
    df_per_run = per_run * per_run / per_run_sq
    for m in range(start, MAX_RUNS + 1):
        df = (m - 1) * df_per_run
        if (t_at((1 + conf) / 2, df) + t_at(POWER, df)) * (per_run / m) ** 0.5 <= effect:
            return {"runs": m, "more_than": False}
    return {"runs": MAX_RUNS, "more_than": True}


def runs_for_precision(sd, mean, conf, target, start):
    start = min(max(start, 2), MAX_RUNS)
    if sd == 0.0:
        return {"runs": start, "more_than": False}
    if mean == 0.0:
        return {"runs": MAX_RUNS, "more_than": True}
    for m in range(start, MAX_RUNS + 1):
        if t_at((1 + conf) / 2, m - 1) * sd / m ** 0.5 <= target * abs(mean):
            return {"runs": m, "more_than": False}
    return {"runs": MAX_RUNS, "more_than": True}


def comparison(base_strata, cand_strata):
    b, c = moments(base_strata), moments(cand_strata)
    df = welch_df(b, c)
    se2 = b["var"] + c["var"]
    diff = c["mean"] - b["mean"]
    if se2 == 0.0:
        t_stat, p = (0.0, 1.0) if diff == 0.0 else (None, 0.0)
    else:
        t_stat = diff / se2 ** 0.5
        p = float(min(2 * st.t.sf(abs(t_stat), df), 1.0))
    out = {"t": t_stat, "df": df, "p": p, "ratio": c["mean"] / b["mean"],
           "diff_pct": diff / abs(b["mean"]) * 100.0,
           "positive": b["positive"] and c["positive"], "ratio_ci": {}, "runs_needed": {}}
    for conf in confs:
        tq = t_at((1 + conf) / 2, df)
        s = fieller(b, c, tq)
        out["ratio_ci"][str(conf)] = s
        # The verdict and, when inconclusive, the runs that would decide it.
        sign = 1.0 if b["mean"] > 0 else -1.0
        pct = lambda r: None if r is None else (r - 1.0) * sign * 100.0
        if s["kind"] == "interval":
            lo, hi = pct(s["low"]), pct(s["high"])
            if sign < 0:
                lo, hi = hi, lo
        else:
            lo = hi = None
        beyond = abs(out["diff_pct"]) > NOISE_BAND * 100
        significant = p < 1 - conf and beyond
        inside = lo is not None and hi is not None and lo >= -NOISE_BAND * 100 and hi <= NOISE_BAND * 100
        if significant:
            verdict = "significant"
        elif inside:
            verdict = "equivalent"
        else:
            verdict = "inconclusive"
        need = None
        if verdict == "inconclusive":
            band = NOISE_BAND * abs(b["mean"])
            gap = abs(diff)
            effect = gap if beyond else band - gap
            need = runs_to_detect(b["per_run"] + c["per_run"], b["per_run_sq"] + c["per_run_sq"],
                                  effect, conf, max(b["longest"], c["longest"]) + 1)
        out["runs_needed"][str(conf)] = {"verdict": verdict, "runs_needed": need}
    return out


out_ds = [dict(name=name, **summary(xs)) for name, xs in ds.items()]

pairs = [("n2", "n2_b"), ("n3", "n3_b"), ("xz_real_a", "xz_real_b"), ("fio_bw_a", "fio_bw_b"),
         ("tight", "wide"), ("wide", "tight"), ("large_n", "large_n_b"), ("separated", "separated_b"),
         ("all_equal", "xz_real_a"), ("with_outlier", "tight"), ("negative", "n3"),
         ("negative", "negative_b"), ("all_equal", "all_equal_b"), ("all_equal", "all_equal"),
         ("near_zero", "n3"), ("n3", "near_zero"), ("lab_ext4", "lab_btrfs"),
         ("uasp_off", "uasp_on"), ("tiny", "tiny"), ("huge", "fio_bw_a")]
out_pairs = []
for b, c in pairs:
    A = np.array(ds[c])
    B = np.array(ds[b])
    entry = {"baseline": b, "candidate": c}
    if np.var(A) > 0 or np.var(B) > 0:
        r = st.ttest_ind(A, B, equal_var=False)
        entry.update({"scipy_t": float(r.statistic), "scipy_df": float(r.df),
                      "scipy_p": float(r.pvalue), "diff_ci": {}})
        for conf in confs:
            ci = r.confidence_interval(confidence_level=conf)
            entry["diff_ci"][str(conf)] = [float(ci.low), float(ci.high)]
    entry.update(comparison([ds[b]], [ds[c]]))
    out_pairs.append(entry)

# Boards of one model pooled: each board a stratum, equally weighted.
strata = {
    "three_boards": (
        [[180.0, 175.0, 190.0], [90.0, 200.0, 120.0], [170.0, 172.0, 171.0, 169.0]],
        [[150.0, 160.0, 140.0], [100.0, 95.0, 130.0], [168.0, 169.0, 175.0]],
    ),
    "one_board": ([ds["xz_real_a"]], [ds["xz_real_b"]]),
    "two_boards_uasp": ([ds["uasp_off"], [14.0, 14.9, 14.33]], [ds["uasp_on"], [20.1, 20.9, 20.5]]),
}
out_strata = []
for name, (b, c) in strata.items():
    out_strata.append({"name": name, "baseline": b, "candidate": c, **comparison(b, c)})

# Runs to decide a difference, against statsmodels' noncentral-t power for equal
# variances (the Rust rule is the shifted central-t approximation).
power_cases = []
for sd, effect, conf in [(1.0, 0.5, 0.95), (1.0, 1.0, 0.95), (2.0, 1.0, 0.95), (1.0, 0.8, 0.9),
                         (1.0, 0.3, 0.99), (5.0, 2.0, 0.95), (0.1, 1.0, 0.95), (1.0, 0.05, 0.95)]:
    per_run = 2 * sd * sd
    rule = runs_to_detect(per_run, 2 * sd ** 4, effect, conf, 2)
    sm = TTestIndPower().solve_power(effect_size=effect / sd, alpha=1 - conf, power=POWER,
                                     ratio=1.0, alternative="two-sided")
    power_cases.append({"sd": sd, "effect": effect, "confidence": conf,
                        "var_per_run": per_run, "var_per_run_sq": 2 * sd ** 4,
                        "rule": rule, "statsmodels_n": float(sm) if np.isfinite(sm) else None})
precision_cases = []
for name in ["lab_ext4", "wide", "n3", "xz_real_a", "tight", "large_n_b", "near_zero"]:
    a = np.array(ds[name])
    for target in [0.02, 0.1]:
        precision_cases.append({
            "dataset": name, "target": target, "confidence": 0.95,
            "sd": float(np.std(a, ddof=1)), "mean": float(np.mean(a)),
            "runs": runs_for_precision(float(np.std(a, ddof=1)), float(np.mean(a)), 0.95, target, len(a) + 1),
        })

note = (
    f"Computed outside the project by generate.py with Python {platform.python_version()}, numpy {np.__version__}, "
    f"scipy {scipy.__version__}, statsmodels {statsmodels.__version__}. "
    "Per dataset: mean = numpy.mean; sd = numpy.std(ddof=1); median = numpy.median; q1/q3 = numpy.percentile(x, 25/75) (linear); "
    "mad = scipy.stats.median_abs_deviation(x, scale=1.0); ci[c] = scipy.stats.t.interval(c, n-1, loc=mean, scale=scipy.stats.sem(x)), "
    "except for zero-variance data where scipy returns NaN and the recorded interval is [mean, mean]. "
    "Per pair: scipy_t/df/p = scipy.stats.ttest_ind(candidate, baseline, equal_var=False) (absent where both variances are 0); "
    "diff_ci[c] = its confidence_interval(c). t/df/p are Welch's from the moments (df = runs - 2 when no variance); "
    "ratio_ci[c] is Fieller's set for mean(candidate)/mean(baseline) at t = scipy.stats.t.ppf((1+c)/2, df), its bounds by numpy.roots, "
    "cut at 0 when every value is positive; runs_needed[c] is the verdict at a 2% noise band and, when inconclusive, "
    "the runs per side by the shifted-t rule (80% power). Strata: the same on equally weighted board means with within-board variances. "
    "Power: the rule and statsmodels TTestIndPower.solve_power for equal variances. Precision: runs for the CI half-width to reach "
    "the target share of the mean. large_n, large_n_b, separated, separated_b were drawn with numpy.random.default_rng(20261129).normal "
    "and rounded to 6 decimals; the recorded values are the data. See README.md in this directory."
)
doc = {"note": note, "confidences": confs, "noise_band": NOISE_BAND, "power": POWER,
       "max_runs": MAX_RUNS, "datasets": out_ds, "pairs": out_pairs, "strata": out_strata,
       "power_cases": power_cases, "precision_cases": precision_cases}
OUT.write_text(json.dumps(doc, indent=1) + "\n")
for p in out_pairs:
    print(p["baseline"], p["candidate"], p["p"], p["ratio_ci"]["0.95"], p["runs_needed"]["0.95"], file=sys.stderr)
for c in power_cases:
    print(c["sd"], c["effect"], c["confidence"], c["rule"], c["statsmodels_n"], file=sys.stderr)
