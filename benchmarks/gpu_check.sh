#!/usr/bin/env bash
# One short GPU check (about 2-3 minutes on an H200): correctness of both kernels
# against the float64 reference, kernel throughput, and the unchanged CLI on the GPU.
# Needs JAX with CUDA, numpy, h5py, xarray, typer, optax, matplotlib (no network, no install).
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader || true
$PY benchmarks/gpu_check.py
echo "--- the same sweep grid command on the GPU (10^7 configurations, default settings):"
out=$(mktemp -d)/gpu.h5
/usr/bin/time -f "wall %e s" $PY -m netsweep_jax.sweep.cli grid --model resnet50 --bw 1..100@100 --ratio 1..100 \
  --nodes 1..100 --util 0.1..1:0.1 --out "$out"
$PY -c "import h5py,sys; f=h5py.File(sys.argv[1]); print('device_kind:', f.attrs['device_kind'])" "$out"
echo "--- whole commands (issue: let the GPU's speed reach the user): wall time, kernel rate above"
for spec in "1..400@1000 1..1000@1000log 1..100 all float32" "1..400@1000 1..1000@1000log 1..1000 scaling_factor float16"; do
  set -- $spec
  vars=$4; [ "$vars" = all ] && vars=scaling_factor,iteration_time,exposed_comm,comm_time
  /usr/bin/time -f "wall %e s: --bw $1 --ratio $2 --nodes $3 --vars $vars --store $5" $PY -m netsweep_jax.sweep.cli grid \
    --model resnet50 --fusion-mb 0 --bw "$1" --ratio "$2" --nodes "$3" --vars "$vars" --store "$5" -q --force \
    --out "$(dirname "$out")/whole.h5"
  rm -f "$(dirname "$out")/whole.h5"
done
echo "--- 10^10 configurations reduced on the device to 4*10^6 cells (argmax over collective, max over ratio):"
/usr/bin/time -f "wall %e s: 10^10 reduced" $PY -m netsweep_jax.sweep.cli grid --model resnet50 --fusion-mb 0 \
  --bw 1..400@4000 --ratio 1..1000@1000log --nodes 1..1024 --collective ring,tree,hierarchical \
  --reduce argmax:collective --reduce max:ratio --vars scaling_factor -q --force --out "$(dirname "$out")/reduced.h5"
rm -f "$(dirname "$out")/reduced.h5"
echo "--- layouts (large models): the same benchmark and the same sweep plan command as on the CPU:"
$PY benchmarks/bench_layouts.py --repeats 5 --bandwidths 64
/usr/bin/time -f "wall %e s: sweep plan, llama3-70b on 1024 H100s" $PY -m netsweep_jax.sweep.cli plan \
  --model llama3-70b --gpu h100 --gpus 1024 --global-batch 1024 --bw 100,200,400 --nics-per-node 1,8 -q --force \
  --out "$(dirname "$out")/plan.h5" | tail -3
rm -f "$(dirname "$out")/plan.h5"
