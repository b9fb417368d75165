#!/bin/bash
# Usage: bash .foreign/sweep.sh TAG JOB...   (run from the repository root on the GPU machine)
TAG=$1; shift
ROOT=$(pwd); F=$ROOT/.foreign; W=/tmp/fw; mkdir -p $W/out; LOG=$OUT/sweep_$TAG.log
exec > >(tee -a $LOG) 2>&1
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $F/whl/*.whl || echo "WHEELS FAILED"
date -u; nvidia-smi -L; nsys --version; python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
G26="--trace=cuda,cudnn,cublas,osrt,nvtx --pytorch=functions-trace,autograd-shapes-nvtx --cudabacktrace=all --python-backtrace=cuda --gpu-metrics-devices=0 --gpu-metrics-frequency=200"
G26B="--trace=cuda,cudnn,cublas,osrt,nvtx --pytorch=functions-trace,autograd-shapes-nvtx"
BUDGET=${BUDGET:-430}
export_job() {  # name
  local n=$1
  ( nsys export --type sqlite --force-overwrite=true -o $W/$n.sqlite $W/$n.nsys-rep > $W/$n.export.log 2>&1 \
    && python3 $F/slim.py $W/$n.sqlite > $W/$n.slim.log 2>&1 \
    && xz -T4 -9 -k -c $W/$n.sqlite > $W/out/$n.sqlite.xz \
    && echo "EXPORTED $n $(stat -c %s $W/$n.sqlite) -> $(stat -c %s $W/out/$n.sqlite.xz)" >> $W/exports.log ) \
    || echo "EXPORT FAILED $n" >> $W/exports.log
}
prof() {  # name timeout nsys-options -- command...
  local n=$1 t=$2; shift 2
  local opts=(); while [ "$1" != "--" ]; do opts+=("$1"); shift; done; shift
  if [ $SECONDS -gt $BUDGET ]; then echo "SKIP $n (elapsed $SECONDS s)"; return 1; fi
  echo "=== $n at ${SECONDS}s: nsys profile ${opts[*]} -- $*"
  timeout $t nsys profile ${opts[@]} --force-overwrite=true -o $W/$n "$@" > $W/$n.run.log 2>&1
  local rc=$?; tail -n 25 $W/$n.run.log; echo "=== $n rc=$rc at ${SECONDS}s"
  if [ -s $W/$n.nsys-rep ]; then export_job $n & PIDS+=($!); return 0; fi
  return 1
}
SITE=/tmp/site
PIDS=()
for job in "$@"; do case $job in
damek) prof damek 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/damek/cs336-basics:$SITE python3 $F/damek/cs336_systems/benchmarking_scripts/benchmarking_script.py --num_layers 4 --num_heads 8 --context_length 128 --d_model 512 --d_ff 2048 --vocab_size 10000 --rope_theta 10000 --nvtx ;;
shibuki) prof shibuki 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/shibuki_meta:$F/shibuki/cs336-basics:$F/shibuki:$SITE python3 -m cs336_systems.benchmark --model-size small --context-length 128 --mode train-step --warmup-steps 2 --measure-steps 3 --nvtx --attention-nvtx ;;
enzo) prof enzo 200 --sample=none --cpuctxsw=none --trace=cuda,nvtx -- env PYTHONPATH=$F/enzo/cs336-basics:$F/enzo:$SITE python3 -m cs336_systems.nsys_profile.cde workload --model-size small --context-length 128 --warmup 2 --steps 3 ;;
enzo26mem) prof enzo26mem 240 $G26 --cuda-memory-usage=true -- env PYTHONPATH=$F/enzo/cs336-basics:$F/enzo:$SITE python3 -m cs336_systems.nsys_profile.cde workload --model-size small --context-length 128 --warmup 2 --steps 2 \
   || prof enzo26mem 240 $G26B --cuda-memory-usage=true -- env PYTHONPATH=$F/enzo/cs336-basics:$F/enzo:$SITE python3 -m cs336_systems.nsys_profile.cde workload --model-size small --context-length 128 --warmup 2 --steps 2 ;;
sara) prof sara 240 --trace=cuda,cudnn,cublas,nvtx --pytorch=autograd-nvtx --gpu-metrics-devices=0 --gpu-metrics-frequency=200 -- env PYTHONPATH=$F/sara/cs336_basics_mine:$F/sara:$SITE python3 -m cs336_systems.benchmarking --config $F/sara_small4_ctx128.json \
   || prof sara 240 --trace=cuda,cudnn,cublas,nvtx --pytorch=autograd-nvtx -- env PYTHONPATH=$F/sara/cs336_basics_mine:$F/sara:$SITE python3 -m cs336_systems.benchmarking --config $F/sara_small4_ctx128.json ;;
gpt2_nvtx) prof gpt2_nvtx 150 --trace=cuda,nvtx -- python3 $F/hf/gpt2_train.py --nvtx ;;
gpt2_nonvtx) prof gpt2_nonvtx 150 --trace=cuda -- python3 $F/hf/gpt2_train.py ;;
gpt2_2026) prof gpt2_2026 200 $G26 -- python3 $F/hf/gpt2_train.py --steps 3 \
   || prof gpt2_2026 200 $G26B -- python3 $F/hf/gpt2_train.py --steps 3 ;;
gpt2_ddp) prof gpt2_ddp 240 --trace=cuda,nvtx -- torchrun --standalone --nproc_per_node 2 $F/hf/gpt2_train.py --ddp --nvtx ;;
gpt2_ddp26) prof gpt2_ddp26 240 $G26B -- torchrun --standalone --nproc_per_node 2 $F/hf/gpt2_train.py --ddp --steps 3 ;;
llama_nvtx) prof llama_accum_nvtx 150 --trace=cuda,nvtx -- python3 $F/hf/llama_accum_train.py --nvtx ;;
llama_2026) prof llama_accum_flags2026 200 $G26B -- python3 $F/hf/llama_accum_train.py --steps 2 ;;
llama_nonvtx) prof llama_accum_no_nvtx 150 --trace=cuda -- python3 $F/hf/llama_accum_train.py ;;
gpt2_amp) prof gpt2_amp_nvtx 150 --trace=cuda,nvtx -- python3 $F/hf/gpt2_amp_train.py --nvtx ;;
gpt2_amp26) prof gpt2_amp_flags2026 200 $G26B -- python3 $F/hf/gpt2_amp_train.py --steps 3 ;;
trainer26) prof gpt2_trainer_flags2026 200 $G26B -- python3 $F/hf/gpt2_trainer.py ;;
trainer) prof gpt2_trainer_no_nvtx 150 --trace=cuda -- python3 $F/hf/gpt2_trainer.py ;;
ckpt) prof gpt2_ckpt_nvtx 150 --trace=cuda,nvtx -- python3 $F/hf/gpt2_amp_train.py --nvtx --checkpointing ;;
ckpt26) prof gpt2_ckpt_flags2026 200 $G26B -- python3 $F/hf/gpt2_amp_train.py --steps 3 --checkpointing ;;
ddp_accum) prof gpt2_ddp2_accum_nvtx 240 --trace=cuda,nvtx -- torchrun --standalone --nproc_per_node 2 $F/hf/gpt2_train.py --ddp --nvtx --accum 2 ;;
ddp_accum26) prof gpt2_ddp2_accum_flags2026 240 $G26B -- torchrun --standalone --nproc_per_node 2 $F/hf/gpt2_train.py --ddp --steps 3 --accum 2 ;;
fsdp) prof gpt2_fsdp2_nvtx 240 --trace=cuda,nvtx -- torchrun --standalone --nproc_per_node 2 $F/hf/gpt2_train.py --fsdp --nvtx ;;
fsdp26) prof gpt2_fsdp2_flags2026 240 $G26B -- torchrun --standalone --nproc_per_node 2 $F/hf/gpt2_train.py --fsdp --steps 3 ;;
ddp4) prof gpt2_ddp4_nvtx 240 --trace=cuda,nvtx -- torchrun --standalone --nproc_per_node 4 $F/hf/gpt2_train.py --ddp --nvtx ;;
fsdp4_26) prof gpt2_fsdp4_flags2026 240 $G26B -- torchrun --standalone --nproc_per_node 4 $F/hf/gpt2_train.py --fsdp --steps 3 ;;
compile) prof gpt2_compile_no_nvtx 200 --trace=cuda -- python3 $F/hf/gpt2_train.py --compile --warmup 3 ;;
enzo26async) prof enzo26async 240 $G26 --cuda-memory-usage=true -- env PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync PYTHONPATH=$F/enzo/cs336-basics:$F/enzo:$SITE python3 -m cs336_systems.nsys_profile.cde workload --model-size small --context-length 128 --warmup 2 --steps 2 ;;
sara50) prof sara50 240 --trace=cuda,cudnn,cublas,nvtx --pytorch=autograd-nvtx --gpu-metrics-devices=0 --gpu-metrics-frequency=50 -- env PYTHONPATH=$F/sara/cs336_basics_mine:$F/sara:$SITE python3 -m cs336_systems.benchmarking --config $F/sara_small4_ctx128.json ;;
bolong) prof bolong 200 --trace=cuda,nvtx -- bash -c "cd $F/bolong && exec env PYTHONPATH=$F/bolong/cs336-basics:$F/bolong:$SITE python3 -m scripts.benchmark_base --mode profile --model small --option opt --context_length 128" ;;
damek_ddp) prof damek_ddp2 300 --trace=cuda,nvtx -- env PYTHONPATH=$F/shibuki_meta:$F/damek/cs336-basics:$F/damek:$SITE python3 $F/damek/cs336_systems/benchmarking_scripts/ddp_overlap_individual_parameters_benchmarking_nvtx.py ;;
sara_ddp) prof sara_ddp2 240 --trace=cuda,nvtx -- env PYTHONPATH=$F/sara/cs336_basics_mine:$F/sara:$SITE python3 -m cs336_systems.ddp_overlap_bench --config $F/sara_small4_ctx128.json ;;
graphs) prof gpt2_cudagraphs_nvtx 300 --trace=cuda,nvtx -- python3 $F/hf/gpt2_train.py --nvtx --compile --compile-mode reduce-overhead --warmup 3 ;;
graphs_node) prof gpt2_cudagraphs_node_nvtx 300 --trace=cuda,nvtx --cuda-graph-trace=node -- python3 $F/hf/gpt2_train.py --nvtx --compile --compile-mode reduce-overhead --warmup 3 ;;
generate) prof gpt2_generate_nvtx 150 --trace=cuda,nvtx -- python3 $F/hf/gpt2_generate.py --nvtx ;;
generate26) prof gpt2_generate_flags2026 200 $G26B -- python3 $F/hf/gpt2_generate.py ;;
cnn26) prof cnn_flags2026 200 $G26B -- python3 $F/hf/cnn_train.py ;;
cnn_amp) prof cnn_amp_no_nvtx 150 --trace=cuda -- python3 $F/hf/cnn_train.py --amp ;;
recipe_iter) prof recipe_iteration_capture 150 -w true -t cuda,nvtx,osrt,cudnn,cublas -s cpu --capture-range=cudaProfilerApi --capture-range-end=stop --cudabacktrace=all -x true -- python3 $F/hf/recipe_train.py --recipe iteration ;;
recipe_epoch) prof recipe_epoch_nvtx 150 --trace=cuda,nvtx -- python3 $F/hf/recipe_train.py --recipe epoch ;;
recipe_batch) prof recipe_batch_nvtx 150 --trace=cuda,nvtx -- python3 $F/hf/recipe_train.py --recipe batch ;;
loader) prof loader_workers_nvtx 150 --trace=cuda,nvtx,osrt -- python3 $F/hf/loader_train.py ;;
loader26) prof loader_workers_flags2026 200 $G26B -- python3 $F/hf/loader_train.py ;;
lightning) prof lightning_nvtx 200 --trace=cuda,nvtx -- python3 $F/hf/lightning_train.py --nvtx ;;
lightning26) prof lightning_flags2026 240 $G26B -- python3 $F/hf/lightning_train.py ;;
lightning_emit) prof lightning_emit_nvtx 240 --trace=cuda,nvtx -- python3 $F/hf/lightning_train.py --emit-nvtx ;;
lightning_accum) prof lightning_accum_nvtx 240 --trace=cuda,nvtx -- python3 $F/hf/lightning_train.py --nvtx --accumulate 2 --precision bf16-mixed ;;
lightning_accum26) prof lightning_accum_flags2026 240 $G26B -- python3 $F/hf/lightning_train.py --accumulate 2 --precision bf16-mixed ;;
ddp_ranks) if [ $SECONDS -le $BUDGET ]; then echo "=== gpt2_ddp2_rank files at ${SECONDS}s"
   timeout 240 torchrun --standalone --nproc_per_node 2 --no-python nsys profile --trace=cuda,nvtx --force-overwrite=true \
     -o "$W/gpt2_ddp2_rank%q{LOCAL_RANK}" python3 $F/hf/gpt2_train.py --ddp --nvtx > $W/ddp_ranks.run.log 2>&1
   echo "=== gpt2_ddp2_rank files rc=$? at ${SECONDS}s"; tail -n 15 $W/ddp_ranks.run.log
   for r in 0 1; do [ -s $W/gpt2_ddp2_rank$r.nsys-rep ] && { export_job gpt2_ddp2_rank$r & PIDS+=($!); }; done; fi ;;
kbjiang) prof kbjiang 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/shibuki_meta:$F/kbjiang/cs336-basics:$F/kbjiang:$SITE python3 -m cs336_systems.benchmarking_script --d-model 512 --d-ff 2048 --num-layers 4 --num-heads 8 --context-length 256 --batch-size 4 --warmup --warmup-steps 3 --train-steps 5 --backward ;;
kbjiang_ddp) prof kbjiang_ddp2 300 --trace=cuda,nvtx -- env PYTHONPATH=$F/shibuki_meta:$F/kbjiang_ddp/cs336-basics:$F/kbjiang_ddp:$SITE python3 -m cs336_systems.ddp_overlap_bucketed_instrumented --world-size 2 --layers 4 --context 256 --batch-size 4 --warmup 2 --iters 5 --bucket-mb 25 ;;
dfrumkin) prof dfrumkin 240 --trace=cuda,nvtx -- bash -c "cd $F/dfrumkin/cs336_systems && exec env PYTHONPATH=$F/dfrumkin/cs336-basics:$SITE python3 benchmark.py forward_only=false use_optimizer=true model.d_model=512 model.d_ff=2048 model.num_layers=4 model.num_heads=8 num_warmup_steps=3 num_measurement_steps=5" ;;
chargiway) prof chargiway 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/chargiway_meta:$F/chargiway/cs336-basics:$SITE python3 -m cs336_basics.benchmark --size small --num_layers 4 --context_length 256 --batch_size 4 --device cuda --warmup 3 --steps 5 --mode fwd_bwd ;;
chargiway_run) prof chargiway_run 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/chargiway_meta:$F/chargiway/cs336-basics:$SITE python3 -m cs336_basics.profile_runner --size small --context_length 256 --batch_size 4 --device cuda --mode train ;;
salzhu_ddp) prof salzhu_ddp2 300 --trace=cuda,nvtx -- env PYTHONPATH=$F/salzhu/cs336-basics:$SITE python3 $F/salzhu/cs336_systems/benchmark_ddp.py --bucketed 0 ;;
tobin) prof tobin 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/tobin/cs336-basics:$SITE python3 $F/tobin/scripts/benchmark_transformer.py --model-size small --context-length 256 --batch-size 4 --mode train_step --warmup-steps 2 --measure-steps 4 --precision fp16 --nvtx ;;
niu) prof niu 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/niu:$SITE python3 $F/niu/cs336_systems/benchmarking_script/nsys_analysis/model_forward.py ;;
tobin26) prof tobin_flags2026 240 $G26B -- env PYTHONPATH=$F/tobin/cs336-basics:$SITE python3 $F/tobin/scripts/benchmark_transformer.py --model-size small --context-length 256 --batch-size 4 --mode train_step --warmup-steps 2 --measure-steps 4 --precision fp16 --nvtx ;;
ddp_ranks26) if [ $SECONDS -le $BUDGET ]; then echo "=== gpt2_ddp2_rank files, 2026 options, at ${SECONDS}s"
   timeout 240 torchrun --standalone --nproc_per_node 2 --no-python nsys profile $G26B --force-overwrite=true \
     -o "$W/gpt2_ddp2_flags2026_rank%q{LOCAL_RANK}" python3 $F/hf/gpt2_train.py --ddp --steps 3 > $W/ddp_ranks26.run.log 2>&1
   echo "=== gpt2_ddp2_flags2026_rank files rc=$? at ${SECONDS}s"; tail -n 15 $W/ddp_ranks26.run.log
   for r in 0 1; do [ -s $W/gpt2_ddp2_flags2026_rank$r.nsys-rep ] && { export_job gpt2_ddp2_flags2026_rank$r & PIDS+=($!); }; done; fi ;;
linyun) prof linyun 200 --trace=cuda,nvtx -- bash -c "cd $F/linyun && exec env PYTHONPATH=$F/linyun/cs336-basics:$F/linyun:$SITE python3 -m cs336_systems.benchmark_nvtx --model-size small --context-length 128 --batch-size 4 --warmup-steps 3 --measurement-steps 5 --annotate-blocks --mixed-precision bf16" ;;
duoan) prof duoan 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/duoan_meta:$F/duoan/cs336-basics:$F/duoan:$SITE python3 -m cs336_systems.memory_block_profile --size small --context-length 128 --batch-size 4 ;;
jerome) prof jerome 200 --trace=cuda,nvtx -- bash -c "cd $F/jerome && exec env PYTHONPATH=$F/jerome/cs336-basics:$F/jerome:$SITE python3 -m cs336_systems.benchmark_basics" ;;
# Checked against the reference by hand, not shipped (6.4 MB packed):
liz_ddp26) prof liz_ddp2_flags2026 300 $G26 -- bash -c "cd $F/liz && exec env PYTHONPATH=$F/liz/cs336-basics:$F/liz:$SITE python3 cs336_systems/assignment_53_overlapped_ddp.py" ;;
# The reports students committed to their repositories (.foreign/reps/), exported as they are:
eval) prof gpt2_eval_nvtx 150 --trace=cuda,nvtx -- python3 $F/hf/loop_variants_train.py --nvtx --eval-every 2 --clip ;;
eval26) prof gpt2_eval_flags2026 200 $G26B -- python3 $F/hf/loop_variants_train.py --eval-every 2 --clip --steps 4 ;;
nosync) prof gpt2_nosync_nvtx 150 --trace=cuda,nvtx -- python3 $F/hf/loop_variants_train.py --nvtx --no-sync --side-stream ;;
nosync26) prof gpt2_nosync_flags2026 200 $G26B -- python3 $F/hf/loop_variants_train.py --no-sync --side-stream --steps 4 ;;
dp) prof gpt2_dataparallel_nvtx 200 --trace=cuda,nvtx -- python3 $F/hf/loop_variants_train.py --nvtx --data-parallel ;;
dp26) prof gpt2_dataparallel_flags2026 240 $G26B -- python3 $F/hf/loop_variants_train.py --data-parallel --steps 4 ;;
gan) prof gan_nvtx 150 --trace=cuda,nvtx -- python3 $F/hf/gan_train.py --nvtx ;;
gan26) prof gan_flags2026 200 $G26B -- python3 $F/hf/gan_train.py --steps 4 ;;
gan_nonvtx) prof gan_no_nvtx 150 --trace=cuda -- python3 $F/hf/gan_train.py ;;
muon) prof gpt2_muon_nvtx 150 --trace=cuda,nvtx -- python3 $F/hf/loop_variants_train.py --nvtx --muon ;;
muon26) prof gpt2_muon_flags2026 200 $G26B -- python3 $F/hf/loop_variants_train.py --muon --steps 4 ;;
muon_nonvtx) prof gpt2_muon_no_nvtx 150 --trace=cuda -- python3 $F/hf/loop_variants_train.py --muon ;;
oib) prof gpt2_optim_in_bwd_nvtx 150 --trace=cuda,nvtx -- python3 $F/hf/loop_variants_train.py --nvtx --optimizer-in-backward ;;
oib26) prof gpt2_optim_in_bwd_flags2026 200 $G26B -- python3 $F/hf/loop_variants_train.py --optimizer-in-backward --steps 4 ;;
oib_nonvtx) prof gpt2_optim_in_bwd_no_nvtx 150 --trace=cuda -- python3 $F/hf/loop_variants_train.py --optimizer-in-backward ;;
harumichi) prof harumichi 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/shibuki_meta:$F/harumichi_meta:$F/harumichi_a1:$F/harumichi:$SITE python3 $F/harumichi/cs336_systems/cmd/run_profiling.py ;;
harumichi26) prof harumichi_flags2026 240 $G26B -- env PYTHONPATH=$F/shibuki_meta:$F/harumichi_meta:$F/harumichi_a1:$F/harumichi:$SITE python3 $F/harumichi/cs336_systems/cmd/run_profiling.py ;;
hyperion) prof hyperion 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/shibuki_meta:$F/hyperion/cs336-basics:$F/hyperion:$SITE python3 -m cs336_systems.basic_lm_nsys_profile_run --sizes small medium --context_length 128 --batch_size 4 --steps 14 ;;
cherryni) prof cherryni 200 --trace=cuda,nvtx -- bash -c "cd $F/cherryni && exec env PYTHONPATH=$F/cherryni/cs336-basics:$SITE python3 cs336_systems/benchmark_nvtx.py --model_type small --context_length 128 --mixed_precision --warmup_steps 3 --benchmark_steps 5" ;;
wedsonlin) prof wedsonlin 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/wedsonlin/cs336-basics:$SITE python3 $F/wedsonlin/cs336_systems/nsys_profile.py --context_length 128 --d_model 768 --d_ff 3072 --num_layers 12 --num_heads 12 --model_name small --warmup-steps 3 --execution-steps 5 --autocast true ;;
wedsonlin_flash) prof wedsonlin_flash 300 --trace=cuda,nvtx -- env PYTHONPATH=$F/wedsonlin/cs336-basics:$F/wedsonlin:$SITE python3 -m cs336_systems.attention_benchmark --suite flash --seq-lens 1024 --dims 64 --dtypes bf16 --backends pytorch,triton --batch-size 1 --warmup-ms 50 --rep-ms 100 --output /tmp/fw/wedsonlin_flash.jsonl ;;
shanning_ddp) prof shanning_ddp2 240 --trace=cuda,nvtx -- env PYTHONPATH=$F/shibuki_meta:$F/shanning/cs336-basics:$F/shanning:$SITE python3 $F/shanning/benchmarks/benchmark_ddp.py --model-size small --world-size 2 --seq-length 128 --num-iterations 5 --num-warmup 2 --ddp-mode overlap ;;
stav) prof stav 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/stav/cs336-basics:$SITE python3 $F/stav/cs336_systems/base_bench.py --device cuda --context_length 128 --d_model 512 --num_layers 6 --num_heads 8 --d_ff 2048 --batch_size 8 --warmup_steps 3 --evaluation_steps 5 --mixed_precision --checkpoint_group_size 2 ;;
stav_compile) prof stav_compile 300 --trace=cuda,nvtx -- env PYTHONPATH=$F/stav/cs336-basics:$SITE python3 $F/stav/cs336_systems/base_bench.py --device cuda --context_length 128 --d_model 512 --num_layers 6 --num_heads 8 --d_ff 2048 --batch_size 8 --warmup_steps 3 --evaluation_steps 5 --mixed_precision --compile ;;
stav26) prof stav_flags2026 240 $G26B -- env PYTHONPATH=$F/stav/cs336-basics:$SITE python3 $F/stav/cs336_systems/base_bench.py --device cuda --context_length 128 --d_model 512 --num_layers 6 --num_heads 8 --d_ff 2048 --batch_size 8 --warmup_steps 3 --evaluation_steps 5 --mixed_precision --checkpoint_group_size 2 ;;
zero) prof gpt2_ddp2_zero_nvtx 240 --trace=cuda,nvtx -- torchrun --standalone --nproc_per_node 2 $F/hf/gpt2_train.py --ddp --zero --nvtx ;;
zero26) prof gpt2_ddp2_zero_flags2026 240 $G26B -- torchrun --standalone --nproc_per_node 2 $F/hf/gpt2_train.py --ddp --zero --steps 3 ;;
varlen) prof gpt2_varlen_nvtx 150 --trace=cuda,nvtx -- python3 $F/hf/dynamic_train.py --nvtx --varlen --steps 8 ;;
varlen26) prof gpt2_varlen_flags2026 200 $G26B -- python3 $F/hf/dynamic_train.py --varlen --steps 6 ;;
varlen_nonvtx) prof gpt2_varlen_no_nvtx 150 --trace=cuda -- python3 $F/hf/dynamic_train.py --varlen --steps 8 ;;
moe) prof moe_nvtx 150 --trace=cuda,nvtx -- python3 $F/hf/dynamic_train.py --nvtx --moe ;;
moe26) prof moe_flags2026 200 $G26B -- python3 $F/hf/dynamic_train.py --moe --steps 4 ;;
moe_nonvtx) prof moe_no_nvtx 150 --trace=cuda -- python3 $F/hf/dynamic_train.py --moe ;;
rl) prof gpt2_rl_nvtx 150 --trace=cuda,nvtx -- python3 $F/hf/dynamic_train.py --nvtx --rl ;;
rl26) prof gpt2_rl_flags2026 200 $G26B -- python3 $F/hf/dynamic_train.py --rl --steps 4 ;;
capture) prof gpt2_nvtx_capture 150 --trace=cuda,nvtx --capture-range=nvtx --nvtx-capture=profile -e NSYS_NVTX_PROFILER_REGISTER_ONLY=0 -- python3 $F/hf/dynamic_train.py --nvtx --profile-range ;;
sweep) prof gpt2_sweep_nvtx 200 --trace=cuda,nvtx -- python3 $F/hf/dynamic_train.py --nvtx --sweep-layers 2,6 --steps 5 ;;
sweep26) prof gpt2_sweep_flags2026 240 $G26B -- python3 $F/hf/dynamic_train.py --sweep-layers 2,6 --steps 4 ;;
tp) prof tp2_nvtx 240 --trace=cuda,nvtx -- torchrun --standalone --nproc_per_node 2 $F/hf/tp_train.py --nvtx ;;
tp26) prof tp2_flags2026 240 $G26B -- torchrun --standalone --nproc_per_node 2 $F/hf/tp_train.py --steps 4 ;;
yzhang) prof yzhang 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/yzhang/cs336-basics:$F/yzhang:$SITE python3 -m cs336_systems.nsight_profile --mode train_step --model_size small --context_length 128 --batch_size 4 --warmup_steps 2 --profile_steps 5 --device cuda ;;
yzhang26) prof yzhang_flags2026 240 $G26B -- env PYTHONPATH=$F/yzhang/cs336-basics:$F/yzhang:$SITE python3 -m cs336_systems.nsight_profile --mode train_step --model_size small --context_length 128 --batch_size 4 --warmup_steps 2 --profile_steps 5 --device cuda ;;
gzsiceberg) prof gzsiceberg 200 --trace=cuda,nvtx -- bash -c "cd /tmp/fw && exec env PYTHONPATH=$F/gzsiceberg/cs336-basics:$SITE python3 $F/gzsiceberg/cs336_systems/benchmarking.py -a 2 -w 2 -t 3 --back --opt --context-length 128 --autocast -m 1 -o /tmp/fw/gzsiceberg_results.md" ;;
xiaolin) prof xiaolin 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/xiaolin:$SITE python3 $F/xiaolin/scripts/benchmark.py --context-length 128 --d-model 768 --num-layers 12 --num-heads 12 --d-ff 3072 --batch-size 4 --warmup-steps 3 --num-steps 5 --backward --optimizer --mixed-precision ;;
xiaolin_compile) prof xiaolin_compile 300 --trace=cuda,nvtx -- env PYTHONPATH=$F/xiaolin:$SITE python3 $F/xiaolin/scripts/benchmark.py --context-length 128 --d-model 768 --num-layers 12 --num-heads 12 --d-ff 3072 --batch-size 4 --warmup-steps 3 --num-steps 5 --backward --optimizer --mixed-precision --compile ;;
aimetrics) prof aimetrics 200 --trace=cuda,nvtx -- bash -c "cd /tmp/fw && exec env PYTHONPATH=$F/aimetrics/cs336-basics:$SITE python3 $F/aimetrics/benchmarking.py --model_size small --seq_len 128 --batch_size 4 --warmup_steps 2 --measure_steps 5 --mode train --nvtx --bf16 --device cuda" ;;
aimetrics26) prof aimetrics_flags2026 240 $G26B -- bash -c "cd /tmp/fw && exec env PYTHONPATH=$F/aimetrics/cs336-basics:$SITE python3 $F/aimetrics/benchmarking.py --model_size small --seq_len 128 --batch_size 4 --warmup_steps 2 --measure_steps 5 --mode train --nvtx --bf16 --device cuda" ;;
shanning_model) prof shanning_model 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/shibuki_meta:$F/shanning/cs336-basics:$F/shanning:$SITE python3 $F/shanning/benchmarks/benchmark_model.py 2 small ;;
ctxsweep) prof gpt2_ctxsweep_nvtx 150 --trace=cuda,nvtx -- python3 $F/hf/dynamic_train.py --nvtx --varlen --lengths 128,128,128,128,128,128,512,512,512,512,512,512 --steps 10 ;;
ctxsweep_nonvtx) prof gpt2_ctxsweep_no_nvtx 150 --trace=cuda -- python3 $F/hf/dynamic_train.py --varlen --lengths 128,128,128,128,128,128,512,512,512,512,512,512 --steps 10 ;;
window) prof gpt2_window_nvtx 150 --trace=cuda,nvtx --delay=20 --duration=3 -- python3 $F/hf/gpt2_train.py --nvtx --steps 3000 ;;
window26) prof gpt2_window_flags2026 200 $G26B --delay=25 --duration=3 -- python3 $F/hf/gpt2_train.py --steps 3000 ;;
window_nonvtx) prof gpt2_window_no_nvtx 150 --trace=cuda --delay=20 --duration=3 -- python3 $F/hf/gpt2_train.py --steps 3000 ;;
split) prof split_lm_nvtx 150 --trace=cuda,nvtx -- python3 $F/hf/model_parallel_train.py --nvtx ;;
split_accum) prof split_lm_accum_nvtx 150 --trace=cuda,nvtx -- python3 $F/hf/model_parallel_train.py --nvtx --micro-batches 4 ;;
split26) prof split_lm_flags2026 200 $G26B -- python3 $F/hf/model_parallel_train.py --steps 4 ;;
split_nonvtx) prof split_lm_no_nvtx 150 --trace=cuda -- python3 $F/hf/model_parallel_train.py ;;
subha) prof s2026_subha 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/subha/cs336-basics:$SITE python3 $F/subha/cs336_systems/profile_train.py --size small --context-length 128 --mode full --batch-size 4 --warmup 3 --steps 5 ;;
orrzohar) prof s2025_orrzohar 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/orrzohar_meta:$F/orrzohar/cs336-basics:$F/orrzohar:$SITE python3 -m cs336_systems.nsys_benchmarking --model-size small --seq-len 256 --batch-size 4 --n-warmup 3 --n-measure 5 --run-optimizer ;;
luke) prof s2025_luke 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/luke_meta:$F/luke/cs336-basics:$F/luke:$SITE python3 -m cs336_systems.benchmark --d_model 768 --num_heads 12 --d_ff 3072 --n_layers 12 --context_length 256 --steps 8 --warm_up_steps 3 --autocast ;;
luke_jit) prof s2025_luke_compile 300 --trace=cuda,nvtx -- env PYTHONPATH=$F/luke_meta:$F/luke/cs336-basics:$F/luke:$SITE python3 -m cs336_systems.benchmark --d_model 768 --num_heads 12 --d_ff 3072 --n_layers 12 --context_length 256 --steps 8 --warm_up_steps 3 --autocast --jit ;;
onlyhero) prof s2025_onlyhero 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/onlyhero_meta:$F/onlyhero:$SITE python3 $F/onlyhero/cs336_systems/scripts/benchmark_e2e.py --model-size small --seq-len 128 --batch-size 4 --num-warmup 3 --num-iters 5 --backward --enable-nvtx --enable-mixed-precision --precision_dtype bf16 ;;
lolcoder_ddp) prof s2025_lolcoder_ddp2 300 --trace=cuda,nvtx -- env PYTHONPATH=$F/lolcoder_meta:$F/lolcoder/cs336-basics:$F/lolcoder:$SITE python3 $F/lolcoder/cs336_systems/dist_training/benchmark_ddp.py --method overlap --world-size 2 ;;
subha26) prof s2026_subha_flags2026 240 $G26B -- env PYTHONPATH=$F/subha/cs336-basics:$SITE python3 $F/subha/cs336_systems/profile_train.py --size small --context-length 128 --mode full --batch-size 4 --warmup 3 --steps 5 ;;
ddp_rank0) prof gpt2_ddp2_nvtx_on_rank0 240 --trace=cuda,nvtx -- torchrun --standalone --nproc_per_node 2 $F/hf/gpt2_train.py --ddp --nvtx --nvtx-rank0 ;;
huster) prof s2025_huster 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/huster/cs336-basics:$SITE python3 $F/huster/cs336_systems/benchmark.py --model-size small --context-length 128 --batch-size 4 --warmup 3 --steps 5 --backward --optimizer --mixed-precision bf16 --nvtx ;;
huster_attn) prof s2025_huster_attn 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/huster/cs336-basics:$SITE python3 $F/huster/cs336_systems/benchmark_attention.py --d-models 16,64 --seq-lens 256,1024,4096,8192 --warmup 5 --iters 20 --nvtx --result-file /tmp/fw/huster_attn.csv ;;
hawk) prof s2026_hawk 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/hawk/cs336-basics:$SITE python3 $F/hawk/cs336_systems/benchmark.py --model-size small --mode all --context-length 128 --batch-size 4 --warmup 3 --steps 5 --dtype float32 ;;
tianshi) prof s2025_tianshi 200 --trace=cuda,nvtx -- bash -c "cd /tmp/fw && exec env PYTHONPATH=$F/tianshi_meta:$F/tianshi:$SITE python3 $F/tianshi/cs336_systems/nsp.py -c $F/tianshi_small_ctx128.yml" ;;
tianshi_compile) prof s2025_tianshi_compile 300 --trace=cuda,nvtx -- bash -c "cd /tmp/fw && exec env PYTHONPATH=$F/tianshi_meta:$F/tianshi:$SITE python3 $F/tianshi/cs336_systems/nsp.py -c $F/tianshi_small_ctx128.yml --use_jit" ;;
yusheng_ddp) prof s2025_yusheng_ddp2 300 --trace=cuda,nvtx -- env PYTHONPATH=$F/yusheng_meta:$F/yusheng/cs336-basics:$F/yusheng:$SITE python3 $F/yusheng/cs336_systems/benchmark_ddp.py ;;
hanfa_attn) prof s2025_hanfa_attn 240 --trace=cuda,nvtx -- env PYTHONPATH=$F/hanfa_meta:$F/hanfa/cs336-basics:$F/hanfa:$SITE python3 -m cs336_systems.benchmark_attn ;;
wuyh) prof s2025_wuyh 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/wuyh/cs336-basics:$SITE python3 $F/wuyh/cs336_systems/profile_script.py --model_size small --context_length 128 --batch_size 4 ;;
victor) prof s2025_victor 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/victor/cs336-basics:$SITE python3 -m cs336_basics.benchmarking_script --mode training --precision fp32 --autocast-dtype bf16 --batch-size 4 --context-length 256 --vocab-size 10000 --warmup-steps 3 --measure-steps 5 --enable-nvtx --annotate-attention-nvtx ;;
dothere) prof s2025_dothere_capture 200 --trace=cuda,nvtx --capture-range=cudaProfilerApi --capture-range-end=stop -- env PYTHONPATH=$F/dothere/cs336-basics:$SITE python3 $F/dothere/cs336_systems/benchmarking_script_cuda.py --model_size small --context_length 256 --batch_size 4 --mode train --warmup_steps 5 --num_steps 10 ;;
i0g4n_fwd) prof s2025_i0g4n_fwd 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/i0g4n_meta:$F/i0g4n/cs336-basics:$F/i0g4n:$SITE python3 -m cs336_systems.benchmark.nsys_profile --mode forward --context-length 256 --d-model 768 --num-layers 12 --num-heads 12 --d-ff 3072 --batch-size 4 --warmup-steps 5 --timed-steps 10 ;;
cgfy_fp16) prof s2025_cgfy_fp16 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/cgfy_meta:$F/cgfy/cs336-basics:$SITE python3 $F/cgfy/benchmark.py --model-size small --context-length 128 --batch-size 4 --mode train-step --warmup-steps 3 --measure-steps 5 --mixed-precision --mp-dtype fp16 --enable-nvtx ;;
victor_compile) prof s2025_victor_compile 300 --trace=cuda,nvtx -- env PYTHONPATH=$F/victor/cs336-basics:$SITE python3 -m cs336_basics.benchmarking_script --compare-compile --compile-mode default --batch-size 8 --context-length 128 --vocab-size 10000 --d-model 256 --num-layers 4 --num-heads 8 --d-ff 1024 --warmup-steps 3 --measure-steps 5 --enable-nvtx ;;
cliffkai_bf16) prof s2025_cliffkai_bf16 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/cliffkai/cs336-basics:$SITE python3 $F/cliffkai/cs336_systems/benchmark.py --model_size small --context_length 128 --mode bwd --mixed_precision --warmup_steps 5 --steps 10 ;;
miyaal_fp16mem) prof s2025_miyaal_fp16_mem 200 --trace=cuda,nvtx -- bash -c "mkdir -p /tmp/fw/miyaal/mem_prof && cd /tmp/fw/miyaal && exec env PYTHONPATH=$F/miyaal/cs336-basics:$SITE python3 $F/miyaal/cs336_systems/benchmark.py --mode full_training --model-size small --device cuda --dtype float16 --memory-profiling --warmup-steps 5 --num-steps 10 --vocab-size 10000 --batch-size 4 --context-length 128 --rope-theta 10000.0" ;;
he0871_26) prof s2026_he0871_flags 200 --trace=cuda,cudnn,cublas,osrt,nvtx --pytorch=autograd-shapes-nvtx --cudabacktrace=all --python-backtrace=cuda --gpu-metrics-devices=0 -- bash -c "cd $F/he0871_meta && exec env PYTHONPATH=$F/he0871/cs336-basics:$SITE python3 $F/he0871/cs336_systems/benchmark.py" \
   || prof s2026_he0871_flags 200 --trace=cuda,cudnn,cublas,osrt,nvtx --pytorch=autograd-shapes-nvtx -- bash -c "cd $F/he0871_meta && exec env PYTHONPATH=$F/he0871/cs336-basics:$SITE python3 $F/he0871/cs336_systems/benchmark.py" ;;
powergiant) prof s2026_powergiant 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/powergiant_meta:$F/powergiant/cs336-basics:$F/powergiant:$SITE python3 -m cs336_systems.benchmarking_script ;;
banparth_bf16) prof s2026_banparth_bf16 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/banparth_meta:$F/banparth/cs336-basics:$F/banparth:$SITE python3 -m cs336_systems.scripts.benchmarking --model_size small --context_length 128 --mode optimizer --cast bf16 ;;
miyaal_fwd) prof s2025_miyaal_fwd_bf16 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/miyaal/cs336-basics:$SITE python3 $F/miyaal/cs336_systems/benchmark.py --mode forward --model-size small --device cuda --dtype bfloat16 --warmup-steps 5 --num-steps 10 --vocab-size 10000 --batch-size 4 --context-length 256 ;;
# students9 runs the one-GPU jobs of the ninth batch, most confident first; leo_ddp needs 2 GPUs and runs on its own.
brandon) prof s2025_brandon 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/brandon_meta:$F/brandon/cs336-basics:$F/brandon:$SITE python3 -m cs336_systems.profile --size sm --seq-len 128 --batch-size 4 --mode train --warmup 5 --steps 3 --annotate-sdpa ;;
leo) prof s2025_leo 150 --trace=cuda,nvtx --sample=none --cpuctxsw=none -- env PYTHONPATH=$F/leo/cs336-basics:$SITE python3 $F/leo/cs336_systems/nsys_profile.py --model_size small --context_length 128 --batch_size 4 --mode train --warmup_steps 2 --measure_steps 5 --annotate_attention ;;
yyin) prof s2025_yyin 200 --trace=cuda,nvtx --python-backtrace=cuda -- env PYTHONPATH=$F/yyin_meta:$SITE python3 $F/yyin/benchmark/benchmark_transformer.py --context_length 128 --d_model 768 --num_layers 12 --num_heads 12 --d_ff 3072 --batch_size 4 --num_warmups 3 --num_trials 3 --profile_compute || prof s2025_yyin 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/yyin_meta:$SITE python3 $F/yyin/benchmark/benchmark_transformer.py --context_length 128 --d_model 768 --num_layers 12 --num_heads 12 --d_ff 3072 --batch_size 4 --num_warmups 3 --num_trials 3 --profile_compute ;;
tiden) prof s2025_tiden 240 --python-sampling=true --python-backtrace=cuda --sample=cpu --cpuctxsw=process-tree -- bash -c "mkdir -p /tmp/fw/tiden && cd /tmp/fw/tiden && exec env PYTHONPATH=$F/tiden_meta:$F/tiden/cs336-basics:$F/tiden:$SITE python3 -m cs336_systems.benchmark single --model_size small --context_length 128 --device cuda:0 --num_warmup 10 --num_steps 3 --mode both --profile --trace_output /tmp/fw/tiden/trace.json" || prof s2025_tiden 240 --trace=cuda,nvtx,osrt -- bash -c "mkdir -p /tmp/fw/tiden && cd /tmp/fw/tiden && exec env PYTHONPATH=$F/tiden_meta:$F/tiden/cs336-basics:$F/tiden:$SITE python3 -m cs336_systems.benchmark single --model_size small --context_length 128 --device cuda:0 --num_warmup 10 --num_steps 3 --mode both --profile --trace_output /tmp/fw/tiden/trace.json" ;;
sungdk) prof s2025_sungdk 240 --trace=cuda,nvtx -- bash -c "mkdir -p /tmp/fw/sungdk && cd /tmp/fw/sungdk && exec env TORCH_DISABLE_ADDR2LINE=1 PYTHONPATH=$F/sungdk_meta:$F/sungdk/cs336-basics:$F/sungdk:$SITE python3 -c \"from cs336_systems import benchmark as b; b.device = 'cuda'; b.run_benchmark_pass('small', context_length=128, warmup_steps=5)\"" ;;
leo_ddp) prof s2025_leo_ddp2 300 --trace=cuda,nvtx --sample=none --cpuctxsw=none -- bash -c "mkdir -p /tmp/fw/leo_ddp/run && cd /tmp/fw/leo_ddp/run && exec env PYTHONPATH=$F/leo_meta:$F/leo/cs336-basics:$F/leo:$SITE python3 $F/leo/cs336_systems/ddp_overlap_individual_parameters.py --nvtx --impl overlap --warmup 2 --steps 5 --out-dir /tmp/fw/leo_ddp/out" ;;
students9) for j in brandon leo yyin tiden sungdk; do eval "$(sed -n "s/^$j) \(.*\) ;;\$/\1/p" $F/sweep.sh)"; done ;;
# students10 runs the tenth batch's jobs.
xinghao) prof s2025_xinghao 200 --trace=cuda,nvtx --cuda-memory-usage=true -- bash -c "mkdir -p /tmp/fw/xinghao && cd /tmp/fw/xinghao && exec env TORCH_DISABLE_ADDR2LINE=1 PYTHONPATH=$F/xinghao_meta:$F/xinghao/cs336-basics:$F/xinghao:$SITE python3 -m cs336_systems.benchmark --device cuda --dtype float32 --size small --batch 4 --seq_len 128 --warmup_steps 5 --pass_type both --test_steps 5 --use_bf16 --use_memory_record" || prof s2025_xinghao 200 --trace=cuda,nvtx -- bash -c "mkdir -p /tmp/fw/xinghao && cd /tmp/fw/xinghao && exec env TORCH_DISABLE_ADDR2LINE=1 PYTHONPATH=$F/xinghao_meta:$F/xinghao/cs336-basics:$F/xinghao:$SITE python3 -m cs336_systems.benchmark --device cuda --dtype float32 --size small --batch 4 --seq_len 128 --warmup_steps 5 --pass_type both --test_steps 5 --use_bf16 --use_memory_record" ;;
inkling) prof s2025_inkling 200 --trace=cuda,nvtx -- bash -c "mkdir -p /tmp/fw/inkling && cd /tmp/fw/inkling && exec env TORCH_DISABLE_ADDR2LINE=1 PYTHONPATH=$F/inkling/cs336-basics:$SITE python3 $F/inkling/benchmarking.py --device cuda --vocab-size 10000 --d-model 768 --d-ff 3072 --num-layers 12 --num-heads 12 --context-length 128 --warmup-steps 3 --measurement-steps 3" ;;
students10) for j in xinghao inkling; do eval "$(sed -n "s/^$j) \(.*\) ;;\$/\1/p" $F/sweep.sh)"; done ;;
# students11 runs the eleventh batch's jobs.
a7654) prof s2026_a7654 200 --trace=cuda,nvtx -- bash -c "mkdir -p /tmp/fw/a7654/reports && cd /tmp/fw/a7654 && exec env TORCH_DISABLE_ADDR2LINE=1 PYTHONPATH=$F/a7654/cs336-basics:$SITE python3 $F/a7654/cs336_systems/benchmark/benchmarking.py --config $F/a7654_meta/small_ctx256_full_step.yaml" ;;
luoluo) prof s2026_luoluo 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/luoluo/cs336-basics:$SITE python3 $F/luoluo/cs336_systems/benchmark/benchmark_script.py --model_name small --mode full_train --warmup_steps 2 --test_steps 3 --context_length 256 ;;
chenalex) prof s2025_chenalex 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/chenalex/cs336-basics:$SITE python3 $F/chenalex/cs336_systems/benchmark_script.py --d_model 768 --n_layers 12 --n_heads 12 --d_ff 3072 --vocab_size 10000 --context_length 128 --batch_size 4 --warmup_steps 3 --n_steps 5 --with_optimizer --use_nvtx --use_mixed_precision ;;
students11) for j in a7654 luoluo chenalex; do eval "$(sed -n "s/^$j) \(.*\) ;;\$/\1/p" $F/sweep.sh)"; done ;;
# students12 runs the twelfth batch's one-GPU jobs; ball_ddp needs 2 GPUs (mp.spawn, nccl) and runs on its own via students12ddp.
krish) prof s2025_krish 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/krish/cs336-basics:$SITE python3 $F/krish/cs336_systems/benchmarking_script.py --model_size small --context_length 256 --warmup_steps 5 --num_steps 10 --mode full_step --mixed_precision ;;
charlie) prof s2025_charlie 240 --trace=cuda,nvtx -- bash -c "mkdir -p /tmp/fw/charlie/data && cd /tmp/fw/charlie && exec env TORCH_DISABLE_ADDR2LINE=1 PYTHONPATH=$F/charlie/cs336-basics:$SITE python3 $F/charlie/cs336_systems/benchmark.py --models small --context_lengths 128 256 --benchmark_steps 5" ;;
bupt) prof s2025_bupt 150 --trace=cuda,nvtx -- bash -c "mkdir -p /tmp/fw/bupt && cd /tmp/fw/bupt && exec env TORCH_DISABLE_ADDR2LINE=1 PYTHONPATH=$F/bupt/cs336-basics:$SITE python3 $F/bupt/cs336_systems/benchmark.py --optimizer_step" ;;
ball_ddp) prof s2025_ball_ddp2 300 --trace=cuda,nvtx -- bash -c "mkdir -p /tmp/fw/ball_ddp && cd /tmp/fw/ball_ddp && exec python3 $F/ball/cs336_systems/ddp_overlap_individual_parameters_benchmarking.py" ;;
students12) for j in krish charlie bupt; do eval "$(sed -n "s/^$j) \(.*\) ;;\$/\1/p" $F/sweep.sh)"; done ;;
students12ddp) for j in ball_ddp; do eval "$(sed -n "s/^$j) \(.*\) ;;\$/\1/p" $F/sweep.sh)"; done ;;
# students13 runs the thirteenth batch's one-GPU jobs; kiri and ball import pandas (kiri also tabulate), shipped as wheels in $F/whl.
kiri) prof s2025_kiri 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/kiri/cs336-basics:$SITE python3 $F/kiri/cs336_systems/benchmarking_script.py --model_size small --seq_len 128 --mode train ;;
ball) prof s2025_ball 150 --trace=cuda,nvtx -- env PYTHONPATH=$SITE python3 $F/ball/cs336_systems/benchmark.py --model_size small --context_length 256 ;;
varno) prof s2025_varno 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/varno/cs336-basics:$SITE python3 $F/varno/cs336_systems/demo_and_benchmark/demo_1.14_nsys_profile.py ;;
students13) for j in kiri ball varno; do eval "$(sed -n "s/^$j) \(.*\) ;;\$/\1/p" $F/sweep.sh)"; done ;;
# students14 runs the fourteenth batch's one-GPU jobs; tianqguo_ddp needs 2 GPUs (spawned processes, nccl) and runs on its own via students14ddp.
radi) prof s2025_radi 150 --trace=cuda,nvtx -- bash -c "mkdir -p /tmp/fw/radi && cd /tmp/fw/radi && exec env TORCH_DISABLE_ADDR2LINE=1 PYTHONPATH=$F/radi/cs336-basics:$SITE python3 $F/radi/cs336_systems/benchmarking_model.py --d_model 768 --d_ff 3072 --num_layers 12 --num_heads 12 --warmup_steps 5 --timing_steps 10 --context_length 128 --backward --adam_step" ;;
staticp) prof s2025_staticp 150 --trace=cuda,nvtx -- bash -c "cd $F/staticp/cs336_systems && exec env PYTHONPATH=$F/staticp/cs336-basics:$SITE python3 $F/staticp/cs336_systems/nsys_profile.py --config small --num-steps 20 --num-warmups 10 --batch-size 1 --sequence-length 128 --annotate_attention --mode train" ;;
tianqguo) prof s2025_tianqguo 150 --trace=cuda,nvtx --python-backtrace=cuda -- env PYTHONPATH=$F/tianqguo_meta:$F/tianqguo/stanford-cs336/assignment1-basics:$F/tianqguo/stanford-cs336/assignment2-systems:$SITE python3 -m cs336_systems.nsight_systems_profiler.profile_model --model-size small --context-length 128 --batch-size 4 --warmup-steps 5 --measure-steps 10 --profile-type training --use-annotated-attention ;;
tianqguo_ddp) prof s2025_tianqguo_ddp2 300 --trace=cuda,nvtx --cuda-memory-usage=true -- env PYTHONPATH=$F/tianqguo_meta:$F/tianqguo/stanford-cs336/assignment1-basics:$SITE python3 $F/tianqguo/stanford-cs336/assignment2-systems/cs336_systems/ddp_overlap_individual/profile_overlap.py --implementation overlap --num-steps 3 ;;
students14) for j in radi staticp tianqguo; do eval "$(sed -n "s/^$j) \(.*\) ;;\$/\1/p" $F/sweep.sh)"; done ;;
students14ddp) for j in tianqguo_ddp; do eval "$(sed -n "s/^$j) \(.*\) ;;\$/\1/p" $F/sweep.sh)"; done ;;
# students15 runs the fifteenth batch's one-GPU jobs (elbiczel, ezej, danz); elbiczel needs elbiczel_meta; ezej imports triton (ships with CUDA torch) via cs336_systems/__init__; danz writes ../benches/ under /tmp/fw/danz.
elbiczel) prof s2025_elbiczel 150 --trace=cuda,nvtx,osrt -- env PYTHONPATH=$F/elbiczel_meta:$F/elbiczel/cs336-basics:$F/elbiczel:$SITE python3 $F/elbiczel/cs336_systems/run_benchmark.py --context_lengths 128 --run_opt --models S ;;
ezej) prof s2025_ezej 150 --trace=cuda,nvtx -- bash -c "cd $F/ezej && exec env PYTHONPATH=$F/ezej/cs336-basics:$SITE python3 -m cs336_systems.nvtx_benchmark" ;;
danz) prof s2025_danz 150 --trace=cuda,nvtx -- bash -c "mkdir -p /tmp/fw/danz/benches /tmp/fw/danz/tasks && cd /tmp/fw/danz/tasks && exec env TORCH_DISABLE_ADDR2LINE=1 PYTHONPATH=$F/danz/Stanford_cource/assignment2-systems-main:$SITE python3 $F/danz/Stanford_cource/assignment2-systems-main/cs336_systems/tasks/benchmarking_script.py --device=cuda --num_iters=15 --warmup_iters=5 --context_length=256" ;;
students15) for j in elbiczel ezej danz; do eval "$(sed -n "s/^$j) \(.*\) ;;\$/\1/p" $F/sweep.sh)"; done ;;
# students16 runs the sixteenth batch's one-GPU job: halfempty (2026; 5 warm-up and 100 measured steps hard-coded, no step ranges, the measured ones inside `profile_region`).
halfempty) prof s2026_halfempty 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/halfempty/cs336-basics:$SITE python3 $F/halfempty/cs336_systems/benchmark.py ;;
# mocibb and mocibbfwd run one 2025 benchmark in its two modes: 5 warm-up iterations with no range, then one range named after the mode (`backward` or `forward`) around `it0` … `it9`.
mocibb) prof s2025_mocibb 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/mocibb/assignment2-systems/cs336-basics:$SITE python3 $F/mocibb/assignment2-systems/benchmark.py --mode backward --device cuda --context_length 256 --warmup_steps 5 --num_steps 10 ;;
mocibbfwd) prof s2025_mocibb_fwd 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/mocibb/assignment2-systems/cs336-basics:$SITE python3 $F/mocibb/assignment2-systems/benchmark.py --mode forward --device cuda --context_length 256 --warmup_steps 5 --num_steps 10 ;;
# students17 jobs (one GPU each): heng (2025; step ranges that hold only the learning-rate schedule, the phases after them), fsc (2026; one measured step, phases in a `step/` namespace, module hooks' `block/<ii>/forward` and `block/<ii>/backward`), melody (2025; `step` in both `warmup` and `measure`).
heng) prof s2025_heng 150 --trace=cuda,nvtx -- bash -c "mkdir -p /tmp/fw/heng/configures /tmp/fw/heng/memory_profile && cp $F/heng/configures/small.yaml /tmp/fw/heng/configures/2.7B.yaml && cd /tmp/fw/heng && exec env PYTHONPATH=$F/heng/cs336-basics:$SITE python3 $F/heng/cs336_systems/nvtx_benchmark.py" ;;
fsc) prof s2026_fsc 150 --trace=cuda,nvtx -- bash -c "mkdir -p /tmp/fw/fsc && cd /tmp/fw/fsc && exec env PYTHONPATH=$F/fsc/cs336-basics:$SITE python3 $F/fsc/cs336_systems/nsys_memory_residuals.py --model-size small --context-length 128 --batch-size 4 --warmup-steps 5 --target-block 0 --output-dir /tmp/fw/fsc" ;;
melody) prof s2025_melody 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/melody_meta:$F/melody/assignment1-basics:$F/melody/assignment2-systems:$SITE python3 $F/melody/assignment2-systems/cs336_systems/benchmark.py --model-size small --context-length 128 --nvtx --nvtx-attn ;;
# students18 jobs (one GPU each): yuanyi and yuanyi_fwd (2025; one `Warmup Phase` around the warm-up iterations, `Step <i>`; the optimizer steps in the warm-up alone), gindij (2025; attention ranges alone, two configurations in one process; its two-entry config file is harness/gindij_configs_small_medium.json, placed as $F/gindij_meta/configs_small_medium.json), lingkai (2025; `step 0` … `step 5`, the last measured, a second forward inside `loss`).
yuanyi) prof s2025_yuanyi 150 --trace=cuda,nvtx -- bash -c "mkdir -p /tmp/fw/yuanyi && cd /tmp/fw/yuanyi && exec env PYTHONPATH=$F/yuanyi:$SITE python3 $F/yuanyi/cs336_systems/bench_transformer_lm_nvtx.py --model_size small --context_length 128 --mode optimizer --warmup_steps 3 --n_steps 5 --profile_memory" ;;
yuanyi_fwd) prof s2025_yuanyi_fwd_bf16 150 --trace=cuda,nvtx -- bash -c "mkdir -p /tmp/fw/yuanyi_fwd && cd /tmp/fw/yuanyi_fwd && exec env PYTHONPATH=$F/yuanyi:$SITE python3 $F/yuanyi/cs336_systems/bench_transformer_lm_nvtx.py --model_size small --context_length 128 --mode forward --mixed_precision --warmup_steps 3 --n_steps 5 --profile_memory" ;;
gindij) prof s2025_gindij 150 --trace=cuda,nvtx -- bash -c "mkdir -p /tmp/fw/gindij && cd /tmp/fw/gindij && exec env PYTHONPATH=$F/gindij/cs336-basics:$SITE python3 $F/gindij/cs336_systems/benchmarking.py --configs-file $F/gindij_meta/configs_small_medium.json --output-file /tmp/fw/gindij/output.csv --context-length 128 --batch-size 4 --warmup-steps 5 --profiling-steps 10 --profile-forward --profile-backward" ;;
lingkai) prof s2025_lingkai 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/lingkai/cs336-basics:$SITE python3 $F/lingkai/cs336_systems/benchmark.py ;;
# students19 jobs (one GPU each): kzhou (2026; one `benchmark` range around the measured iterations, attention ranges alone), hniii (2026; ranges inside the model alone, both attention products named `Computing matrix multiplication`), chris (2025; no step range, each measured iteration inside its own emit_nvtx() block; $F/chris_meta/wandb/__init__.py is harness/chris_wandb_stub.py), godim (2025; every phase range named with the step count, `backward 10` around zero_grad, `autograd 10` and `optimizer.step 10`; $F/godim_meta holds harness/chargiway_cs336_basics.METADATA as cs336_basics-1.0.3.dist-info/METADATA).
# students20 jobs (one GPU each): gaoyue and gaoyuefwd (2025; one `warmup` range around unranged iterations, `iteration_<i>` steps; $F/gaoyue_meta/matplotlib/ holds an empty `__init__.py` and `pyplot.py` for an import the benchmark never uses), qr0w and qr0wbwd (2025; `warmup` and `measure` regions around flat phases, `forward_for_backward`), bitlabs (2026; `warmup` region with phase ranges, unindexed `measured_step`), acspider (2025; `Warmup` region with phase ranges, `Iteration_<i>`).
# students21 jobs (one GPU each): aupc (2025; `warmup` and `benchmark` regions around flat phases; $F/aupc_meta holds harness/aupc_cs336_systems.METADATA as cs336_systems-0.0.0.dist-info/METADATA), asdf and asdffwd (2025; `forward pass warmup` and `forward pass`), srliu and srliufwd (2026; `step <i>` steps, the optimizer's range `step`), rashik and rashikfwd (2026; unranged warm-up, unindexed `profile`), oru and orufwd (2025; `forward_backward` inside each step), gcy and gcyfwd (2025; `Warm-up` region, measured phases in no range; $F/gcy_meta holds harness/melody_cs336_basics.METADATA as cs336_basics-1.0.6.dist-info/METADATA).
# students22 jobs (one GPU each): supernova and supernovafwd (2026; `warmup steps` and `measurement` regions), z1wu (2025; `forwad pass`, `optimize step`, torch.compile), icy and icyfwd (2026; unindexed `Single Operation` steps, a `Warmup` region; $F/icy_stub holds loguru 0.7.3 unpacked), nddes (2026; flat phases, warm-up named as measured), yyz (2025; a forward-only then a training configuration, the script's size and context lists cut to small at 128; $F/yyz_stub holds tabulate 0.9.0 unpacked), gzsicebergfwd (2025; `small_forward` alone; gzsicebergtrain, its training mode, was not run), golonzovsky (2025; record_function scopes under emit_nvtx).
# students23 jobs (one GPU each): clueing and clueing_fwd (2025; dotted names, `benchmark.warmup.step` and `benchmark.measure.step`; it rewrites its own results/1.1.3_results.csv under $F), dndc (2026; one range around the whole run, unranged warm-up, `Forward-Pass`), existere and existere_fwd (2026; `main process` around the run, `training_step: <t>`), justinhou (2025; `step_<i>/forward` inside `step_<i>`, `warmup_step_<i>/…` inside `warmup`), liavb and liavb_fwd (2025; `warmup` and `benchmark_forward_backward` regions; the forward mode one range around 5 unranged forwards), rohan and rohanfwd (2026; `warmup_step_<i>` and `step_<i>` in `warmup` and `benchmark`), thomas (2025; three benchmarks in one process, attention ranges alone; not shipped), vangbs (2026; one range around a single measured call of each setup, 5 unranged warm-up calls before it; not shipped).
# record-function jobs: recfn26 and recfn_autograd run the GPT-2 loop with its ranges as torch.profiler.record_function scopes, which nsys records under its PyTorch options alone.
# pipeline and compile jobs: pp26 (two GPUs) and compile_nvtx made pipeline2_flags2026 and gpt2_compile_nvtx; pp, pp_gpipe and pp_emit (the same loop with its own ranges, GPipe, and emit_nvtx) ran too and are not shipped (see the README); compile26 stops in the script (Dynamo cannot import nsys's annotation module).
chris) prof s2025_chris 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/chris_meta:$F/chris_a1:$SITE python3 $F/chris/cs336_systems/benchmarking.py --context-length 128 --d-model 512 --num-layers 6 --num-heads 8 --d-ff 2048 --batch-size 4 --warmup-steps 3 --n-steps 5 ;;
godim) prof s2025_godim 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/godim_meta:$F/godim/cs336-basics:$SITE python3 $F/godim/cs336_systems/e2e_benchmark.py --d_model 768 --d_ff 3072 --num_layers 12 --num_heads 12 --context_length 256 --steps 10 ;;
kzhou) prof s2026_kzhou 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/kzhou/cs336-basics:$SITE python3 $F/kzhou/cs336_systems/benchmark.py --nvtx --mode forward-backward --context-length 256 --num-warmup-steps 5 --num-steps 3 ;;
hniii) prof s2026_hniii 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/hniii:$F/hniii/cs336-basics:$SITE python3 $F/hniii/cs336_systems/benchmark_and_profile/benchmarking.py --run_mode backward --context_length 256 ;;
gpt2_epochs) prof gpt2_epochs_nvtx 150 --trace=cuda,nvtx -- python3 $F/hf/gpt2_train.py --nvtx --per-epoch 3 --steps 7 ;;
gpt2_optnone) prof gpt2_opt_unranged_nvtx 150 --trace=cuda,nvtx -- python3 $F/hf/gpt2_train.py --nvtx --opt-range none ;;
gpt2_optjoined) prof gpt2_bwd_opt_joined_nvtx 150 --trace=cuda,nvtx -- python3 $F/hf/gpt2_train.py --nvtx --opt-range joined ;;
gpt2_optout) prof gpt2_opt_outside_step_nvtx 150 --trace=cuda,nvtx -- python3 $F/hf/gpt2_train.py --nvtx --opt-range outside ;;
gpt2_tagged) prof gpt2_tagged_phases_nvtx 150 --trace=cuda,nvtx -- python3 $F/hf/gpt2_train.py --nvtx --no-iter-range --phase-format "step_{i}_{phase}" ;;
gpt2_tagged_steps) prof gpt2_tagged_in_steps_nvtx 150 --trace=cuda,nvtx -- python3 $F/hf/gpt2_train.py --nvtx --phase-format "[iter {i}] {short}" ;;
gpt2_fwdloss) prof gpt2_forward_loss_nvtx 150 --trace=cuda,nvtx -- python3 $F/hf/gpt2_train.py --nvtx --phase-format "{phase}" --forward-name "forward+loss" ;;
gpt2_ddp26_metrics) prof gpt2_ddp2_metrics_flags2026 300 $G26B --gpu-metrics-devices=all --gpu-metrics-frequency=200 --cuda-memory-usage=true -- torchrun --standalone --nproc_per_node 2 $F/hf/gpt2_train.py --ddp --nvtx --steps 3 ;;
two_procs) prof two_procs_nvtx 150 --trace=cuda,nvtx -- bash -c "python3 $F/hf/cnn_train.py --steps 6 & python3 $F/hf/lstm_stream_train.py --nvtx; wait" ;;
lstm_nvtx) prof lstm_stream_nvtx 120 --trace=cuda,nvtx -- python3 $F/hf/lstm_stream_train.py --nvtx ;;
lstm26) prof lstm_stream_flags2026 150 $G26B -- python3 $F/hf/lstm_stream_train.py ;;
lstm_none) prof lstm_stream_no_nvtx 120 --trace=cuda -- python3 $F/hf/lstm_stream_train.py ;;
gaoyue) prof s2025_gaoyue 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/gaoyue_meta:$SITE python3 $F/gaoyue/assignment2-systems/profile_with_nsys.py --d_model 768 --num_layers 12 --num_heads 12 --d_ff 3072 --context_length 256 --batch_size 8 --num_warmup 5 --num_iterations 10 ;;
gaoyuefwd) prof s2025_gaoyue_fwd 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/gaoyue_meta:$SITE python3 $F/gaoyue/assignment2-systems/profile_with_nsys.py --d_model 768 --num_layers 12 --num_heads 12 --d_ff 3072 --context_length 256 --batch_size 8 --num_warmup 5 --num_iterations 10 --forward_only ;;
qr0w) prof s2025_qr0w 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/qr0w/assignment1-basics:$SITE python3 $F/qr0w/assignment2-systems/cs336_systems/benchmarking_script.py --size small --context-length 256 --batch-size 4 --mode train_step --warmup-steps 5 --measure-steps 10 --dtype float32 --device cuda --optimizer cs336_adamw --enable-nvtx ;;
qr0wbwd) prof s2025_qr0w_bwd 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/qr0w/assignment1-basics:$SITE python3 $F/qr0w/assignment2-systems/cs336_systems/benchmarking_script.py --size small --context-length 256 --batch-size 4 --mode backward --warmup-steps 5 --measure-steps 10 --dtype float32 --device cuda --enable-nvtx ;;
bitlabs) prof s2026_bitlabs 150 --trace=cuda,nvtx -- env PYTHONPATH=$SITE python3 $F/bitlabs/scripts/benchmark_transformer.py --model-size small --num-layers 4 --context-length 128 --batch-size 4 --warmup-steps 3 --measure-steps 5 --mode train-step --device cuda ;;
acspider) prof s2025_acspider 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/acspider/Assignment2-system/cs336-basics:$SITE python3 $F/acspider/Assignment2-system/cs336_systems/benchmark.py --model_size small --batch_size 4 --seq_len 128 --warmup_steps 3 --measure_steps 5 --mode fwd_bwd --dtype fp32 ;;
asdf) prof s2025_asdf 150 --trace=cuda,nvtx -- env PYTHONPATH=$SITE python3 $F/asdf/cs336_systems/benchmark.py --d-model 768 --d-ff 3072 --num-layers 12 --num-heads 12 --context-length 256 ;;
asdffwd) prof s2025_asdf_fwd 150 --trace=cuda,nvtx -- env PYTHONPATH=$SITE python3 $F/asdf/cs336_systems/benchmark.py --d-model 768 --d-ff 3072 --num-layers 12 --num-heads 12 --context-length 256 --forward-only ;;
aupc) prof s2025_aupc 150 --trace=cuda,nvtx -- bash -c "mkdir -p /tmp/fw/aupc && cd /tmp/fw/aupc && exec env PYTHONPATH=$F/aupc_meta:$F/aupc:$SITE python3 $F/aupc/cs336_systems/benchmark.py --device cuda --backward --mixed_precision --context_length 256 --d_model 768 --d_ff 3072 --num_layers 12 --num_heads 12" ;;
gcy) prof s2025_gcy 150 --trace=cuda,nvtx -- bash -c "mkdir -p /tmp/fw/gcy && cd /tmp/fw/gcy && exec env PYTHONPATH=$F/gcy/a1/assignment1-basics:$F/gcy_meta:$SITE python3 $F/gcy/a2/assignment2-systems/cs336_systems/benchmark.py --model_size small --context_length 256 --batch_size 4 --warmup_steps 5 --measure_steps 10 --mode fwd_bwd" ;;
gcyfwd) prof s2025_gcy_fwd 150 --trace=cuda,nvtx -- bash -c "mkdir -p /tmp/fw/gcyfwd && cd /tmp/fw/gcyfwd && exec env PYTHONPATH=$F/gcy/a1/assignment1-basics:$F/gcy_meta:$SITE python3 $F/gcy/a2/assignment2-systems/cs336_systems/benchmark.py --model_size small --context_length 256 --batch_size 4 --warmup_steps 5 --measure_steps 10 --mode fwd" ;;
oru) prof s2025_oru 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/oru/cs336-basics:$SITE python3 $F/oru/benchmark.py --bm_mode forward_backward --vocab_size 10000 --d_model 768 --d_ff 3072 --num_heads 12 --num_layers 12 --context_length 256 --batch_size 4 --bm_warmup_steps 5 --bm_measure_steps 10 ;;
orufwd) prof s2025_oru_fwd 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/oru/cs336-basics:$SITE python3 $F/oru/benchmark.py --bm_mode forward --vocab_size 10000 --d_model 768 --d_ff 3072 --num_heads 12 --num_layers 12 --context_length 256 --batch_size 4 --bm_warmup_steps 5 --bm_measure_steps 10 ;;
rashik) prof s2026_rashik 150 --trace=cuda,nvtx -- bash -c "mkdir -p /tmp/fw/rashik && cd /tmp/fw/rashik && exec env PYTHONPATH=$F/rashik/cs336-basics:$F/rashik:$SITE python3 $F/rashik/cs336_systems/benchmark.py --context-length 256 --d-model 768 --num-layers 12 --num-heads 12 --batch-size 4 --d-ff 3072 --warmup-steps 5 --steps 10 --backward --optimizer --bf16" ;;
rashikfwd) prof s2026_rashik_fwd 150 --trace=cuda,nvtx -- bash -c "mkdir -p /tmp/fw/rashik && cd /tmp/fw/rashik && exec env PYTHONPATH=$F/rashik/cs336-basics:$F/rashik:$SITE python3 $F/rashik/cs336_systems/benchmark.py --context-length 256 --d-model 768 --num-layers 12 --num-heads 12 --batch-size 4 --d-ff 3072 --warmup-steps 5 --steps 10 --bf16" ;;
srliu) prof s2026_srliu 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/srliu/cs336-basics:$F/srliu:$SITE python3 $F/srliu/cs336_systems/benchmarking_script.py --size small --context_length 256 --batch_size 4 --mode full_step --warmup 5 --steps 10 --dtype float32 --device cuda --annotate_attention ;;
srliufwd) prof s2026_srliu_fwd 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/srliu/cs336-basics:$F/srliu:$SITE python3 $F/srliu/cs336_systems/benchmarking_script.py --size small --context_length 256 --batch_size 4 --mode forward --warmup 5 --steps 10 --dtype float32 --device cuda --annotate_attention --annotate_blocks ;;
supernova) prof s2026_supernova 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/supernova/cs336-basics:$SITE python3 $F/supernova/cs336_systems/nsys_benchmark.py --mode full --size small --context-length 128 --batch-size 4 --num-warmup-steps 3 --num-measurement-steps 5 ;;
supernovafwd) prof s2026_supernova_fwd 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/supernova/cs336-basics:$SITE python3 $F/supernova/cs336_systems/nsys_benchmark.py --mode forward --size small --context-length 128 --batch-size 4 --num-warmup-steps 3 --num-measurement-steps 5 ;;
z1wu) prof s2025_z1wu 300 --trace=cuda,nvtx -- env PYTHONPATH=$F/z1wu/cs336-basics:$SITE python3 $F/z1wu/cs336_systems/benchmark.py ;;
icy) prof s2026_icy 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/icy/cs336-basics:$F/icy_stub:$SITE python3 $F/icy/cs336_systems/benchmark.py --size small --mode full --context_length 128 --warmup_steps 3 --steps 5 ;;
icyfwd) prof s2026_icy_fwd 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/icy/cs336-basics:$F/icy_stub:$SITE python3 $F/icy/cs336_systems/benchmark.py --size small --mode forward --context_length 128 --warmup_steps 3 --steps 5 ;;
nddes) prof s2026_nddes 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/nddes/cs336-basics:$SITE python3 $F/nddes/cs336_systems/benchmark.py --num_layers 12 --num_heads 12 --d_model 768 --d_ff 3072 --seq_len 128 --warmup 3 --steps 5 --mode optimize ;;
yyz) prof s2025_yyz 200 --trace=cuda,nvtx -- bash -c "mkdir -p /tmp/fw/yyz && cd /tmp/fw/yyz && exec env PYTHONPATH=$F/yyz_stub:$F/yyz/assignment2-systems/cs336-basics:$F/yyz/assignment2-systems/cs336_systems:$SITE python3 -c 'import benchmark_nvtx as b; b.model_configs = b.model_configs[:1]; b.context_lengths = [128]; b.main()'" ;;
gzsicebergtrain) prof s2025_gzsiceberg 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/gzsiceberg/cs336-basics:$SITE python3 $F/gzsiceberg/cs336_systems/benchmarking.py -a 1 -w 3 -t 5 --back --opt --context-length 128 -o "" ;;
gzsicebergfwd) prof s2025_gzsiceberg_fwd 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/gzsiceberg/cs336-basics:$SITE python3 $F/gzsiceberg/cs336_systems/benchmarking.py -a 1 -w 3 -t 5 --context-length 128 -o "" ;;
golonzovsky) prof s2025_golonzovsky 150 --trace=cuda,nvtx -- bash -c "mkdir -p /tmp/fw/golonzovsky && cd /tmp/fw/golonzovsky && exec env PYTHONPATH=$F/golonzovsky/cs336-basics:$SITE python3 $F/golonzovsky/cs336_systems/benchmarking.py --size small --context-length 128 --batch-size 4 --warmup-steps 3 --steps 5 --dtype fp32" ;;
recfn26) prof gpt2_recfn_flags2026 200 $G26B -- python3 $F/hf/gpt2_train.py --nvtx --record-function --steps 3 ;;
recfn_autograd) prof gpt2_recfn_autograd_nvtx 200 --trace=cuda,nvtx --pytorch=autograd-nvtx -- python3 $F/hf/gpt2_train.py --nvtx --record-function ;;
clueing) prof s2025_clueing 200 --trace=cuda,nvtx --sample=none --cpuctxsw=none -- env PYTHONPATH=$F/clueing/cs336-basics:$F/clueing:$SITE python3 -m cs336_systems.benchmark --device cuda --mode train-step --enable-nvtx --model-size small --context-length 128 --batch-size 4 --warmup-steps 3 --measure-steps 5 ;;
clueing_fwd) prof s2025_clueing_fwd 150 --trace=cuda,nvtx --sample=none --cpuctxsw=none -- env PYTHONPATH=$F/clueing/cs336-basics:$F/clueing:$SITE python3 -m cs336_systems.benchmark --device cuda --mode forward --enable-nvtx --model-size small --context-length 128 --batch-size 4 --warmup-steps 3 --measure-steps 5 ;;
dndc) prof s2026_dndc 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/dndc/cs336-basics:$SITE python3 $F/dndc/cs336_systems/benchmarking_script.py --mode small --type forward-backward-optimizer --batch_size 4 --context_length 128 --warmup_steps 3 --benchmark_steps 5 ;;
existere) prof s2026_existere 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/existere/cs336-basics:$F/existere:$SITE python3 $F/existere/cs336_systems/benchmark.py --d_model 768 --d_ff 3072 --num_layers 12 --num_heads 12 --context_length 128 --batch_size 4 --warmup_steps 3 --profiling_steps 5 --profile_attn 1 ;;
existere_fwd) prof s2026_existere_fwd 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/existere/cs336-basics:$F/existere:$SITE python3 $F/existere/cs336_systems/benchmark.py --d_model 768 --d_ff 3072 --num_layers 12 --num_heads 12 --context_length 128 --batch_size 4 --warmup_steps 3 --profiling_steps 5 --profile_attn 1 --run_mode inference ;;
justinhou) prof s2025_justinhou 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/justinhou/cs336-basics:$SITE python3 $F/justinhou/cs336_systems/profile_nsys.py --size small --context-length 128 --batch-size 4 --warmup-steps 3 --steps 5 --mode full_training ;;
liavb) prof s2025_liavb 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/liavb/cs336-basics:$SITE python3 $F/liavb/cs336_systems/benchmark.py --model-size small --context-length 128 --batch-size 4 --warmup-steps 3 --num-steps 5 ;;
liavb_fwd) prof s2025_liavb_fwd 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/liavb/cs336-basics:$SITE python3 $F/liavb/cs336_systems/benchmark.py --model-size small --context-length 128 --batch-size 4 --warmup-steps 3 --num-steps 5 --forward-only ;;
rohan) prof s2026_rohan 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/rohan/cs336-basics:$F/rohan:$SITE python3 $F/rohan/cs336_systems/benchmarking.py --mode train --model-size small --context-length 128 --batch-size 4 --warmup-steps 3 --steps 5 --device cuda --nvtx --nvtx-attention ;;
rohanfwd) prof s2026_rohan_fwd 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/rohan/cs336-basics:$F/rohan:$SITE python3 $F/rohan/cs336_systems/benchmarking.py --mode forward --model-size small --context-length 128 --batch-size 4 --warmup-steps 3 --steps 5 --device cuda --nvtx --nvtx-attention ;;
thomas) prof s2025_thomas 150 --trace=cuda,nvtx -- bash -c "mkdir -p /tmp/fw/thomas && cd /tmp/fw/thomas && exec env PYTHONPATH=$F/thomas/cs336-basics:$SITE python3 $F/thomas/cs336_systems/benchmark.py" ;;
vangbs) prof s2026_vangbs 150 --trace=cuda,nvtx -- bash -c "mkdir -p /tmp/fw/vangbs/data && cd /tmp/fw/vangbs && exec env PYTHONPATH=$F/vangbs/cs336-basics:$SITE python3 $F/vangbs/cs336_systems/benchmarking.py" ;;
# students24 jobs (one GPU each): jasonyao (2025; no step range, 3 warm-up iterations at the top level, 5 in
# `Measurement Loop`, each an inference `forward` then a training `forward` and `backward`), jsun and jsun_fwd (2025;
# `Warm-up Step <i>` in `Warm-up`, the measured iterations with no range inside `Benchmark Forward+Backward` or
# `Benchmark Forward Only`), igear (2025; an unindexed `training_step` per iteration, warm-up alike).
jasonyao) prof s2025_jasonyao 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/jasonyao/cs336-basics:$SITE python3 $F/jasonyao/cs336_systems/profile_model.py ;;
jsun) prof s2025_jsun 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/jsun/cs336-basics:$SITE python3 $F/jsun/cs336_systems/benchmark_script.py --context_length 128 --d_model 768 --num_layers 12 --num_heads 12 --d_ff 3072 --batch_size 4 --num_warmup 3 --num_steps 5 --benchmark_type both --nvtx ;;
jsun_fwd) prof s2025_jsun_fwd 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/jsun/cs336-basics:$SITE python3 $F/jsun/cs336_systems/benchmark_script.py --context_length 128 --d_model 768 --num_layers 12 --num_heads 12 --d_ff 3072 --batch_size 4 --num_warmup 3 --num_steps 5 --benchmark_type forward --nvtx ;;
igear) prof s2025_igear 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/igear/cs336-basics:$SITE python3 $F/igear/cs336_systems/benchmark_nvtx.py --use_nvtx --include_backward --include_optimizer --num_layers 12 --d_model 768 --num_heads 12 --d_ff 3072 --context_length 128 --sequence_length 128 --batch_size 4 --warmup_steps 3 --measure_steps 5 ;;
# students24a jobs (one GPU each): ab2163 and ab2163_fwd (2026; `measurement_step_<i>` around a plain `step`, the
# warm-up's bare `step` ranges at the top level, the model the student's own assignment-1 package), aspisov (2025; no
# arguments, the large model at context 512; 5 warm-up iterations with no step or phase range, `benchmark_steps` around
# `step_<i>` holding `forward_pass` and `backward_pass`; it writes a memory snapshot into its working folder).
ab2163) prof s2026_ab2163 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/ab2163_a1:$SITE python3 $F/ab2163/cs336_systems/profile_model.py --mode full --d_model 768 --d_ff 3072 --num_layers 12 --num_heads 12 --vocab_size 10000 --context_length 128 --batch_size 8 --warmup_steps 3 --num_steps 5 --device cuda ;;
ab2163_fwd) prof s2026_ab2163_fwd 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/ab2163_a1:$SITE python3 $F/ab2163/cs336_systems/profile_model.py --mode forward --d_model 768 --d_ff 3072 --num_layers 12 --num_heads 12 --vocab_size 10000 --context_length 128 --batch_size 8 --warmup_steps 3 --num_steps 5 --device cuda ;;
aspisov) prof s2025_aspisov 200 --trace=cuda,nvtx -- bash -c "cd /tmp/fw && exec env PYTHONPATH=$F/aspisov/cs336-basics:$SITE python3 $F/aspisov/cs336_systems/benchmark.py" ;;
# students24c jobs (one GPU each): shubhav and shubhav_fwd (2026; positional arguments, the model always compiled,
# the warm-up iterations with phase ranges and no step range, `step_<i>` under emit_nvtx), ethan98 and ethan98_fwd
# (2025; `warm-up` around 3 bare iterations, the measured ones top-level phases with no step range), semioz (2026;
# `warmup` and `measurement` regions of flat phases, activation checkpointing re-running attention ranges in backward).
shubhav) prof s2026_shubhav 300 --trace=cuda,nvtx -- env PYTHONPATH=$SITE python3 $F/shubhav/benchmarking.py small 128 3 5 full fp32 profile ;;
shubhav_fwd) prof s2026_shubhav_fwd 240 --trace=cuda,nvtx -- env PYTHONPATH=$SITE python3 $F/shubhav/benchmarking.py small 128 3 5 forward fp32 profile ;;
ethan98) prof s2025_ethan98 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/shibuki_meta:$F/ethan98/cs336-basics:$F/ethan98:$SITE python3 $F/ethan98/cs336_systems/benchmark.py --model_name small --d_model 768 --num_layers 12 --num_heads 12 --d_ff 3072 --context_length 128 --batch_size 4 --warmup_steps 3 --timing_steps 5 --log_file /tmp/fw/ethan98.csv ;;
ethan98_fwd) prof s2025_ethan98_fwd 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/shibuki_meta:$F/ethan98/cs336-basics:$F/ethan98:$SITE python3 $F/ethan98/cs336_systems/benchmark.py --model_name small --d_model 768 --num_layers 12 --num_heads 12 --d_ff 3072 --context_length 128 --batch_size 4 --warmup_steps 3 --timing_steps 5 --forward_only --log_file /tmp/fw/ethan98_fwd.csv ;;
semioz) prof s2026_semioz 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/semioz/cs336-basics:$F/semioz:$SITE python3 $F/semioz/scripts/benchmark.py --model-size small --context-length 128 --batch-size 4 --mode train_step --warmup-steps 3 --measurement-steps 5 --annotate-attention --checkpoint-chunk-size 3 ;;
# students25 jobs (one GPU each): deq (2025; unranged warm-up, `benchmark_iteration` around `step_<i>`), daihz and daihz_fwd
# (2025; flat phase ranges, no step range), fang (2025; a 3-step loop called 8 times, `step_<i>` restarting), jlkazdan
# (2025; `warmup pass <i>`, `pass <i>`), urreal (2025; attention ranges only), riyasu (2025; `backward:` holding the loss
# and the optimizer step; $F/riyasu_stub holds tabulate 0.9.0), okazaki and okazaki_fwd (2026; one `measurement` range).
deq) prof s2025_deq 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/deq/cs336-basics:$SITE python3 $F/deq/cs336_systems/nsys_benchmark.py ;;
daihz) prof s2025_daihz 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/daihz/cs336-basics:$SITE python3 $F/daihz/cs336_systems/benchmarking_script.py --context-length 128 --sequence-length 128 --warmup-steps 3 --measure-steps 5 --mode forward_backward_optimizer ;;
daihz_fwd) prof s2025_daihz_fwd 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/daihz/cs336-basics:$SITE python3 $F/daihz/cs336_systems/benchmarking_script.py --context-length 128 --sequence-length 128 --warmup-steps 3 --measure-steps 5 --mode forward ;;
fang) prof s2025_fang 240 --trace=cuda,nvtx -- env PYTHONPATH=$F/fang/cs336-basics:$F/fang/cs336_systems:$SITE python3 $F/fang/cs336_systems/benchmarking_script.py ;;
students25a) for j in deq daihz daihz_fwd fang; do eval "$(sed -n "s/^$j) \(.*\) ;;\$/\1/p" $F/sweep.sh)"; done ;;
jlkazdan) prof s2025_jlkazdan 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/jlkazdan/cs336-basics:$SITE python3 $F/jlkazdan/cs336_systems/scripts/benchmarking_script.py --batch_size 4 --context_length 128 --d_model 768 --num_layers 12 --num_heads 12 --d_ff 3072 --warmup_steps 3 --steps_timed 5 ;;
urreal) prof s2025_urreal 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/urreal/cs336-basics:$SITE python3 $F/urreal/cs336_systems/benchmarks/benchmark.py --size small --ctx_len 128 --batch_size 4 --warmup 3 --steps 5 --dtype bfloat16 ;;
riyasu) prof s2025_riyasu 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/riyasu_stub:$F/riyasu/assignment2/cs336-basics:$SITE python3 $F/riyasu/assignment2/cs336_systems/bench_marking.py --mode fwd_bwd --model_size small --context_length 128 --batch_size 4 --warm_up_steps 3 --timing_steps 5 ;;
okazaki) prof s2026_okazaki 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/okazaki/assignments/a2-systems/cs336-basics:$SITE python3 $F/okazaki/assignments/a2-systems/scripts/benchmark.py --model-size small --mode train --context-length 128 --warmup-steps 3 --measurement-steps 5 ;;
okazaki_fwd) prof s2026_okazaki_fwd 150 --trace=cuda,nvtx -- env PYTHONPATH=$F/okazaki/assignments/a2-systems/cs336-basics:$SITE python3 $F/okazaki/assignments/a2-systems/scripts/benchmark.py --model-size small --mode forward --context-length 128 --warmup-steps 3 --measurement-steps 5 ;;
students25c) for j in jlkazdan urreal riyasu okazaki okazaki_fwd; do eval "$(sed -n "s/^$j) \(.*\) ;;\$/\1/p" $F/sweep.sh)"; done ;;
# students25b jobs (one GPU each): ayush (2025; `forward`, `backward`, `step` with no step range), abhi (2026; only
# the attention ranges, cudaProfilerStart once and cudaProfilerStop after every backward), athrun and athrun_fwd (2025;
# only the three attention parts), aidan (2025; `Benchmarking model` around an unranged warm-up and `step_<i>`;
# $F/aidan_stub holds pydantic and tabulate, $F/aidan_meta the cs336_basics version).
ayush) prof s2025_ayush 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/ayush/cs336-basics:$SITE python3 $F/ayush/cs336_systems/benchmarking_script.py --device cuda --d_model 768 --d_ff 3072 --num_layers 12 --num_heads 12 --context_length 128 --batch_size 4 --warmup_steps 3 --n_steps 5 --run_backward ;;
abhi) prof s2026_abhi 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/abhi/cs336-basics:$SITE python3 $F/abhi/cs336_systems/benchmarking/benchmark_nsys.py --d_model 768 --d_ff 3072 --num_layers 12 --num_heads 12 --num_warmup 3 --benchmark_mode full --context_len 128 ;;
athrun) prof s2025_athrun 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/athrun/cs336-basics:$SITE python3 $F/athrun/cs336_systems/benchmarking_script.py --context_length 128 --batch_size 4 --warmup_steps 3 --num_steps 5 ;;
athrun_fwd) prof s2025_athrun_fwd 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/athrun/cs336-basics:$SITE python3 $F/athrun/cs336_systems/benchmarking_script.py --context_length 128 --batch_size 4 --warmup_steps 3 --num_steps 5 --forward_only true ;;
aidan) prof s2025_aidan 200 --trace=cuda,nvtx -- bash -c "cd $F/aidan && exec env PYTHONPATH=$F/aidan_meta:$F/aidan/csc-basics:$F/aidan_stub:$SITE python3 cs336_systems/benchmark.py --size small --mode forward-backward --seq-len 128 --num-warmups 3 --num-trials 5" ;;
# students26b jobs (one GPU each, 2025 handout; train and forward-only modes): eku (`warmup` around 5
# unranged iterations, `step_<i>` around `forward_pass`, `backward_pass` with the loss inside, no
# optimizer), xrlexpert (`warmup` around iterations named after the mode, `measure` around unindexed
# `forward pass`, `backward pass`, `optimizer step`; attention parts), yangliu (set-up ranges,
# `warm up` around iterations named as the measured ones, steps misspelt `trail_<i>`; its `__main__`
# is fixed to the 2.7B model on the CPU, so the job calls the script's functions).
b26eku) prof s2025_eku 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/b26eku/cs336-basics:$SITE python3 $F/b26eku/cs336_systems/benchmark/benchmark.py --context_length 128 --d_model 768 --num_layers 12 --num_heads 12 --d_ff 3072 --warmup_steps 5 --num_steps 10 ;;
b26eku_fwd) prof s2025_eku_fwd 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/b26eku/cs336-basics:$SITE python3 $F/b26eku/cs336_systems/benchmark/benchmark.py --context_length 128 --d_model 768 --num_layers 12 --num_heads 12 --d_ff 3072 --warmup_steps 5 --num_steps 10 --forward_only ;;
b26xrl) prof s2025_xrlexpert 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/b26xrl/cs336-basics:$SITE python3 $F/b26xrl/cs336_systems/benchmark_script.py --model_size small --mode full_steps --context_length 128 --warm_up_steps 3 --measure_steps 5 --profile_attention ;;
b26xrl_fwd) prof s2025_xrlexpert_fwd 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/b26xrl/cs336-basics:$SITE python3 $F/b26xrl/cs336_systems/benchmark_script.py --model_size small --mode forward --context_length 128 --warm_up_steps 3 --measure_steps 5 --profile_attention ;;
b26yang) prof s2025_yangliu 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/b26yang_meta:$F/b26yang/cs336-basics:$F/b26yang:$SITE python3 -c "from cs336_systems.benchmark import run_basic_lm_model, benchmark, get_model_specs; s = get_model_specs()['small']; s['context_length'] = 128; print(benchmark(run_basic_lm_model(**s, device='cuda', enable_backward=True), warmup_steps=3, num_trials=5, device='cuda'))" ;;
b26yang_fwd) prof s2025_yangliu_fwd 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/b26yang_meta:$F/b26yang/cs336-basics:$F/b26yang:$SITE python3 -c "from cs336_systems.benchmark import run_basic_lm_model, benchmark, get_model_specs; s = get_model_specs()['small']; s['context_length'] = 128; print(benchmark(run_basic_lm_model(**s, device='cuda', enable_backward=False), warmup_steps=3, num_trials=5, device='cuda'))" ;;
students26b) for j in b26eku b26eku_fwd b26xrl b26xrl_fwd b26yang b26yang_fwd; do eval "$(sed -n "s/^$j) \(.*\) ;;\$/\1/p" $F/sweep.sh)"; done ;;
# students26c jobs (one GPU each, 2025 handout; train and forward-only modes), no NVTX call in any
# script: CompareSan (warm-up iterations differ from the timed ones: the student's loss and AdamW
# against F.cross_entropy and no update), chatrdh (a synchronize before and after each timed call),
# Echo-minn (foreach AdamW, a synchronize after each step). $F/c26cmp_meta holds
# harness/chargiway_cs336_basics.METADATA as cs336_basics-1.0.3.dist-info/METADATA.
c26cmp_fwd) prof s2025_comparesan_fwd 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/c26cmp_meta:$F/c26cmp/cs336-basics:$SITE python3 $F/c26cmp/cs336_systems/benchmarking.py --context_len 128 --warmup_steps 3 --n_steps 6 --forward_only ;;
c26cmp) prof s2025_comparesan 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/c26cmp_meta:$F/c26cmp/cs336-basics:$SITE python3 $F/c26cmp/cs336_systems/benchmarking.py --context_len 128 --warmup_steps 3 --n_steps 6 ;;
c26chat_fwd) prof s2025_chatrdh_fwd 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/c26chat/cs336-basics:$SITE python3 $F/c26chat/cs336_systems/benchmarking.py --mode forward --context-length 128 --seq-length 128 --num-warmup 4 --num-runs 6 ;;
c26chat) prof s2025_chatrdh 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/c26chat/cs336-basics:$SITE python3 $F/c26chat/cs336_systems/benchmarking.py --mode both --context-length 128 --seq-length 128 --num-warmup 4 --num-runs 6 ;;
c26echo_fwd) prof s2025_echominn_fwd 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/c26echo/cs336-basics:$SITE python3 $F/c26echo/cs336_systems/benchmarking_script.py --d_model 768 --d_ff 3072 --num_layers 12 --num_heads 12 --context_length 128 --num_warmups 2 --num_steps 5 --forward_only ;;
c26echo) prof s2025_echominn 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/c26echo/cs336-basics:$SITE python3 $F/c26echo/cs336_systems/benchmarking_script.py --d_model 768 --d_ff 3072 --num_layers 12 --num_heads 12 --context_length 128 --num_warmups 2 --num_steps 5 ;;
students26c) for j in c26cmp c26cmp_fwd c26chat c26chat_fwd c26echo c26echo_fwd; do eval "$(sed -n "s/^$j) \(.*\) ;;\$/\1/p" $F/sweep.sh)"; done ;;
# March2424 (2026 handout; no NVTX call: the script imports its package's NVTX helper and never
# calls it): one benchmark in its three modes, the model called on one input, a synchronize after
# each call (warm-up and timed alike) and one between the loops; the staff AdamW in `full`.
e28march) prof s2026_march2424 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/e28march/cs336-basics:$SITE python3 $F/e28march/cs336_systems/Benchmark.py --seq_len 128 --warmup_steps 3 --measure_steps 5 --mode full ;;
e28march_fb) prof s2026_march2424_fb 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/e28march/cs336-basics:$SITE python3 $F/e28march/cs336_systems/Benchmark.py --seq_len 128 --warmup_steps 3 --measure_steps 5 --mode fwd_bwd ;;
e28march_fwd) prof s2026_march2424_fwd 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/e28march/cs336-basics:$SITE python3 $F/e28march/cs336_systems/Benchmark.py --seq_len 128 --warmup_steps 3 --measure_steps 5 --mode fwd ;;
students28) for j in e28march e28march_fb e28march_fwd; do eval "$(sed -n "s/^$j) \(.*\) ;;\$/\1/p" $F/sweep.sh)"; done ;;
# students28d jobs (one GPU each, 2025 handout): yishuaili (`warmup` around 3 iterations named as
# the 5 measured ones, no step range; attention parts), nxdxml (four sessions in one process: small
# and medium, each forward-only then train; the loss, zero_grad and update inside `backward pass`),
# rlagofla (flat `forward`, `backward`, `optimize`; warm-up with no range and no synchronize).
# $F/d28nxdxml_meta and $F/d28rlag_meta hold harness/chargiway_cs336_basics.METADATA and
# harness/melody_cs336_basics.METADATA as cs336_basics-1.0.3 and 1.0.6 .dist-info/METADATA.
d28yishuai) prof s2025_yishuaili 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/d28yishuai/cs336-basics:$SITE python3 $F/d28yishuai/cs336_systems/benchmarking_lm.py --d_model 768 --d_ff 3072 --num_layers 12 --num_heads 12 --context_length 128 --batch_size 4 --warmup_iters 3 --num_runs 1 --benchmarking_iters 5 ;;
d28yishuai_fwd) prof s2025_yishuaili_fwd 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/d28yishuai/cs336-basics:$SITE python3 $F/d28yishuai/cs336_systems/benchmarking_lm.py --d_model 768 --d_ff 3072 --num_layers 12 --num_heads 12 --context_length 128 --batch_size 4 --warmup_iters 3 --num_runs 1 --benchmarking_iters 5 --inference_only ;;
d28nxdxml) prof s2025_nxdxml 240 --trace=cuda,nvtx -- bash -c "cd $F/d28nxdxml && exec env PYTHONPATH=$F/d28nxdxml_meta:$F/d28nxdxml:$SITE python3 -m cs336_basics.benchmarking" ;;
d28rlag) prof s2025_rlagofla 200 --trace=cuda,nvtx -- env PYTHONPATH=$F/d28rlag_meta:$F/d28rlag/assignment1-basics:$SITE python3 $F/d28rlag/assignment2-systems/cs336_systems/nsys_profile.py --context_length 128 --warm-up 3 --max_iters 5 ;;
students28d) for j in d28yishuai d28yishuai_fwd d28nxdxml d28rlag; do eval "$(sed -n "s/^$j) \(.*\) ;;\$/\1/p" $F/sweep.sh)"; done ;;
# The students' benchmarks again under the handout's 2026 option set, PyTorch's labels beside the
# students' own ranges (or alone, where a script calls no NVTX): each job's line with
# `--trace=cuda,nvtx` replaced by $G26B, its trace named <name>_f26.
flags26a) for j in c26echo e28march c26cmp deq riyasu ayush b26eku jsun; do eval "$(sed -n "s/^$j) \(.*\) ;;\$/\1/p" $F/sweep.sh | sed 's/^prof \([^ ]*\) [0-9]* --trace=cuda,nvtx/prof \1_f26 300 $G26B/')"; done ;;
flags26b) for j in jlkazdan b26xrl d28rlag ethan98 semioz clueing igear ab2163; do eval "$(sed -n "s/^$j) \(.*\) ;;\$/\1/p" $F/sweep.sh | sed 's/^prof \([^ ]*\) [0-9]* --trace=cuda,nvtx/prof \1_f26 300 $G26B/')"; done ;;
flags26c) for j in urreal kzhou mocibb heng supernova aupc gaoyue yuanyi aidan okazaki daihz hniii srliu rohan; do eval "$(sed -n "s/^$j) \(.*\) ;;\$/\1/p" $F/sweep.sh | sed 's/^prof \([^ ]*\) [0-9]* --trace=cuda,nvtx/prof \1_f26 300 $G26B/')"; done ;;
flags26fwd) for j in c26echo_fwd c26cmp_fwd c26chat_fwd e28march_fwd d28yishuai_fwd b26xrl_fwd jsun_fwd okazaki_fwd rohanfwd ab2163_fwd daihz_fwd supernovafwd; do eval "$(sed -n "s/^$j) \(.*\) ;;\$/\1/p" $F/sweep.sh | sed 's/^prof \([^ ]*\) [0-9]* --trace=cuda,nvtx/prof \1_f26 300 $G26B/')"; done ;;
# The same students' benchmarks with NVTX left out of the trace (`--trace=cuda`, as when a user
# forgets it), each trace named <name>_cuda: steps, warm-up and phases from the kernels alone.
nonvtx) for j in deq riyasu ayush b26eku jsun jlkazdan b26xrl d28rlag semioz clueing igear ab2163 aidan daihz rohan supernova; do eval "$(sed -n "s/^$j) \(.*\) ;;\$/\1/p" $F/sweep.sh | sed 's/^prof \([^ ]*\) [0-9]* --trace=cuda,nvtx/prof \1_cuda 200 --trace=cuda/')"; done ;;
# The same students' benchmarks with PyTorch's autograd ranges (`--pytorch=autograd-nvtx`: a range
# per ATen op and autograd node beside the students' own), each trace named <name>_agnvtx.
agnvtx) for j in riyasu ayush jsun b26xrl d28rlag semioz clueing ab2163 aidan supernova jlkazdan b26eku; do eval "$(sed -n "s/^$j) \(.*\) ;;\$/\1/p" $F/sweep.sh | sed 's/^prof \([^ ]*\) [0-9]* --trace=cuda,nvtx/prof \1_agnvtx 200 --trace=cuda,nvtx --pytorch=autograd-nvtx/')"; done ;;
# The same students' benchmarks with other counts of warm-up and measured iterations given to their
# own flags: 1 warm-up and 2 measured (<name>_w1s2), and no warm-up at all, 3 measured (<name>_w0s3),
# as the handout's question on warm-up has students run them.
counts_w1s2a) for j in c26echo e28march c26cmp riyasu ayush b26eku jsun jlkazdan b26xrl; do eval "$(sed -n "s/^$j) \(.*\) ;;\$/\1/p" $F/sweep.sh | sed 's/^prof \([^ ]*\) [0-9]* --trace=cuda,nvtx/prof \1_w1s2 200 --trace=cuda,nvtx/; s/\(--[a-z_-]*warm[a-z_-]*\) [0-9][0-9]*/\1 1/; s/\(--\(num_steps\|measure_steps\|n_steps\|timing_steps\|steps_timed\|max_iters\|measurement-steps\|measure-steps\|num-measurement-steps\)\) [0-9][0-9]*/\1 2/')"; done ;;
counts_w1s2b) for j in d28rlag semioz clueing igear ab2163 okazaki supernova daihz athrun; do eval "$(sed -n "s/^$j) \(.*\) ;;\$/\1/p" $F/sweep.sh | sed 's/^prof \([^ ]*\) [0-9]* --trace=cuda,nvtx/prof \1_w1s2 200 --trace=cuda,nvtx/; s/\(--[a-z_-]*warm[a-z_-]*\) [0-9][0-9]*/\1 1/; s/\(--\(num_steps\|measure_steps\|n_steps\|timing_steps\|steps_timed\|max_iters\|measurement-steps\|measure-steps\|num-measurement-steps\)\) [0-9][0-9]*/\1 2/')"; done ;;
counts_w0s3a) for j in c26echo e28march c26cmp riyasu ayush b26eku jsun jlkazdan b26xrl; do eval "$(sed -n "s/^$j) \(.*\) ;;\$/\1/p" $F/sweep.sh | sed 's/^prof \([^ ]*\) [0-9]* --trace=cuda,nvtx/prof \1_w0s3 200 --trace=cuda,nvtx/; s/\(--[a-z_-]*warm[a-z_-]*\) [0-9][0-9]*/\1 0/; s/\(--\(num_steps\|measure_steps\|n_steps\|timing_steps\|steps_timed\|max_iters\|measurement-steps\|measure-steps\|num-measurement-steps\)\) [0-9][0-9]*/\1 3/')"; done ;;
counts_w0s3b) for j in d28rlag semioz clueing igear ab2163 okazaki supernova daihz athrun; do eval "$(sed -n "s/^$j) \(.*\) ;;\$/\1/p" $F/sweep.sh | sed 's/^prof \([^ ]*\) [0-9]* --trace=cuda,nvtx/prof \1_w0s3 200 --trace=cuda,nvtx/; s/\(--[a-z_-]*warm[a-z_-]*\) [0-9][0-9]*/\1 0/; s/\(--\(num_steps\|measure_steps\|n_steps\|timing_steps\|steps_timed\|max_iters\|measurement-steps\|measure-steps\|num-measurement-steps\)\) [0-9][0-9]*/\1 3/')"; done ;;
# ... and 1 warm-up and 2 measured with NVTX left out (<name>_w1s2_cuda): three iterations from the kernels alone.
counts_cuda) for j in c26echo e28march c26cmp riyasu ayush b26eku jsun jlkazdan b26xrl d28rlag semioz clueing igear ab2163 okazaki supernova daihz athrun; do eval "$(sed -n "s/^$j) \(.*\) ;;\$/\1/p" $F/sweep.sh | sed 's/^prof \([^ ]*\) [0-9]* --trace=cuda,nvtx/prof \1_w1s2_cuda 200 --trace=cuda/; s/\(--[a-z_-]*warm[a-z_-]*\) [0-9][0-9]*/\1 1/; s/\(--\(num_steps\|measure_steps\|n_steps\|timing_steps\|steps_timed\|max_iters\|measurement-steps\|measure-steps\|num-measurement-steps\)\) [0-9][0-9]*/\1 2/')"; done ;;
# ... and their forward-only modes with 1 warm-up and 2 measured calls (<name>_w1s2), and none and 3 (<name>_w0s3).
counts_fwd_w1s2) for j in c26echo_fwd c26cmp_fwd c26chat_fwd e28march_fwd d28yishuai_fwd b26xrl_fwd jsun_fwd okazaki_fwd rohanfwd ab2163_fwd daihz_fwd supernovafwd athrun_fwd; do eval "$(sed -n "s/^$j) \(.*\) ;;\$/\1/p" $F/sweep.sh | sed 's/^prof \([^ ]*\) [0-9]* --trace=cuda,nvtx/prof \1_w1s2 200 --trace=cuda,nvtx/; s/\(--[a-z_-]*warm[a-z_-]*\) [0-9][0-9]*/\1 1/; s/\(--\(num_steps\|measure_steps\|n_steps\|timing_steps\|steps_timed\|max_iters\|measurement-steps\|measure-steps\|num-measurement-steps\|num-runs\|benchmarking_iters\|steps\)\) [0-9][0-9]*/\1 2/')"; done ;;
counts_fwd_w0s3) for j in c26echo_fwd c26cmp_fwd c26chat_fwd e28march_fwd d28yishuai_fwd b26xrl_fwd jsun_fwd okazaki_fwd rohanfwd ab2163_fwd daihz_fwd supernovafwd athrun_fwd; do eval "$(sed -n "s/^$j) \(.*\) ;;\$/\1/p" $F/sweep.sh | sed 's/^prof \([^ ]*\) [0-9]* --trace=cuda,nvtx/prof \1_w0s3 200 --trace=cuda,nvtx/; s/\(--[a-z_-]*warm[a-z_-]*\) [0-9][0-9]*/\1 0/; s/\(--\(num_steps\|measure_steps\|n_steps\|timing_steps\|steps_timed\|max_iters\|measurement-steps\|measure-steps\|num-measurement-steps\|num-runs\|benchmarking_iters\|steps\)\) [0-9][0-9]*/\1 3/')"; done ;;
# Forward-only loops with nothing that marks a call: the inference loop under --trace=cuda (a
# synchronize after each call, or one after each loop; compiled; replayed as CUDA graphs), under the
# 2026 option set, and generate calls with no range.
inferloop0) prof gpt2_inferloop_no_nvtx 150 --trace=cuda -- python3 $F/hf/gpt2_infer_loop.py --sync ;;
inferloop0_nosync) prof gpt2_inferloop_nosync_no_nvtx 150 --trace=cuda -- python3 $F/hf/gpt2_infer_loop.py ;;
inferloop0_compiled) prof gpt2_inferloop_compiled_no_nvtx 300 --trace=cuda -- python3 $F/hf/gpt2_infer_loop.py --sync --compile-mode default --warmup 3 ;;
inferloop0_graphs) prof gpt2_inferloop_graphs_no_nvtx 300 --trace=cuda -- python3 $F/hf/gpt2_infer_loop.py --sync --compile-mode reduce-overhead --warmup 3 ;;
inferloop26) prof gpt2_inferloop_flags2026 200 $G26B -- python3 $F/hf/gpt2_infer_loop.py --sync ;;
generate0) prof gpt2_generate_no_nvtx 150 --trace=cuda -- python3 $F/hf/gpt2_generate.py ;;
# GPT-2 training benchmarks whose warm-up only their timing tells apart: no synchronize in the
# warm-up and one after each timed step (timerhost, timerhost26), or CUDA events recorded around
# the timed loop (timerev, timerev0).
timerhost) prof gpt2_timer_host_nvtx 150 --trace=cuda,nvtx -- python3 $F/hf/loop_variants_train.py --nvtx --timer host --warmup 3 --steps 5 ;;
timerhost26) prof gpt2_timer_host_flags2026 200 $G26B -- python3 $F/hf/loop_variants_train.py --timer host --warmup 3 --steps 4 ;;
timerev) prof gpt2_timer_events_nvtx 150 --trace=cuda,nvtx -- python3 $F/hf/loop_variants_train.py --nvtx --timer events --warmup 3 --steps 5 ;;
timerev0) prof gpt2_timer_events_no_nvtx 150 --trace=cuda -- python3 $F/hf/loop_variants_train.py --timer events --warmup 3 --steps 5 ;;
# GPT-2 forward-only benchmark loops inside one range, the calls with no range of their own:
# `inference` with a synchronize after each call; `benchmark_forward` with one after the loop; the model
# compiled, replayed as CUDA graphs (reduce-overhead) or not.
inferloop) prof gpt2_inferloop_nvtx 150 --trace=cuda,nvtx -- python3 $F/hf/gpt2_infer_loop.py --sync ;;
inferloop_graphs) prof gpt2_inferloop_graphs_nvtx 300 --trace=cuda,nvtx -- python3 $F/hf/gpt2_infer_loop.py --sync --compile-mode reduce-overhead --warmup 3 ;;
inferloop_compiled) prof gpt2_inferloop_compiled_nvtx 300 --trace=cuda,nvtx -- python3 $F/hf/gpt2_infer_loop.py --compile-mode default --warmup 3 ;;
inferloop_nosync) prof gpt2_inferloop_nosync_nvtx 150 --trace=cuda,nvtx -- python3 $F/hf/gpt2_infer_loop.py --range-name benchmark_forward ;;
pp) prof pipeline2_nvtx 240 --trace=cuda,nvtx -- torchrun --standalone --nproc_per_node 2 $F/hf/pipeline_train.py --nvtx ;;
pp_gpipe) prof pipeline2_gpipe_nvtx 240 --trace=cuda,nvtx -- torchrun --standalone --nproc_per_node 2 $F/hf/pipeline_train.py --nvtx --schedule gpipe ;;
pp26) prof pipeline2_flags2026 240 $G26B -- torchrun --standalone --nproc_per_node 2 $F/hf/pipeline_train.py --steps 4 ;;
pp_emit) prof pipeline2_emit_nvtx 240 --trace=cuda,nvtx -- torchrun --standalone --nproc_per_node 2 $F/hf/pipeline_train.py --emit-nvtx --steps 4 ;;
compile_nvtx) prof gpt2_compile_nvtx 300 --trace=cuda,nvtx -- python3 $F/hf/gpt2_train.py --nvtx --compile --warmup 3 ;;
compile26) prof gpt2_compile_flags2026 300 $G26B -- python3 $F/hf/gpt2_train.py --compile --warmup 3 ;;
reps) for r in $F/reps/*.nsys-rep; do n=$(basename $r .nsys-rep); cp $r $W/$n.nsys-rep; echo "=== export $n"; export_job $n; done ;;
*) echo "unknown job $job" ;;
esac; done
echo "waiting for exports at ${SECONDS}s"
while :; do busy=0; for p in "${PIDS[@]}"; do kill -0 $p 2>/dev/null && busy=1; done; [ $busy = 0 ] && break; [ $SECONDS -gt ${HARD:-560} ] && { echo "EXPORT WAIT CUT at ${SECONDS}s"; break; }; sleep 2; done
echo "exports done at ${SECONDS}s"
cat $W/exports.log
for f in $W/*.slim.log; do echo "--- $f"; cat $f; done
for f in $W/*.export.log; do echo "--- $f"; tail -3 $f; done
ls -la $W/out; cd $W/out
part=0; size=0; for f in *.sqlite.xz; do  # tars of at most 15 MB each, as files come back
  s=$(stat -c %s $f); if [ $size -gt 0 ] && [ $((size + s)) -gt 15000000 ]; then part=$((part + 1)); size=0; fi
  tar rf $OUT/traces_${TAG}_$part.tar $f; size=$((size + s)); done
ls -la $OUT
