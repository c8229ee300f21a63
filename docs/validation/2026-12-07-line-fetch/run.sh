#!/bin/bash
# Session 51's device call: what a load that misses reads from DRAM by its kind (benchmarks/l2_prefetch_ncu.py),
# whole sectors written alone in their unit (benchmarks/l2_half_units_ncu.py), grid s51 in both layouts (predicted
# before it ran: predictions-*.json), and on an H200 also grid s50 (docs/validation/2026-12-07-s50-check).
export PYTHONPATH=$PWD
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)
echo "$GPU" | tee $OUT/gpu.txt
git log --oneline -1 > $OUT/commit.txt 2>/dev/null
python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version())" >> $OUT/gpu.txt
mkdir -p $OUT/prefetch $OUT/half-units $OUT/s51 $OUT/s51-bnhd
timeout 100 python3 benchmarks/l2_prefetch_ncu.py --out $OUT/prefetch --budget-s 90 > $OUT/prefetch/run.log 2>&1
python3 benchmarks/l2_prefetch_ncu.py --summary $OUT/prefetch | tee $OUT/summary.md
timeout 100 python3 benchmarks/l2_half_units_ncu.py --out $OUT/half-units --budget-s 90 > $OUT/half-units/run.log 2>&1
python3 benchmarks/l2_half_units_ncu.py --summary $OUT/half-units | tee -a $OUT/summary.md
for g in s51-bnhd s51; do
  timeout 110 python3 benchmarks/sdpa_ncu.py --grid $g --out $OUT/$g --budget-s 100 > $OUT/$g/run.log 2>&1
done
DIRS="prefetch half-units s51 s51-bnhd"
if echo "$GPU" | grep -q H200; then
  for g in s50; do
    mkdir -p $OUT/$g
    timeout 150 python3 benchmarks/sdpa_ncu.py --grid $g --out $OUT/$g --budget-s 140 > $OUT/$g/run.log 2>&1
    DIRS="$DIRS $g"
  done
fi
cd $OUT && tar czf raw.tgz $DIRS && rm -rf $DIRS && ls -la
