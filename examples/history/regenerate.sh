#!/usr/bin/env bash
# Regenerates the History example's store from eight real applies on this machine (a
# local board), from the repository root:
#
#   examples/history/regenerate.sh
#
# The stand-in test `nightly-step` prints the values this script writes before each
# apply: three measured runs around 1.000 s (a per-apply jitter of at most 1%), and from
# the sixth apply on around 1.250 s, when the board's file names a new revision (a new
# cell at the same address: its series goes on, and the changed model is a fact that
# moved). Each apply after the first redoes the cell (`--redo`), so each is a run of its
# own. Then the reports are rendered (render.sh) and examples/history/boards/,
# results/ and reports/ replaced, only when everything succeeded and nothing of this
# machine's paths or name is in them. BENCHPIPE names a prebuilt binary. Takes a
# minute; needs no root.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

if [ -n "${BENCHPIPE:-}" ]; then
  bp=$BENCHPIPE
else
  cargo build --release --locked --manifest-path "$repo/Cargo.toml"
  bp=$repo/target/release/benchpipe
fi

# A fixed path (the recipe's command and the board's workdir name it, so the cells'
# keys are the same wherever the example is regenerated), marked so that only a
# directory this script made is ever removed.
ws=/var/tmp/benchpipe-history-example
mark=.benchpipe-history-example
if [ -e "$ws" ] || [ -L "$ws" ]; then
  if [ -L "$ws" ] || [ ! -d "$ws" ] || [ "$(stat -c %u "$ws")" != "$(id -u)" ] \
    || [ -L "$ws/$mark" ] || [ ! -f "$ws/$mark" ]; then
    echo "regenerate.sh: $ws exists and is not a workspace of this script's; move it away" >&2
    exit 2
  fi
  rm -rf "$ws"
fi
mkdir -m 0700 "$ws"
touch "$ws/$mark"
trap '[ -n "${KEEP:-}" ] || rm -rf "$ws"' EXIT
cp -R "$here/pipeline" "$here/scenarios" "$ws/"
mkdir "$ws/boards"
sed 's/rev 1\.2/rev 1.1/' "$here/boards/nightly.toml" >"$ws/boards/nightly.toml"

# Per apply, the mean's jitter; each apply's runs print the warm-up, then its three
# measured values (the mean, 1% under it, 1% over it).
jitter=(0 0.010 -0.008 0.004 -0.003 0.006 -0.005 0.007)
for run in 1 2 3 4 5 6 7 8; do
  level=1.000
  if [ "$run" -ge 6 ]; then
    level=1.250
    sed -i 's/rev 1\.1/rev 1.2/' "$ws/boards/nightly.toml"
  fi
  awk -v l="$level" -v j="${jitter[$((run - 1))]}" 'BEGIN {
    m = l * (1 + j); printf "%.6f\n%.6f\n%.6f\n%.6f\n", m, m, m * 0.99, m * 1.01 }' >"$ws/values"
  echo 0 >"$ws/counter"
  redo=()
  [ "$run" -eq 1 ] || redo=(--redo test=nightly-step)
  (cd "$ws" && "$bp" apply --yes --quiet --no-report "${redo[@]}" --store results scenarios/nightly.toml)
done

new=$(mktemp -d "$ws/new.XXXXXX")
mkdir "$new/reports"
cp -R "$ws/results" "$new/results"
rm -f "$new/results/.lock"
cp -R "$here/boards" "$new/boards"
BENCHPIPE=$bp EXAMPLE=$new "$here/render.sh" "$new/reports"

leaks=()
for needle in "$repo" "${HOME:-/root}" "$(hostname)" "$(hostname -f 2>/dev/null || hostname)" benchpipe-history-render.; do
  [ ${#needle} -ge 3 ] || continue
  if grep -rIlF -- "$needle" "$new" >/dev/null; then
    leaks+=("$needle: $(grep -rIlF -- "$needle" "$new" | head -3 | tr '\n' ' ')")
  fi
done
if [ ${#leaks[@]} -gt 0 ]; then
  printf 'regenerate.sh: the example would hold this machine'"'"'s %s\n' "${leaks[@]}" >&2
  exit 1
fi

rm -rf "$here/results" "$here/reports"
mv "$new/results" "$new/reports" "$here/"
echo "regenerate.sh: examples/history/ holds $(ls "$here/results/runs" | wc -l) runs, $(du -sh --apparent-size "$here/results" | cut -f1); review with git status"
