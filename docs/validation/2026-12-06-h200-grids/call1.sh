#!/bin/bash
# Session 45, first call: on an H200, grids s44, s43 and s42 against their committed predictions-h200.json;
# on any other GPU, the live --vendor cudnn checks (2026-12-06-cudnn-odd/live/run.sh).
export PYTHONPATH=$PWD
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)
echo "$GPU" | tee $OUT/gpu.txt
git log --oneline -1 > $OUT/commit.txt 2>/dev/null
python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version())" >> $OUT/gpu.txt
if echo "$GPU" | grep -q H200; then
  mkdir -p $OUT/s44 $OUT/s43 $OUT/s42
  timeout 200 python3 benchmarks/sdpa_ncu.py --grid s44 --out $OUT/s44 --budget-s 190 > $OUT/s44/run.log 2>&1
  timeout 140 python3 benchmarks/sdpa_ncu.py --grid s43 --out $OUT/s43 --budget-s 130 > $OUT/s43/run.log 2>&1
  timeout 200 python3 benchmarks/sdpa_ncu.py --grid s42 --out $OUT/s42 --budget-s 190 > $OUT/s42/run.log 2>&1
  cd $OUT && tar czf raw.tgz s44 s43 s42 && rm -rf s44 s43 s42 && ls -la
else
  bash docs/validation/2026-12-06-cudnn-odd/live/run.sh
fi
