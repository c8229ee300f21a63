#!/bin/bash
# Session 58 (prepared in session 57): grid s58 (drawn at random, predicted before it ran, with the L2 edge:
# predictions-h200.json, predictions-h100.json) under ncu on whatever GPU comes; on an H200 then the grids named in
# H200_GRIDS (default "s57 s56 s53 s50": predicted in sessions 57, 56, 53 and 50, never run on an H200) for what time
# is left. RUN_S58=0 skips s58. Each grid is packed as it ends (raw-GRID.tgz); at most 8 files come back.
# ONLY_H200=1 stops at once on any other GPU.
export PYTHONPATH=$PWD
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)
echo "$GPU" | tee $OUT/gpu.txt
git log --oneline -1 > $OUT/commit.txt 2>/dev/null
if [ "${ONLY_H200:-0}" = 1 ] && ! echo "$GPU" | grep -q H200; then echo "not an H200: nothing run"; exit 0; fi
python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version())" >> $OUT/gpu.txt
run_grid() {   # GRID BUDGET_S
  mkdir -p $OUT/$1
  timeout $(($2 + 15)) python3 benchmarks/sdpa_ncu.py --grid $1 --out $OUT/$1 --budget-s $2 > $OUT/$1/run.log 2>&1
  echo "$1 rc=$? at ${SECONDS} s" | tee -a $OUT/calls.log
  (cd $OUT && tar czf raw-$1.tgz $1 && rm -rf $1)
}
[ "${RUN_S58:-1}" = 1 ] && run_grid s58 240
if echo "$GPU" | grep -q H200; then
  for g in ${H200_GRIDS:-s57 s56 s53 s50}; do
    LEFT=$((${LIMIT:-560} - SECONDS - 20))
    [ $LEFT -gt 60 ] && run_grid $g $((LEFT < 200 ? LEFT : 200))
  done
fi
ls -la $OUT
