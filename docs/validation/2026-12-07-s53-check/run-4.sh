#!/bin/bash
# Session 53's fourth call: grid s53-decode (the GQA decodes' backwards over 1-16 batches, predicted first:
# decode/predictions-*.json); then, on an H200, grids s53, s50 and s46 for what time is left (run.sh).
export PYTHONPATH=$PWD
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)
echo "$GPU" | tee $OUT/gpu.txt
mkdir -p $OUT/s53-decode
timeout 150 python3 benchmarks/sdpa_ncu.py --grid s53-decode --out $OUT/s53-decode --budget-s 140 > $OUT/s53-decode/run.log 2>&1
echo "s53-decode rc=$? at ${SECONDS} s" | tee -a $OUT/calls.log
if echo "$GPU" | grep -q H200; then
  LIMIT=$((${LIMIT:-560} - SECONDS)) bash docs/validation/2026-12-07-s53-check/run.sh
fi
ls -la $OUT
