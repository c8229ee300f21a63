#!/bin/bash
# Session 53's fifth call: grid s53-decode128 (GQA decode backwards at d = 128, predicted first:
# decode/predictions-128-*.json, and by the 45 MiB description: decode/predictions-128-h100-45mib.json); on an H200
# also s53-decode, then grids s53 and s50 for what time is left (run.sh).
export PYTHONPATH=$PWD
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)
echo "$GPU" | tee $OUT/gpu.txt
GRIDS=s53-decode128
echo "$GPU" | grep -q H200 && GRIDS="s53-decode128 s53-decode"
for g in $GRIDS; do
  mkdir -p $OUT/$g
  timeout 150 python3 benchmarks/sdpa_ncu.py --grid $g --out $OUT/$g --budget-s 140 > $OUT/$g/run.log 2>&1
  echo "$g rc=$? at ${SECONDS} s" | tee -a $OUT/calls.log
done
if echo "$GPU" | grep -q H200; then
  LIMIT=$((${LIMIT:-560} - SECONDS)) bash docs/validation/2026-12-07-s53-check/run.sh
fi
ls -la $OUT
