#!/bin/bash
# Session 53's second call: first benchmarks/l2_dirty_ncu.py (does the L2 evict clean or dirty lines first?),
# then on an H200 run.sh (grids s53, s50 and s46); on an H100 (which ran s53 in the first call) s53's four
# causal configs (d = 56, 101, 158, 175) three times more, each in its own process: how far the forwards'
# DRAM reads move run to run, beside the model's misses at d = 158 and 175.
export PYTHONPATH=$PWD
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)
echo "$GPU" | tee $OUT/gpu.txt
mkdir -p $OUT/l2-dirty
timeout 120 python3 benchmarks/l2_dirty_ncu.py --out $OUT/l2-dirty > $OUT/l2-dirty/run.log 2>&1
echo "l2-dirty rc=$? at ${SECONDS} s" | tee -a $OUT/calls.log
python3 benchmarks/l2_dirty_ncu.py --table $OUT/l2-dirty 2>&1 | tee -a $OUT/calls.log
if echo "$GPU" | grep -q H200; then
  LIMIT=$((${LIMIT:-560} - SECONDS)) bash docs/validation/2026-12-07-s53-check/run.sh
  exit
fi
for rep in 1 2 3; do
  mkdir -p $OUT/rep$rep
  for d in 56 101 158 175; do
    timeout 60 python3 benchmarks/sdpa_ncu.py --grid s53 --head-dim $d --out $OUT/rep$rep --budget-s 50 \
      >> $OUT/rep$rep/run.log 2>&1
  done
  echo "rep$rep at ${SECONDS} s" | tee -a $OUT/calls.log
done
cd $OUT && tar czf raw-repeats.tgz rep1 rep2 rep3 && rm -rf rep1 rep2 rep3 && ls -la
