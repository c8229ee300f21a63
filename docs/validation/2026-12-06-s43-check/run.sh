#!/bin/bash
# Grid s43 (drawn at random, predicted for the H100 and the H200 before it ran) under ncu.
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
mkdir -p $OUT/raw
timeout 400 python3 benchmarks/sdpa_ncu.py --grid s43 --out $OUT/raw --budget-s 330 > $OUT/raw/run.log 2>&1
cd $OUT && tar czf raw.tgz raw; rm -rf raw; ls -la
