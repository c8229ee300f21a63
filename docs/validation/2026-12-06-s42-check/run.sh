#!/bin/bash
# Grid s42 (drawn at random, predicted for the H100 and the H200 before it ran) under ncu.
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
mkdir -p $OUT/raw
timeout 420 python3 benchmarks/sdpa_ncu.py --grid s42 --out $OUT/raw --budget-s 360 > $OUT/raw/run.log 2>&1
cd $OUT && tar czf raw.tgz raw; rm -rf raw; ls -la
