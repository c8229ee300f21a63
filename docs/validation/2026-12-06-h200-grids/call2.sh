#!/bin/bash
# Session 45, second call: on an H200, grids s38 and s38-bwd3 (predicted in session 38) and the live
# --vendor cudnn checks; on any other GPU, the first 13 files of tests/gpu.
export PYTHONPATH=$PWD
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)
echo "$GPU" | tee $OUT/gpu.txt
if echo "$GPU" | grep -q H200; then
  mkdir -p $OUT/s38 $OUT/s38-bwd3 $OUT/live
  timeout 230 python3 benchmarks/sdpa_ncu.py --grid s38 --out $OUT/s38 --budget-s 215 > $OUT/s38/run.log 2>&1
  timeout 110 python3 benchmarks/sdpa_ncu.py --grid s38-bwd3 --out $OUT/s38-bwd3 --budget-s 95 > $OUT/s38-bwd3/run.log 2>&1
  OUT=$OUT/live timeout 200 bash docs/validation/2026-12-06-cudnn-odd/live/run.sh
  cd $OUT && tar czf raw.tgz s38 s38-bwd3 live && rm -rf s38 s38-bwd3 live && ls -la
else
  cd tests/gpu && timeout 560 python3 -m pytest -q -p no:cacheprovider $(ls test_*.py | head -13) > $OUT/gpu-tests-1.log 2>&1
  echo "rc=$?" >> $OUT/gpu-tests-1.log; tail -3 $OUT/gpu-tests-1.log
fi
