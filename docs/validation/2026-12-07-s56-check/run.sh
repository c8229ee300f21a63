#!/bin/bash
# Session 56: grid s56 (drawn at random, predicted before it ran: predictions-h200.json, predictions-h100.json)
# under ncu on whatever GPU comes; on an H200 then the grids named in H200_GRIDS (default "s53 s50 s46": predicted
# in sessions 53, 50 and 46, never run on an H200) for what time is left. RUN_S56=0 skips s56. Each grid is packed as
# it ends (raw-GRID.tgz); at most 8 files come back.
export PYTHONPATH=$PWD
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)
echo "$GPU" | tee $OUT/gpu.txt
git log --oneline -1 > $OUT/commit.txt 2>/dev/null
python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version())" >> $OUT/gpu.txt
run_grid() {   # GRID BUDGET_S
  mkdir -p $OUT/$1
  timeout $(($2 + 15)) python3 benchmarks/sdpa_ncu.py --grid $1 --out $OUT/$1 --budget-s $2 > $OUT/$1/run.log 2>&1
  echo "$1 rc=$? at ${SECONDS} s" | tee -a $OUT/calls.log
  (cd $OUT && tar czf raw-$1.tgz $1 && rm -rf $1)
}
[ "${RUN_S56:-1}" = 1 ] && run_grid s56 300
if echo "$GPU" | grep -q H200; then
  for g in ${H200_GRIDS:-s53 s50 s46}; do
    LEFT=$((${LIMIT:-560} - SECONDS - 20))
    [ $LEFT -gt 60 ] && run_grid $g $((LEFT < 220 ? LEFT : 220))
  done
fi
ls -la $OUT
