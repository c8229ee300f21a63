#!/bin/bash
# Session 54's first call: benchmarks/l2_dirty_ncu.py --twice (is a line hit once kept over newer lines never hit?),
# the GQA decode backward sweeps (grids s53-decode, s53-decode128) with the L2's lookups by
# source (--metric-set l2: near misses, lookups at the home over the fabric, hits there; benchmarks/l2_breakdown.py),
# then, on an H200 only, grids s53, s50 and s46 (predicted in sessions 53, 50 and 46; run.sh of s53) for the time left.
export PYTHONPATH=$PWD
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)
echo "$GPU" | tee $OUT/gpu.txt
git log --oneline -1 > $OUT/commit.txt 2>/dev/null
mkdir -p $OUT/l2-twice
timeout 150 python3 benchmarks/l2_dirty_ncu.py --out $OUT/l2-twice --twice > $OUT/l2-twice/run.log 2>&1
echo "l2-twice rc=$? at ${SECONDS} s" | tee -a $OUT/calls.log
python3 benchmarks/l2_dirty_ncu.py --table $OUT/l2-twice
for g in s53-decode s53-decode128; do
  mkdir -p $OUT/l2-$g
  timeout 170 python3 benchmarks/sdpa_ncu.py --grid $g --metric-set l2 --out $OUT/l2-$g --budget-s 160 > $OUT/l2-$g/run.log 2>&1
  echo "l2-$g rc=$? at ${SECONDS} s" | tee -a $OUT/calls.log
done
if echo "$GPU" | grep -q H200; then
  mkdir -p $OUT/s53
  OUT=$OUT/s53 LIMIT=$((${LIMIT:-560} - SECONDS)) bash docs/validation/2026-12-07-s53-check/run.sh
fi
ls -la $OUT
