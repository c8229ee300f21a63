#!/bin/bash
# Grid s44-cudnn-odd (cuDNN at head dims that are no multiple of 16; predictions.json committed first) under ncu.
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
mkdir -p $OUT/raw
timeout 420 python3 benchmarks/sdpa_ncu.py --backend cudnn --grid s44-cudnn-odd --out $OUT/raw --budget-s 380 > $OUT/raw/run.log 2>&1
cd $OUT && gzip -f raw/*.csv && tar czf raw.tgz raw && rm -rf raw && ls -la
