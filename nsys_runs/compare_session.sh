#!/usr/bin/env bash
# analyze-nsys against nsys's own reports, on six traces the runner makes here under nsys (a GPU
# machine with nsys, torch and nvtx). Run from the repository root:
#
#   nsys_runs/compare_session.sh OUT_DIR
#
# Makes (1 warm-up + 2 measured steps each): large ctx512 train bf16, medium ctx512 train SDPA,
# small ctx1024 train compiled, xl ctx1024 forward, xl ctx512 train, xl ctx256 train with
# emit_nvtx; then `python -m benchmarks.nsys_compare` on the exports (median of $RUNS, default 3).
# OUT_DIR receives compare.log and the slim emit_nvtx export (xz). Work goes to $WORK.
# SIZE_LARGE, SIZE_MEDIUM, SIZE_SMALL, SIZE_XL change the sizes (e.g. `tiny` for a check on a CPU).
set -uo pipefail
out=$(realpath -m "$1")
work=${WORK:-/tmp/cs336-compare}
py=${PYTHON:-python3}
mkdir -p "$out" "$work"
exec > >(tee -a "$out/compare.log") 2>&1
xl=${SIZE_XL:-xl}
sweep=($py -m nsys_runs.sweep --out "$work" --subset-sizes --warmup 1 --steps 2 --no-progress --timeout-s 150
       ${SWEEP_ARGS:-})
start=$SECONDS
"${sweep[@]}" --sizes "${SIZE_LARGE:-large}" --context-lengths 512 --modes train --variants bf16
"${sweep[@]}" --sizes "${SIZE_MEDIUM:-medium}" --context-lengths 512 --modes train --attention sdpa
"${sweep[@]}" --sizes "${SIZE_SMALL:-small}" --context-lengths 1024 --modes train --variants fp32-compiled
"${sweep[@]}" --sizes "$xl" --context-lengths 1024 --modes forward
"${sweep[@]}" --sizes "$xl" --context-lengths 512 --modes train
"${sweep[@]}" --sizes "$xl" --context-lengths 256 --modes train --emit-nvtx --slim
echo "[traces] $(( SECONDS - start ))s"
ls -la "$work"/*.sqlite
$py -m benchmarks.nsys_compare "$work"/*.sqlite --runs "${RUNS:-3}"
echo "[compared] $(( SECONDS - start ))s"
for slim in "$work"/slim/*emitnvtx*.sqlite; do
  [ -e "$slim" ] && xz -T0 -6 -c "$slim" > "$out/$(basename "$slim").xz"
done
ls -la "$out"
