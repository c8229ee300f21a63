#!/bin/bash
# Session 48: grid s48 (drawn at random, predicted before it ran: predictions-h200.json, predictions-h100.json)
# under ncu on whatever GPU comes; on an H200 also grids s44 and s43 (against their committed
# predictions-h200.json, 2026-12-06-h200-grids.md), or the grids EXTRA names ("" for none).
export PYTHONPATH=$PWD
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)
echo "$GPU" | tee $OUT/gpu.txt
git log --oneline -1 > $OUT/commit.txt 2>/dev/null
python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version())" >> $OUT/gpu.txt
mkdir -p $OUT/s48
timeout 200 python3 benchmarks/sdpa_ncu.py --grid s48 --out $OUT/s48 --budget-s 185 > $OUT/s48/run.log 2>&1
DIRS=s48
if echo "$GPU" | grep -q H200; then
  for g in ${EXTRA-s44 s43}; do
    mkdir -p $OUT/$g
    timeout 200 python3 benchmarks/sdpa_ncu.py --grid $g --out $OUT/$g --budget-s 185 > $OUT/$g/run.log 2>&1
    DIRS="$DIRS $g"
  done
fi
cd $OUT && tar czf raw.tgz $DIRS && rm -rf $DIRS && ls -la
