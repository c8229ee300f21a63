#!/bin/bash
# Session 42's second device call: the three head dims of grid s42-cudnn-decode that run.sh's budget
# did not reach (grid s42-cudnn-decode-rest: the same configs, predicted in predictions.json), the
# cudnn GPU tests (live --vendor cudnn of a decode forward among them), and, on an H200 only, grid s38.
export PYTHONPATH=$PWD
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)
echo "$GPU" | tee $OUT/gpu.txt
mkdir -p $OUT/rest
timeout 150 python3 benchmarks/sdpa_ncu.py --backend cudnn --grid s42-cudnn-decode-rest --out $OUT/rest --budget-s 120 > $OUT/rest/run.log 2>&1
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_cudnn_validate.py tests/gpu/test_cudnn_decode_replay.py > $OUT/gpu-tests.txt 2>&1
if echo "$GPU" | grep -q H200; then
  mkdir -p $OUT/s38
  timeout 270 python3 benchmarks/sdpa_ncu.py --grid s38 --out $OUT/s38 --budget-s 235 > $OUT/s38/run.log 2>&1
fi
cd $OUT && tar czf results.tgz rest $(ls -d s38 2>/dev/null); rm -rf rest s38; ls -la
