#!/bin/bash
# Session 55's second call (the first one's files were lost: a call brings back at most 8 files, so everything
# here is packed): l2_shared_ncu's `together`, l2_dirty_ncu --twice, the GQA decode sweeps with the L2's lookups
# by source (micro.tgz), then on an H200 grids s53, s50 and s46 (docs/validation/2026-12-07-s53-check/run.sh:
# raw-GRID.tgz each) for the time left; the small files in meta.tgz.
export PYTHONPATH=$PWD
W=$OUT/micro; mkdir -p $W
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)
echo "$GPU" | tee $W/gpu.txt
git log --oneline -1 > $W/commit.txt 2>/dev/null
python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version())" >> $W/gpu.txt
mkdir -p $W/l2-together $W/l2-twice
IOSIM_PATTERNS=together timeout 90 python3 benchmarks/l2_shared_ncu.py --out $W/l2-together > $W/l2-together/run.log 2>&1
echo "l2-together rc=$? at ${SECONDS} s" | tee -a $W/calls.log
timeout 120 python3 benchmarks/l2_dirty_ncu.py --out $W/l2-twice --twice > $W/l2-twice/run.log 2>&1
echo "l2-twice rc=$? at ${SECONDS} s" | tee -a $W/calls.log
python3 benchmarks/l2_dirty_ncu.py --table $W/l2-twice
for g in s53-decode s53-decode128; do
  mkdir -p $W/l2-$g
  timeout 120 python3 benchmarks/sdpa_ncu.py --grid $g --metric-set l2 --out $W/l2-$g --budget-s 110 > $W/l2-$g/run.log 2>&1
  echo "l2-$g rc=$? at ${SECONDS} s" | tee -a $W/calls.log
done
(cd $OUT && tar czf micro.tgz micro && rm -rf micro)
if echo "$GPU" | grep -q H200; then
  mkdir -p $OUT/grids
  OUT=$OUT/grids LIMIT=$((${LIMIT:-570} - SECONDS)) bash docs/validation/2026-12-07-s53-check/run.sh
  mv $OUT/grids/raw-*.tgz $OUT/ 2>/dev/null
  (cd $OUT && tar czf meta.tgz grids && rm -rf grids)
fi
ls -la $OUT
