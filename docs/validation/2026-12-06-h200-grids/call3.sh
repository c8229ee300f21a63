#!/bin/bash
# Session 48, second call: on an H200, grid s46-bnhd (2026-12-06-s46-check/run-h200.sh's run, against
# predictions-s46-bnhd-h200.json) and grids s38 and s38-bwd3 (call2.sh's, without its live cuDNN checks,
# which session 46 ran on an H100); on any other GPU, nothing.
export PYTHONPATH=$PWD
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)
echo "$GPU" | tee $OUT/gpu.txt
echo "$GPU" | grep -q H200 || exit 0
git log --oneline -1 > $OUT/commit.txt 2>/dev/null
python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version())" >> $OUT/gpu.txt
mkdir -p $OUT/bnhd $OUT/s38 $OUT/s38-bwd3
timeout 215 python3 benchmarks/sdpa_ncu.py --grid s46-bnhd --out $OUT/bnhd --budget-s 195 > $OUT/bnhd/run.log 2>&1
timeout 215 python3 benchmarks/sdpa_ncu.py --grid s38 --out $OUT/s38 --budget-s 200 > $OUT/s38/run.log 2>&1
timeout 110 python3 benchmarks/sdpa_ncu.py --grid s38-bwd3 --out $OUT/s38-bwd3 --budget-s 95 > $OUT/s38-bwd3/run.log 2>&1
cd $OUT && tar czf raw.tgz bnhd s38 s38-bwd3 && rm -rf bnhd s38 s38-bwd3 && ls -la
