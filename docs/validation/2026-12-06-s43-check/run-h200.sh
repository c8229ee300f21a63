#!/bin/bash
# On an H200 only (elsewhere it does nothing): grid s43 (predictions-h200.json), then grid s42 (its own).
export PYTHONPATH=$PWD
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)
echo "$GPU" | tee $OUT/gpu.txt
echo "$GPU" | grep -q H200 || exit 0
mkdir -p $OUT/raw $OUT/s42
timeout 200 python3 benchmarks/sdpa_ncu.py --grid s43 --out $OUT/raw --budget-s 180 > $OUT/raw/run.log 2>&1
timeout 300 python3 benchmarks/sdpa_ncu.py --grid s42 --out $OUT/s42 --budget-s 270 > $OUT/s42/run.log 2>&1
cd $OUT && tar czf raw.tgz raw s42; rm -rf raw s42; ls -la
