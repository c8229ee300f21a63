#!/bin/bash
# SDPA grids under ncu on a device machine (the device tool's `run`, from the repository's root; what is written under
# $OUT comes back): FIRST on whatever GPU comes (FIRST_S seconds at most, default 240), then on an H200 each grid of H200_GRIDS (200 s at
# most each) while LIMIT seconds (default 560) last. FIRST empty: none first; ONLY_H200=1: nothing on another GPU.
# Each grid is packed as it ends (raw-GRID.tgz: at most 8 files come back). gpu.txt: the GPU, driver, PyTorch, CUDA
# and cuDNN; commit.txt: git's last commit there, which may be older than the tree that ran (the history need not
# travel with it). The dated pages' run.sh name the grids (docs/validation/2026-12-07-s53-check/run.sh on).
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
[ -n "$FIRST" ] && run_grid $FIRST ${FIRST_S:-240}
if echo "$GPU" | grep -q H200; then
  for g in $H200_GRIDS; do
    LEFT=$((${LIMIT:-560} - SECONDS - 20))
    [ $LEFT -gt 60 ] && run_grid $g $((LEFT < 200 ? LEFT : 200))
  done
fi
ls -la $OUT
