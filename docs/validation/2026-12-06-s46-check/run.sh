#!/bin/bash
# Grid s46 (drawn at random in session 46, predicted before it ran) under ncu on whatever GPU comes: first with
# the inputs laid out (B, N, H, d) (grid s46-bnhd, the layout model's prospective check), then (B, H, N, d).
export PYTHONPATH=$PWD
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)
echo "$GPU" | tee $OUT/gpu.txt
python3 -c "import torch; print(torch.__version__, torch.version.cuda)" >> $OUT/gpu.txt
mkdir -p $OUT/bnhd $OUT/bhnd
timeout 270 python3 benchmarks/sdpa_ncu.py --grid s46-bnhd --out $OUT/bnhd --budget-s 250 > $OUT/bnhd/run.log 2>&1
timeout 270 python3 benchmarks/sdpa_ncu.py --grid s46 --out $OUT/bhnd --budget-s 250 > $OUT/bhnd/run.log 2>&1
cd $OUT && tar czf raw.tgz bnhd bhnd && rm -rf bnhd bhnd && ls -la
