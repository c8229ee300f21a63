#!/bin/bash
# Session 50: grid s50 (drawn at random, predicted before it ran: predictions-h200.json, predictions-h100.json)
# under ncu on whatever GPU comes; on an H200 also grid s46 with (B, H, N, d) inputs (against
# 2026-12-06-s46-check/predictions-s46-h200.json, committed in session 46), or the grids EXTRA names ("" for none).
export PYTHONPATH=$PWD
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)
echo "$GPU" | tee $OUT/gpu.txt
git log --oneline -1 > $OUT/commit.txt 2>/dev/null
python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version())" >> $OUT/gpu.txt
mkdir -p $OUT/s50
timeout 230 python3 benchmarks/sdpa_ncu.py --grid s50 --out $OUT/s50 --budget-s 215 > $OUT/s50/run.log 2>&1
DIRS=s50
if echo "$GPU" | grep -q H200; then
  for g in ${EXTRA-s46}; do
    mkdir -p $OUT/$g
    timeout 230 python3 benchmarks/sdpa_ncu.py --grid $g --out $OUT/$g --budget-s 215 > $OUT/$g/run.log 2>&1
    DIRS="$DIRS $g"
  done
fi
cd $OUT && tar czf raw.tgz $DIRS && rm -rf $DIRS && ls -la
