#!/bin/bash
# Session 53's sixth call: benchmarks/l2_dirty_ncu.py --strided (C's lines one every 4 KiB, written or read,
# beside a contiguous written C): do lines written at a GQA decode backward's dK/dV stride take more room?
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
mkdir -p $OUT/l2-strided
timeout 150 python3 benchmarks/l2_dirty_ncu.py --out $OUT/l2-strided --strided > $OUT/l2-strided/run.log 2>&1
echo "rc=$? at ${SECONDS} s"
python3 benchmarks/l2_dirty_ncu.py --table $OUT/l2-strided
