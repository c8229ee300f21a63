#!/bin/bash
# Session 58: cuDNN's kernels on launches made for their steps (benchmarks/cudnn_steps.py, about 100 s), then grid s58
# (run.sh) on whatever GPU came; on an H200 grid s57 after it while LIMIT lasts. The steps' output is packed into
# cudnn-steps.tgz (at most 8 files come back).
export PYTHONPATH=$PWD
mkdir -p $OUT/cudnn-steps
timeout 170 python3 -u benchmarks/cudnn_steps.py --out $OUT/cudnn-steps --budget-s 140 > $OUT/cudnn-steps/run.log 2>&1
echo "cudnn-steps rc=$? at ${SECONDS} s"
(cd $OUT && tar czf cudnn-steps.tgz cudnn-steps && rm -rf cudnn-steps)
H200_GRIDS="${H200_GRIDS:-s57}" LIMIT=$((560 - SECONDS)) bash docs/validation/2026-12-07-s58-check/run.sh
