#!/usr/bin/env bash
# One session on a GPU machine: the nsys sweep, the bench and the experiments, packed into a few
# files of at most 16 MB each. Run from the repository root, with nsys and python3 (torch, nvtx) ready:
#
#   nsys_runs/gpu_session.sh OUT_DIR PART...
#
# PARTs run in the order given:
#   env            GPU, driver, nsys and torch versions
#   mixed          mixed-precision accumulation loops and ToyModel dtypes
#   overhead       NVTX annotation overhead, without and under nsys
#   bench          bench-b / mp-c (every size, fp32 and bf16) and bench-c (warm-up 0, 1, 2)
#   sweep=S,S...   the fp32 nsys grid (4 context lengths, forward and train) of the sizes named
#   subset         bf16 of small/medium at ctx 128/256, and compiled small at ctx 128/256
#   attention      attention grid (eager, compiled, SDPA)
#   memory         memory study of the 2.7B model (peaks, snapshots)
#   compile        whole-model compile vs eager, small and medium
#   dense          xl ctx256 train with emit_nvtx (one NVTX range per op)
# Work goes to $WORK (default /tmp/cs336-session). Parts stop at DEADLINE_S seconds (default 520)
# after the start, so the packing always happens. OUT_DIR receives results.tar.xz (results files,
# sweep table, logs), traces.tar (slim exports of the subset sizes at ctx 128/256, xz), extra_<i>.tar
# (other slim exports, xz, about 15 MB each), snapshots.tar.xz and session.log.
# A sweep table from an earlier session can be continued: put it at $SWEEP_TABLE.
# Sizes can be changed (e.g. to `tiny` for a check on a CPU): SIZES, OVERHEAD_SIZES, SUBSET_SIZES,
# COMPILED_SIZE, MEMORY_SIZE, COMPILE_SIZES, DENSE_SIZE; extra arguments: ATTENTION_ARGS, SWEEP_ARGS.
set -uo pipefail
out=$(realpath -m "$1"); shift
work=${WORK:-/tmp/cs336-session}
py=${PYTHON:-python3}
sizes_all=${SIZES:-"small medium large xl 2.7B"}
subset_sizes=${SUBSET_SIZES:-"small medium"}
deadline=$(( SECONDS + ${DEADLINE_S:-520} ))
mkdir -p "$out" "$work"/{results,sweep,logs,snapshots}
exec > >(tee -a "$out/session.log") 2>&1
nsys_options=$($py -c 'from nsys_runs.sweep import NSYS_PROFILE_OPTIONS as o; print(*o)')
[ -n "${SWEEP_TABLE:-}" ] && [ ! -e "$work/sweep/sweep.json" ] && cp "$SWEEP_TABLE" "$work/sweep/sweep.json"

source "$(dirname "${BASH_SOURCE[0]}")/session_parts.sh"  # run_part NAME COMMAND...

# Commands the parts share (arrays: `timeout` runs programs, not shell functions).
run=($py -m cs336_profile.run)
to_results=(--results-dir "$work/results" --no-progress)
sweep=($py -m nsys_runs.sweep --out "$work/sweep" --slim --no-progress --timeout-s 300 ${SWEEP_ARGS:-})

for part in "$@"; do
  case $part in
    env)
      run_part env bash -c "nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nsys --version;
        $py -c 'import torch, nvtx; print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name())'" ;;
    mixed) run_part mixed "${run[@]}" mixed-precision "${to_results[@]}" ;;
    overhead)
      overhead=(overhead --sizes ${OVERHEAD_SIZES:-small medium} --context-lengths 128 --steps 100 "${to_results[@]}")
      run_part overhead "${run[@]}" "${overhead[@]}"
      run_part overhead_nsys nsys profile $nsys_options -o "$work/overhead_nsys" "${run[@]}" "${overhead[@]}" \
        --name overhead_nsys ;;
    bench)
      for dtype in fp32 bf16; do
        run_part "bench_$dtype" "${run[@]}" bench --sizes $sizes_all --context-lengths 256 \
          --mode forward-backward --warmup 5 --steps 10 --dtype $dtype --name "bench_$dtype" "${to_results[@]}"
      done
      for warmup in 0 1 2; do
        run_part "bench_warmup$warmup" "${run[@]}" bench --sizes $sizes_all --context-lengths 256 \
          --mode forward-backward --warmup $warmup --steps 5 --name "bench_warmup$warmup" "${to_results[@]}"
      done ;;
    sweep=*)
      sizes=${part#sweep=}
      run_part "sweep_${sizes//,/_}" "${sweep[@]}" --sizes ${sizes//,/ } --subset-sizes ;;
    subset)
      run_part sweep_bf16 "${sweep[@]}" --sizes $subset_sizes --context-lengths 128 256 --variants bf16 --subset-sizes
      run_part sweep_compiled "${sweep[@]}" --sizes "${COMPILED_SIZE:-small}" --context-lengths 128 256 --variants fp32-compiled --subset-sizes ;;
    attention) run_part attention "${run[@]}" attention ${ATTENTION_ARGS:-} "${to_results[@]}" ;;
    memory) run_part memory "${run[@]}" memory --size "${MEMORY_SIZE:-2.7B}" --snapshot-dir "$work/snapshots" "${to_results[@]}" ;;
    compile) run_part compile "${run[@]}" compile --sizes ${COMPILE_SIZES:-small medium} --context-length 256 "${to_results[@]}" ;;
    dense) run_part dense "${sweep[@]}" --sizes "${DENSE_SIZE:-xl}" --context-lengths 256 --modes train --subset-sizes --emit-nvtx ;;
    *) echo "unknown part $part" ;;
  esac
done

# ---- packing: at most 8 files of at most 16 MB each
echo "[pack] $(( SECONDS ))s"
cd "$work"
find sweep/slim -name '*.sqlite' -print0 2>/dev/null | xargs -0 -r -P "$(nproc)" -n 1 xz -6 -f
tar -cJf "$out/results.tar.xz" results logs sweep/sweep.json sweep/sweep.csv sweep/runner sweep/logs \
  $(ls sweep/*.timings.json 2>/dev/null) 2>/dev/null
kept=$(echo $(for size in $subset_sizes; do ls sweep/slim/${size}_ctx{128,256}_*.sqlite.xz; done 2>/dev/null))
[ -n "$kept" ] && tar -cf "$out/traces.tar" $kept ${kept//.sqlite.xz/.timings.json}
# The other slim exports, smallest first, in tar files of about 15 MB (larger single files alone).
limit=$(( 15 * 1024 * 1024 )); bin=0; used=0; files=()
flush() { (( ${#files[@]} )) && tar -cf "$out/extra_$bin.tar" "${files[@]}"; bin=$(( bin + 1 )); used=0; files=(); }
for f in $(ls -Sr sweep/slim/*.sqlite.xz 2>/dev/null); do
  case " $kept " in *" $f "*) continue ;; esac
  size=$(stat -c %s "$f")
  (( size > limit + 1024 * 1024 )) && { echo "[pack] too large to pack: $f ($size bytes)"; continue; }
  (( used > 0 && used + size > limit )) && flush
  (( bin >= 4 )) && { echo "[pack] no file left for: $f"; continue; }
  files+=("$f" "${f%.sqlite.xz}.timings.json"); used=$(( used + size ))
done
flush
[ -n "$(ls snapshots)" ] && tar -cJf "$out/snapshots.tar.xz" snapshots
ls -la "$out"
echo "[end] $(( SECONDS ))s"
