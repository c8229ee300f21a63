#!/bin/bash
# On an H200 only (elsewhere it does nothing): grid s42 (predictions-h200.json), then grid s38.
export PYTHONPATH=$PWD
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)
echo "$GPU" | tee $OUT/gpu.txt
echo "$GPU" | grep -q H200 || exit 0
mkdir -p $OUT/raw $OUT/s38
timeout 200 python3 benchmarks/sdpa_ncu.py --grid s42 --out $OUT/raw --budget-s 180 > $OUT/raw/run.log 2>&1
timeout 270 python3 benchmarks/sdpa_ncu.py --grid s38 --out $OUT/s38 --budget-s 235 > $OUT/s38/run.log 2>&1
cd $OUT && tar czf raw.tgz raw s38; rm -rf raw s38; ls -la
