#!/bin/bash
# The measurements behind a hardware profile's `measured:` block, on the device machine:
#
#     bash benchmarks/characterize_gpu.sh DIR
#
# DIR/env.txt (GPU, driver, versions), DIR/device.txt (what the driver reports: L2 size, SMs),
# DIR/rates/rates.json (benchmarks/microbench_rates.py: instruction, DRAM and L2 rates),
# DIR/rates/floor.csv (an empty kernel's duration under ncu), DIR/small.csv (small memory-bound
# kernels under ncu, benchmarks/microbench_small_kernels.py), DIR/gemm.json (cuBLAS fp16 GEMM
# rate, benchmarks/gemm_rate.py) and DIR/scatter/ (the L2's sets, benchmarks/l2_scatter_ncu.py).
# Each step runs on its own and DIR/steps.log says how it ended and the SM clock after it; the
# script exits 1 when any step failed.
set -u
OUT=$(mkdir -p "${1:?usage: bash benchmarks/characterize_gpu.sh DIR}" && cd "$1" && pwd)
cd "$(dirname "$0")/.." || exit 2
mkdir -p "$OUT/rates" "$OUT/scatter"
: > "$OUT/steps.log"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
NCU=(ncu --clock-control none --csv --metrics gpu__time_duration.sum)
failed=0
step() {
    local name=$1 t0=$SECONDS rc; shift
    "$@"; rc=$?
    [ "$rc" -eq 0 ] || failed=$((failed + 1))
    echo "$name: rc $rc in $((SECONDS - t0)) s; SM clock after: $(nvidia-smi --query-gpu=clocks.sm --format=csv,noheader)" \
        >> "$OUT/steps.log"
}
env_info() {
    nvidia-smi --query-gpu=name,driver_version,clocks.current.sm,clocks.max.sm --format=csv &&
    python3 -c "import cupy; print('cupy', cupy.__version__)" &&
    python3 -c "import torch; print('torch', torch.__version__)" && ncu --version | tail -1
}
step env env_info > "$OUT/env.txt" 2>&1
step device python3 -c "
import cupy as cp
p = cp.cuda.runtime.getDeviceProperties(0)
print({k: p[k] for k in ('name', 'l2CacheSize', 'persistingL2CacheMaxSize', 'multiProcessorCount',
                         'sharedMemPerMultiprocessor', 'clockRate', 'memoryClockRate', 'memoryBusWidth') if k in p})
" > "$OUT/device.txt" 2>&1
step rates python3 benchmarks/microbench_rates.py --out "$OUT/rates" > "$OUT/rates/stdout.log" 2>&1
step floor "${NCU[@]}" python3 benchmarks/microbench_rates.py --ncu-floor > "$OUT/rates/floor.csv" 2> "$OUT/rates/floor.err"
step small "${NCU[@]}" python3 benchmarks/microbench_small_kernels.py > "$OUT/small.csv" 2> "$OUT/small.err"
step gemm python3 benchmarks/gemm_rate.py > "$OUT/gemm.json" 2> "$OUT/gemm.err"
step scatter python3 benchmarks/l2_scatter_ncu.py --out "$OUT/scatter" > "$OUT/scatter/stdout.log" 2>&1
[ "$failed" -eq 0 ] || { echo "characterize_gpu.sh: $failed step(s) failed, see $OUT/steps.log" >&2; exit 1; }
