#!/usr/bin/env bash
# The 2026 handout's runs on one GPU machine, packed into at most 8 files of at most 15 MB:
#
#   nsys_runs/gpu_session_2026.sh OUT_DIR PART...
#
# PARTs run in the order given:
#   env         GPU, driver, nsys and torch versions
#   options     which of the 2026 nsys options (memory events and capture included) this nsys takes
#               (<work>/nsys_options.json; later sweeps reuse it instead of probing again)
#   layernorm   mp-b: LayerNorm / RMSNorm in fp16 and bf16 against fp32 on the model's activations
#   checkpoint  peak memory and step time per checkpointed block group (xl, batch 4, context 2048)
#   memf        mem-f trace: xl at context 128, training, tensor-level memory events
#               (cudaMallocAsync), per-block ranges, warm-up left out by the capture
#   grid        the 2026 nsys grid: per size of GRID_SIZES, the longest power-of-two context whose
#               training step fits and the two below, 2026 options, warm-up left out
# Work goes to $WORK (default /tmp/cs336-2026). Parts stop DEADLINE_S seconds (default 540) after
# the start, so the packing always happens. OUT_DIR receives pack.tar.part_* (results files, logs,
# sweep tables, slim xz traces) and session.log. For a check on a CPU, set the sizes to tiny:
# GRID_SIZES, MEMF_SIZE, CHECKPOINT_ARGS, LAYERNORM_ARGS, and DEVICE=cpu.
set -uo pipefail
out=$(realpath -m "$1"); shift
work=${WORK:-/tmp/cs336-2026}
py=${PYTHON:-python3}
device=${DEVICE:-cuda}
deadline=$(( SECONDS + ${DEADLINE_S:-540} ))
mkdir -p "$out" "$work"/{results,logs}
exec > >(tee -a "$out/session.log") 2>&1
export TAIL_LINES=${TAIL_LINES:-16}

source "$(dirname "${BASH_SOURCE[0]}")/session_parts.sh"  # run_part NAME COMMAND...

run=($py -m cs336_profile.run)
to_results=(--results-dir "$work/results" --device "$device" --no-progress)
# The 2026 options; each sweep folder gets the options part's verdict, so that nsys is probed once.
sweep_2026=($py -m nsys_runs.sweep --handout 2026 --nsys-flags 2026 --capture-measured --probe-options
  --variants fp32 --subset-sizes --slim --device "$device" --no-progress --timeout-s 300)
with_probe() { mkdir -p "$1"; [ -e "$work/nsys_options.json" ] && cp "$work/nsys_options.json" "$1/"; }

for part in "$@"; do
  case $part in
    env)
      run_part env bash -c "nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nsys --version;
        $py -c 'import torch, nvtx; print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name())'" ;;
    options)
      run_part options $py -c "
import sys; from pathlib import Path
from nsys_runs.nsys_options import profile_setup, usable_options
options, environment = profile_setup('2026', memory_events=True, capture_measured=True)
print('kept:', *usable_options('nsys', sys.executable, options, environment, Path('$work')))" ;;
    layernorm) run_part layernorm "${run[@]}" layernorm ${LAYERNORM_ARGS:-} "${to_results[@]}" ;;
    checkpoint) run_part checkpoint "${run[@]}" checkpoint ${CHECKPOINT_ARGS:-} "${to_results[@]}" ;;
    memf)
      with_probe "$work/memf"
      run_part memf "${sweep_2026[@]}" --out "$work/memf" --sizes "${MEMF_SIZE:-xl}" --context-lengths 128 --modes train \
        --memory-events --layer-ranges --warmup 1 --steps 1 ;;
    grid)
      with_probe "$work/grid"
      run_part grid "${sweep_2026[@]}" --out "$work/grid" --sizes ${GRID_SIZES:-small medium} --fit-contexts --modes train \
        --warmup 1 --steps ${GRID_STEPS:-1} ${GRID_ARGS:-} ;;
    *) echo "unknown part $part" ;;
  esac
done

# ---- packing: slim traces xz-compressed in parallel, everything in one tar split into 15 MB parts
echo "[pack] $(( SECONDS ))s"
cd "$work"
ls -la memf grid 2>/dev/null | grep -E 'sqlite|nsys-rep' | awk '{print "[raw]", $5, $9}'
find . -path '*/slim/*.sqlite' -print0 | xargs -0 -r -P "$(nproc)" -n 1 xz -6 -f
find . -path '*/slim/*.sqlite.xz' -exec ls -la {} \; | awk '{print "[slim.xz]", $5, $9}'
kept=$(ls -d results logs nsys_options.* {memf,grid}/{sweep.*,fit.*,nsys_options.*,runner,logs,slim} 2>/dev/null)
tar -cf - $kept | split -b 15M -d - "$out/pack.tar.part_"
ls -la "$out"
echo "[end] $(( SECONDS ))s"
