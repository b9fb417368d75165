#!/usr/bin/env bash
# Multi-GPU traces of data-parallel training: naive DDP and overlapped DDP on one size, FSDP on a
# larger one, each a torchrun run under one `nsys profile` (nsys follows torchrun's worker
# processes into one report). Run from the repository root, with nsys and python3 (torch, nvtx):
#
#   nsys_runs/multi_gpu_session.sh OUT_DIR
#
# Settings (environment): NPROC (2 processes), DDP_SIZE (medium) and DDP_CTX (256), FSDP_SIZE
# (2.7B: d_model 2560, d_ff 10240, 32 layers, 32 heads) and FSDP_CTX (512), BATCH (4 per rank),
# DEVICE (cuda), NSYS (nsys; empty: run without a profiler, e.g. a check on a CPU with tiny sizes),
# RUN_TIMEOUT_S (150 per run), DEADLINE_S (400: no run starts later), PYTHON (python3).
# OUT_DIR receives <stem>.sqlite.xz (slim exports), results.tar.xz (the runner's results files
# with every rank's step times, and each run's log) and session.log.
set -uo pipefail
out=$(realpath -m "$1")
work=${WORK:-/tmp/cs336-multi-gpu}
py=${PYTHON:-python3}
nproc=${NPROC:-2}
nsys=${NSYS-nsys}
device=${DEVICE:-cuda}
deadline=$(( SECONDS + ${DEADLINE_S:-400} ))
mkdir -p "$out" "$work"/{results,logs,slim}
exec > >(tee -a "$out/session.log") 2>&1
# NVLink SHARP (multicast) stays off on the shared machines; the workers inherit these.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1

echo "[env] $(date -u +%FT%TZ)"
if [ "$device" = cuda ]; then
  nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv
  nvidia-smi topo -m
fi
[ -n "$nsys" ] && $nsys --version
$py -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version() if torch.cuda.is_available() else None)'
nsys_options=$($py -c 'from nsys_runs.sweep import NSYS_PROFILE_OPTIONS as o; print(*o)')

# profile STEM PARALLEL SIZE CTX [RUNNER OPTION...]: one torchrun run (under nsys when NSYS is set),
# then its export slimmed and compressed in the background.
profile() {
  local stem=$1 parallel=$2 size=$3 ctx=$4; shift 4
  local left=$(( deadline - SECONDS ))
  if (( left < 30 )); then echo "[skip] $stem: no time left"; return; fi
  local limit=$(( left < ${RUN_TIMEOUT_S:-150} ? left : ${RUN_TIMEOUT_S:-150} ))
  local profiler=()
  [ -n "$nsys" ] && profiler=($nsys profile $nsys_options -o "$work/$stem")
  local command=("${profiler[@]}" $py -m torch.distributed.run --standalone --nproc_per_node="$nproc"
    -m cs336_profile.run bench --parallel "$parallel" --sizes "$size" --context-lengths "$ctx" --mode train
    --dtype fp32 --warmup 2 --steps 3 --batch-size "${BATCH:-4}" --device "$device"
    --results-dir "$work/results" --name "$stem" --no-progress "$@")
  echo "[run] $stem (at most ${limit}s): ${command[*]}"
  local start=$SECONDS
  timeout --signal=INT --kill-after=20 "$limit" "${command[@]}" > "$work/logs/$stem.log" 2>&1
  echo "[done] $stem rc=$? in $(( SECONDS - start ))s"
  grep -v -e Warning -e '^ *warnings.warn' "$work/logs/$stem.log" | tail -n 12 | cut -c1-220
  if [ -e "$work/$stem.sqlite" ]; then
    $py -c 'import sys; from pathlib import Path; from nsys_runs.slim import slim_copy, compress_xz
print("[slim]", compress_xz(slim_copy(Path(sys.argv[1]), Path(sys.argv[2]))))' \
      "$work/$stem.sqlite" "$out/$stem.sqlite" &
    slimming+=($!)
  fi
}

slimming=()  # a bare `wait` would also wait for the log's tee
suffix="${nproc}gpu"
profile "${DDP_SIZE:-medium}_ctx${DDP_CTX:-256}_train_fp32_ddp-naive_$suffix" ddp-naive "${DDP_SIZE:-medium}" "${DDP_CTX:-256}"
profile "${DDP_SIZE:-medium}_ctx${DDP_CTX:-256}_train_fp32_ddp-overlap_$suffix" ddp-overlap "${DDP_SIZE:-medium}" "${DDP_CTX:-256}"
profile "${FSDP_SIZE:-2.7B}_ctx${FSDP_CTX:-512}_train_fp32_fsdp_$suffix" fsdp "${FSDP_SIZE:-2.7B}" "${FSDP_CTX:-512}" --layer-ranges
(( ${#slimming[@]} )) && wait "${slimming[@]}"
echo "[pack] $SECONDS s"
tar -C "$work" -cJf "$out/results.tar.xz" results logs
ls -la "$out"
echo "[end] $SECONDS s"
