#!/bin/bash
# Session 55's fourth call: benchmarks/l2_dirty_ncu.py --home, twice (is a dirty copy leaving the writer's
# partition written into its home, refreshing it there?), packed into home.tgz.
export PYTHONPATH=$PWD
W=$OUT/home; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $W/gpu.txt
git log --oneline -1 > $W/commit.txt 2>/dev/null
for r in 1 2; do
  mkdir -p $W/run$r
  timeout 120 python3 benchmarks/l2_dirty_ncu.py --out $W/run$r --home > $W/run$r/run.log 2>&1
  echo "home run$r rc=$? at ${SECONDS} s" | tee -a $W/calls.log
  python3 benchmarks/l2_dirty_ncu.py --table $W/run$r
done
(cd $OUT && tar czf home.tgz home && rm -rf home)
ls -la $OUT
