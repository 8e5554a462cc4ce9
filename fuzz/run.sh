#!/usr/bin/env bash
# Runs the fuzz targets with cargo-fuzz (libFuzzer, nightly), one at a time, each for
# FUZZ_SECONDS (default 60): `fuzz/run.sh` for all of them, `fuzz/run.sh store bmap` for
# some. New inputs go to fuzz/work/<target>/ (ignored by git), the committed seeds in
# fuzz/corpus/<target>/ are only read; a crash is written to fuzz/artifacts/<target>/
# and ends the run with libFuzzer's report. Each target's last lines (executions, time)
# are kept in fuzz/work/<target>.log. docs/FUZZING.md says what to do with a crash.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-60}
if [ $# -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets < <(cargo +nightly fuzz list)
fi
cargo +nightly fuzz build
for t in "${targets[@]}"; do
  mkdir -p "fuzz/work/$t"
  echo "== $t: $seconds s"
  # -timeout: an input taking longer is a hang; -rss_limit_mb and -malloc_limit_mb
  # (libFuzzer's defaults, said here): an input allocating that much is a crash.
  corpora=("fuzz/work/$t" "fuzz/corpus/$t")
  if [ "$t" = report_template ]; then
    # The shipped templates seed it, each behind its selector byte (0 index.md, 1
    # index.html: report::TEMPLATE_NAMES), read from src/ rather than copied.
    seeds=fuzz/work/report_template-seeds
    mkdir -p "$seeds"
    printf '\000' | cat - src/report/templates/index.md > "$seeds/index.md"
    printf '\001' | cat - src/report/templates/index.html > "$seeds/index.html"
    corpora+=("$seeds")
  fi
  cargo +nightly fuzz run "$t" "${corpora[@]}" -- \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 \
    -print_final_stats=1 >"fuzz/work/$t.log" 2>&1 || {
    tail -n 40 "fuzz/work/$t.log"
    exit 1
  }
  grep -E '^(Done|stat::number_of_executed_units|stat::peak_rss_mb)' "fuzz/work/$t.log"
done
