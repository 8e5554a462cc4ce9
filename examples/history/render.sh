#!/usr/bin/env bash
# Renders the History example's reports: `examples/history/render.sh [OUT]` (default
# OUT: examples/history/reports), from its scenario, recipe, board file and store
# alone. `nix build .#history-reports` and tests/it/example.rs run this script.
# BENCHPIPE names the binary (default: `benchpipe` on PATH); EXAMPLE a directory holding
# another boards/ and results/ (regenerate.sh renders its new store before replacing).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/reports}
example=${EXAMPLE:-$here}
bp=${BENCHPIPE:-benchpipe}

ws=$(mktemp -d "${TMPDIR:-/tmp}/benchpipe-history-render.XXXXXX")
trap 'rm -rf "$ws"' EXIT
cp -R "$here/scenarios" "$here/pipeline" "$ws/"
cp -R "$example/boards" "$ws/boards"
# Copies out of the Nix store are read-only.
chmod -R u+w "$ws"

mkdir -p "$out"
"$bp" report --store "$example/results" --out "$out" "$ws/scenarios/nightly.toml" >/dev/null
