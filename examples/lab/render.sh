#!/usr/bin/env bash
# Renders the committed example store's reports: `examples/lab/render.sh [OUT]`
# (default OUT: examples/lab/reports). The recipes are the repository's own, the
# scenarios too but where examples/lab/scenarios/ holds the one the store was recorded
# with; the boards are the lab's as recorded (examples/lab/boards/), since the lab that
# ran them is gone. `nix build .#reports` and tests/it/example.rs run this script.
# BENCHPIPE names the binary (default: `benchpipe` on PATH); EXAMPLE a directory holding
# another boards/ and results/ (regenerate.sh renders its new store before replacing).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=${1:-$here/reports}
example=${EXAMPLE:-$here}
bp=${BENCHPIPE:-benchpipe}

# A workspace of the repository's scenarios and recipes with the recorded boards:
# benchpipe finds a scenario's boards/ and pipeline/ beside it.
ws=$(mktemp -d "${TMPDIR:-/tmp}/benchpipe-example-render.XXXXXX")
trap 'rm -rf "$ws"' EXIT
cp -R "$repo/scenarios" "$repo/pipeline" "$ws/"
mkdir "$ws/boards"
cp "$example"/boards/*.toml "$ws/boards/"
# The scenarios as the store was recorded with (regenerate.sh's method), over the
# repository's own of the same name.
if [ -d "$example/scenarios" ]; then cp "$example"/scenarios/*.toml "$ws/scenarios/"; fi
# Copies out of the Nix store are read-only.
chmod -R u+w "$ws"

scenarios=()
while read -r name; do
  case "$name" in '' | '#'*) continue ;; esac
  scenarios+=("$ws/scenarios/$name.toml")
done <"$here/SCENARIOS"

mkdir -p "$out"
"$bp" report --store "$example/results" --out "$out" "${scenarios[@]}" >/dev/null
