#!/usr/bin/env bash
# Regenerates the example store from a real lab run, as root, from the repository root:
#
#   sudo examples/lab/regenerate.sh
#
# It builds benchpipe (release), brings up a 2-board virtual lab in a workspace at
# /var/tmp/benchpipe-example, applies the scenarios in examples/lab/SCENARIOS (short durations, so the
# store stays small), takes the lab down, and only when everything succeeded replaces
# examples/lab/boards/, results/ and reports/. Nothing of this machine's paths or name
# may reach them: the script refuses to write them if any does. Needs no other lab up
# (`benchpipe lab down` first) and a few minutes. BENCHPIPE names a prebuilt binary;
# KEEP=1 leaves the workspace (not the lab) behind for a look.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
boards=2

if [ "$(id -u)" != 0 ]; then
  echo "regenerate.sh: the lab needs root; run: sudo $0" >&2
  exit 2
fi
scenarios=()
while read -r name; do
  case "$name" in '' | '#'*) continue ;; esac
  scenarios+=("$name")
done <"$here/SCENARIOS"

if [ -n "${BENCHPIPE:-}" ]; then
  bp=$BENCHPIPE
else
  cargo build --release --locked --manifest-path "$repo/Cargo.toml"
  bp=$repo/target/release/benchpipe
fi

# The run's workspace: the repository's scenarios and recipes, and the boards and disks
# the lab makes. A lab board shares this machine's filesystem, so its disks' backing
# files (a storage fact of each cell) lie here: a fixed path, the same wherever the
# example is regenerated, and marked so that only a directory this script made is
# ever removed.
ws=${WORKSPACE:-/var/tmp/benchpipe-example} # WORKSPACE: for tests only
mark=.benchpipe-example-workspace
if [ -e "$ws" ] || [ -L "$ws" ]; then
  # Only a root-owned directory (no link) holding this script's root-owned marker: in
  # world-writable /var/tmp, anything else may be anyone's, planted for root to follow.
  if [ -L "$ws" ] || [ ! -d "$ws" ] || [ "$(stat -c %u "$ws")" != 0 ] \
    || [ -L "$ws/$mark" ] || [ ! -f "$ws/$mark" ] || [ "$(stat -c %u "$ws/$mark")" != 0 ]; then
    echo "regenerate.sh: $ws exists and is not a workspace of this script's; move it away" >&2
    exit 2
  fi
  "$bp" lab down --root "$ws" >/dev/null
  rm -rf "$ws"
fi
mkdir -m 0700 "$ws"
touch "$ws/$mark"
cleanup() {
  "$bp" lab down --root "$ws" >/dev/null || echo "regenerate.sh: lab down failed; run: $bp lab down --root $ws" >&2
  [ -n "${KEEP:-}" ] || rm -rf "$ws"
}
trap cleanup EXIT
cp -R "$repo/scenarios" "$repo/pipeline" "$ws/"
mkdir "$ws/boards"
# The example's method: the shipped scenarios' short durations, but measured until each
# 95% interval is within 5% of its mean (at most 8 runs), so that its intervals say
# something; and a description saying where the figures come from. The scenarios as
# run are kept with the store (examples/lab/scenarios/), and render.sh renders them.
for s in "${scenarios[@]}"; do
  f=$ws/scenarios/$s.toml
  grep -q '^runs = { min = [0-9]*, max = [0-9]* }$' "$f" || {
    echo "regenerate.sh: $s.toml has no plain \`runs = { min = N, max = M }\` line to set a target on" >&2
    exit 1
  }
  sed -i 's/^runs = { min = [0-9]*, max = [0-9]* }$/runs = { min = 3, max = 8, target = "5%" }/' "$f"
  grep -q '^description = ' "$f" || sed -i '0,/^title = .*/s//&\ndescription = "Recorded on benchpipe'"'"'s virtual lab: two network namespaces on one 2-core virtual machine, with loop-device disks. The figures are that machine'"'"'s, not any board'"'"'s; they show what the reports look like."/' "$f"
done

# Disks written through and read with direct I/O: hdparm times the disk under them.
"$bp" lab up --root "$ws" --boards "$boards" --direct-io
files=()
for s in "${scenarios[@]}"; do files+=("$ws/scenarios/$s.toml"); done
# One board at a time: the lab's boards share this machine, so a board measured while
# another runs its tests would see that board's work as background load. A cell that
# failed runs again on a second apply (the store keeps what completed); a second
# failure is the run's answer and stops here.
for ((i = 1; i <= boards; i++)); do
  if ! "$bp" apply --yes --quiet --no-report --only "board=lab-$i" --store "$ws/results" "${files[@]}"; then
    echo "regenerate.sh: some cells of lab-$i failed; applying once more" >&2
    "$bp" apply --yes --quiet --no-report --only "board=lab-$i" --store "$ws/results" "${files[@]}"
  fi
done

# The boards as the store's cells know them: name (the file), model, arch and storage
# (name, model, role) are what their keys hash. The lab's SSH key, known_hosts and
# power command are paths on this machine, and its boot disk and flash settings serve
# no cell here, so they are left out: the report only reads these files.
new=$(mktemp -d "$ws/new.XXXXXX")
mkdir "$new/boards" "$new/reports" "$new/scenarios"
for s in "${scenarios[@]}"; do cp "$ws/scenarios/$s.toml" "$new/scenarios/"; done
for f in "$ws"/boards/*.toml; do
  {
    echo "# A lab board as recorded by examples/lab/regenerate.sh, for rendering the example's"
    echo "# reports: what the cells' keys hash (model, arch, storage), without the lab's paths."
    awk '
      function flush() { if (keep) printf "%s", block; block = "" }
      /^\[/ { flush(); keep = ($0 != "[flash]" && $0 != "[power]") }
      /^[[:space:]]*#/ { next }
      /^(identity|known_hosts)[[:space:]]*=/ { next }
      /^role[[:space:]]*=[[:space:]]*"boot"/ { keep = 0 }
      { block = block $0 "\n" }
      END { flush() }
    ' keep=1 "$f" | cat -s
  } >"$new/boards/$(basename "$f")"
done
cp -R "$ws/results" "$new/results"
rm -f "$new/results/.lock"
BENCHPIPE=$bp EXAMPLE=$new "$here/render.sh" "$new/reports"

# Nothing of this machine: not the repository's path, $HOME or the host name, and the
# workspace's only as the lab disks' backing files.
leaks=()
for needle in "$repo" "${HOME:-/root}" "$(hostname)" "$(hostname -f 2>/dev/null || hostname)" benchpipe-example-render.; do
  [ ${#needle} -ge 3 ] || continue
  if grep -rIlF -- "$needle" "$new" >/dev/null; then
    leaks+=("$needle: $(grep -rIlF -- "$needle" "$new" | head -3 | tr '\n' ' ')")
  fi
done
if grep -rIhF -- "$ws" "$new" | grep -vq '"backing_file": '; then
  leaks+=("$ws: $(grep -rIhF -- "$ws" "$new" | grep -v '"backing_file": ' | head -3)")
fi
if [ ${#leaks[@]} -gt 0 ]; then
  printf 'regenerate.sh: the example would hold this machine'"'"'s %s\n' "${leaks[@]}" >&2
  exit 1
fi

rm -rf "$here/boards" "$here/results" "$here/reports" "$here/scenarios"
mv "$new/boards" "$new/results" "$new/reports" "$new/scenarios" "$here/"
echo "regenerate.sh: examples/lab/ holds $(find "$here/results" -name cell.json | wc -l) cells, $(du -sh --apparent-size "$here/results" | cut -f1); review with git status"
