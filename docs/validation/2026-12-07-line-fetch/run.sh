#!/bin/bash
# Session 51's device call: what a load that misses reads from DRAM by its kind (benchmarks/l2_prefetch_ncu.py),
# whole sectors written alone in their unit (benchmarks/l2_half_units_ncu.py), grid s51 in both layouts (predicted
# before it ran: predictions-*.json), and on an H200 also grid s50 (docs/validation/2026-12-07-s50-check).
# Each step's folder is packed as it ends (raw-STEP.tgz), so a call cut short brings back the steps it finished.
export PYTHONPATH=$PWD
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)
echo "$GPU" | tee $OUT/gpu.txt
git log --oneline -1 > $OUT/commit.txt 2>/dev/null
python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version())" >> $OUT/gpu.txt
pack() { (cd $OUT && tar czf raw-$1.tgz $1 && rm -rf $1); }
for b in prefetch half_units; do
  mkdir -p $OUT/$b
  timeout 100 python3 benchmarks/l2_${b}_ncu.py --out $OUT/$b --budget-s 90 > $OUT/$b/run.log 2>&1
  python3 benchmarks/l2_${b}_ncu.py --summary $OUT/$b | tee -a $OUT/summary.md
  pack $b
done
GRIDS="s51-bnhd s51"
echo "$GPU" | grep -q H200 && GRIDS="$GRIDS s50"
for g in $GRIDS; do
  mkdir -p $OUT/$g
  timeout 150 python3 benchmarks/sdpa_ncu.py --grid $g --out $OUT/$g --budget-s 140 > $OUT/$g/run.log 2>&1
  pack $g
done
ls -la $OUT
