#!/bin/bash
# Session 53's third call: s53's two causal forwards the model misses on the H100 (d = 158 and 175) three times
# more, each head dim in its own process (sdpa_ncu.py --head-dim): how far their DRAM reads move run to run.
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
for rep in 1 2 3; do
  mkdir -p $OUT/rep$rep
  for d in 158 175; do
    timeout 60 python3 benchmarks/sdpa_ncu.py --grid s53 --head-dim $d --out $OUT/rep$rep --budget-s 45 \
      >> $OUT/rep$rep/run.log 2>&1
  done
  echo "rep$rep at ${SECONDS} s" | tee -a $OUT/calls.log
done
cd $OUT && tar czf raw-repeats.tgz rep1 rep2 rep3 && rm -rf rep1 rep2 rep3 && ls -la
