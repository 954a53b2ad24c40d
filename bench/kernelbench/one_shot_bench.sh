#!/bin/bash
# One-shot evaluation time of one candidate, side by side in one run: `kope eval` in its own
# process (cold: it starts every runner), `kope eval --warm` (its first call starts the warm
# evaluation service; the later ones find the task's runners loaded and the candidate's runner
# started), and KernelBench's own harness (its eval_kernel_against_ref and
# measure_ref_program_time, as scripts/run_and_check.py calls them locally:
# kernelbench_harness.py) where KERNELBENCH_DIR names a checkout of
# ScalingIntelligence/KernelBench. Prints every call's wall time, verdict and speedup over
# eager, then a table of medians.
#
#   bench/kernelbench/one_shot_bench.sh [--repeat N] [--backend cpu|cuda|auto] PROBLEM.py CANDIDATE.py
#
# Defaults: --repeat 3, --backend auto. KOPE (default build/release/kope) names kope;
# KERNELBENCH_PYTHON (default python3) the interpreter that has KernelBench's dependencies;
# KERNELBENCH_ARGS extra options for kernelbench_harness.py (e.g. "--backend triton").
# The warm service runs in a folder of its own, made here and removed at the end. A problem
# file is imported into kope's cache the first time kope sees it: the first cold call then
# includes the import (shown in its row).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
repeat=3 backend=auto
while [ $# -gt 2 ]; do
  case "$1" in
    --repeat) repeat=$2 ;;
    --backend) backend=$2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
[ $# -eq 2 ] || { sed -n '2,17p' "$0" >&2; exit 2; }
problem=$(realpath "$1") candidate=$(realpath "$2")
kope=$(realpath "${KOPE:-$root/build/release/kope}")
services=$(mktemp -d)
chmod 700 "$services"
export KOPE_EVAL_SERVICE_DIR=$services
unset KOPE_EVAL_WARM
trap '"$kope" eval-service --stop >/dev/null 2>&1 || true; rm -rf "$services"' EXIT

now() { date +%s.%N; }
rows=()
# run LABEL COMMAND...: one timed call; prints its time and verdict, keeps the time.
run() {
  local label=$1 out rc t0 t1
  shift
  t0=$(now)
  out=$("$@" 2>&1) && rc=0 || rc=$?
  t1=$(now)
  local verdict speedup
  verdict=$(printf '%s\n' "$out" | sed -n 's/.*"verdict": "\([a-z_]*\)".*/\1/p' | head -1)
  [ -n "$verdict" ] || verdict=$(printf '%s\n' "$out" | sed -n 's/.*"correct": \([a-z]*\).*/correct=\1/p' | tail -1)
  [ -n "$verdict" ] || verdict="exit $rc"
  speedup=$(printf '%s\n' "$out" | sed -n 's/^  "speedup": \([0-9.]*\).*/\1/p; s/.*"speedup": \([0-9.]*\).*/\1/p' | head -1)
  [ -z "$speedup" ] || verdict="$verdict ${speedup:0:5}x"
  local seconds
  seconds=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
  printf '%-34s %8s s  %s\n' "$label" "$seconds" "$verdict"
  if [ "$rc" -gt 1 ]; then printf '%s\n' "$out" | tail -5 | sed 's/^/    /'; fi
  rows+=("$label|$seconds|$verdict")
}

echo "problem   $problem"
echo "candidate $candidate"
echo "kope      $kope (backend $backend)"
echo
for i in $(seq "$repeat"); do
  run "kope eval (cold)" "$kope" eval --no-warm --json -q --backend "$backend" "$problem" "$candidate"
done
run "kope eval --warm (starts service)" "$kope" eval --warm --json -q --backend "$backend" \
  "$problem" "$candidate"
for i in $(seq "$repeat"); do
  run "kope eval --warm" "$kope" eval --warm --json -q --backend "$backend" "$problem" "$candidate"
done
if [ -n "${KERNELBENCH_DIR:-}" ]; then
  for i in $(seq "$repeat"); do
    # shellcheck disable=SC2086
    run "KernelBench harness" "${KERNELBENCH_PYTHON:-python3}" "$here/kernelbench_harness.py" \
      "$problem" "$candidate" ${KERNELBENCH_ARGS:-}
  done
fi

echo
printf '%-34s %6s %10s %10s  %s\n' "one-shot evaluation" calls "median s" "min s" verdicts
printf '%s\n' "${rows[@]}" | awk -F'|' '
  { n[$1]++; t[$1, n[$1]] = $2; v[$1] = v[$1] (v[$1] == "" ? "" : ",") $3
    if (!($1 in seen)) { seen[$1] = 1; order[++k] = $1 } }
  END {
    for (i = 1; i <= k; i++) {
      l = order[i]; m = n[l]
      for (a = 1; a <= m; a++) for (b = a + 1; b <= m; b++)
        if (t[l, b] < t[l, a]) { x = t[l, a]; t[l, a] = t[l, b]; t[l, b] = x }
      med = (m % 2) ? t[l, (m + 1) / 2] : (t[l, m / 2] + t[l, m / 2 + 1]) / 2
      printf "%-34s %6d %10.2f %10.2f  %s\n", l, m, med, t[l, 1], v[l]
    }
  }'
if [ -z "${KERNELBENCH_DIR:-}" ]; then
  echo "(KernelBench's harness: set KERNELBENCH_DIR to a checkout of ScalingIntelligence/KernelBench)"
fi
