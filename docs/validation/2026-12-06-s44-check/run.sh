#!/bin/bash
# Grid s44 (drawn at random, predicted for the H100 and the H200 before it ran) under ncu, on whatever
# GPU comes; on an H200, grid s43 after it too (its predictions-h200.json, committed in session 43).
export PYTHONPATH=$PWD
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)
echo "$GPU" | tee $OUT/gpu.txt
mkdir -p $OUT/raw
timeout 330 python3 benchmarks/sdpa_ncu.py --grid s44 --out $OUT/raw --budget-s 300 > $OUT/raw/run.log 2>&1
if echo "$GPU" | grep -q H200; then
    mkdir -p $OUT/s43
    timeout 200 python3 benchmarks/sdpa_ncu.py --grid s43 --out $OUT/s43 --budget-s 180 > $OUT/s43/run.log 2>&1
fi
cd $OUT && tar czf raw.tgz raw $(ls -d s43 2>/dev/null); rm -rf raw s43; ls -la
