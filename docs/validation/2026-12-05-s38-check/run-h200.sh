#!/bin/bash
# Grid s38 and s38-bwd3 on an H200 (session 42's attempt; on any other GPU it does nothing).
export PYTHONPATH=$PWD
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)
echo "$GPU" | tee $OUT/gpu.txt
echo "$GPU" | grep -q H200 || exit 0
mkdir -p $OUT/s38 $OUT/s38-bwd3
timeout 280 python3 benchmarks/sdpa_ncu.py --grid s38 --out $OUT/s38 --budget-s 235 > $OUT/s38/run.log 2>&1
timeout 120 python3 benchmarks/sdpa_ncu.py --grid s38-bwd3 --out $OUT/s38-bwd3 --budget-s 95 > $OUT/s38-bwd3/run.log 2>&1
cd $OUT && tar czf results.tgz s38 s38-bwd3; rm -rf s38 s38-bwd3; ls -la
