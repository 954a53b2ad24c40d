#!/bin/bash
# The bridge's overhead on every problem of a KernelBench folder, one shard per GPU: the
# problems (in name order) are dealt round-robin to the shards, each shard runs
# kernelbench_bench with its own runner pool on its GPU under a time limit, and its report goes
# to OUT/shard_K.txt (a shard cut short by the limit reports what it finished); their summary
# (bench/kernelbench/summarize.py) goes to OUT/summary.md.
#
#   bench/kernelbench/sweep.sh [--gpus N] [--repeat R] [--limit SECONDS] [--backend cpu|cuda]
#                              [--candidate FILE] [--part K/P] PROBLEM_DIR OUT
#
# Defaults: 1 GPU, --repeat 2, no limit, cuda, bench/kernelbench/identity.py. `--part K/P` runs
# the K-th of P parts of the folder (every P-th problem in name order, from the K-th; K from 1),
# so that a folder too long for one run goes in several (level 1 with --repeat 3 on two H200s:
# about 16 minutes, so --part 1/2 and --part 2/2 under a limit of 540 s each). Run
# scripts/build first (it builds build/release/bench/kernelbench/kernelbench_bench).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
gpus=1 repeat=2 limit=0 backend=cuda candidate="$here/identity.py" part=1/1
while [ $# -gt 2 ]; do
  case "$1" in
    --gpus) gpus=$2 ;;
    --repeat) repeat=$2 ;;
    --limit) limit=$2 ;;
    --backend) backend=$2 ;;
    --candidate) candidate=$2 ;;
    --part) part=$2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
[ $# -eq 2 ] || { sed -n 2,15p "$0" >&2; exit 2; }
[[ $part =~ ^([0-9]+)/([0-9]+)$ ]] && [ "${BASH_REMATCH[1]}" -ge 1 ] &&
  [ "${BASH_REMATCH[1]}" -le "${BASH_REMATCH[2]}" ] ||
  { echo "--part wants K/P with 1 <= K <= P, got '$part'" >&2; exit 2; }
part_k=$((BASH_REMATCH[1] - 1)) part_p=${BASH_REMATCH[2]}
dir=$1 out=$2
bench=${KOPE_KERNELBENCH_BENCH:-$root/build/release/bench/kernelbench/kernelbench_bench}
[ -x "$bench" ] || { echo "no $bench: run scripts/build first" >&2; exit 1; }
mapfile -t all < <(find "$dir" -maxdepth 1 -name '*.py' | sort -V)
problems=()
for ((i = part_k; i < ${#all[@]}; i += part_p)); do problems+=("${all[i]}"); done
[ ${#problems[@]} -gt 0 ] || { echo "no problem files in $dir (part $part)" >&2; exit 1; }
mkdir -p "$out"
pids=()
for ((k = 0; k < gpus; k++)); do
  shard=()
  for ((i = k; i < ${#problems[@]}; i += gpus)); do shard+=("${problems[i]}"); done
  [ ${#shard[@]} -gt 0 ] || continue
  (
    export CUDA_VISIBLE_DEVICES=$k
    cmd=("$bench" --backend "$backend" --repeat "$repeat" --candidate "$candidate" "${shard[@]}")
    if [ "$limit" -gt 0 ]; then cmd=(timeout "$limit" "${cmd[@]}"); fi
    status=0
    "${cmd[@]}" > "$out/shard_$k.txt" 2>&1 || status=$?
    echo "shard $k: ${#shard[@]} problems, exit $status" >> "$out/shard_$k.txt"
  ) &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
for f in "$out"/shard_*.txt; do
  echo "== $f"
  grep -E "^next: bridge overhead|^next candidates at most|problems evaluated|^shard " "$f" || true
done
# The shards together (those cut short too), rows and bands in Markdown.
if python3 "$here/summarize.py" "$out"/shard_*.txt > "$out/summary.md"; then
  tail -n 8 "$out/summary.md"
  echo "all rows: $out/summary.md"
fi
