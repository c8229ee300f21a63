#!/bin/bash
# Session 42's device call (run from the repository root, OUT set by the device service):
# grid s42-cudnn-decode under ncu (its predictions committed before), one live `iosim validate
# --vendor cudnn` of a decode forward no grid has, then, on an H200 only, session 38's grid s38.
export PYTHONPATH=$PWD
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)
echo "$GPU" | tee $OUT/gpu.txt
mkdir -p $OUT/s42
timeout 160 python3 benchmarks/sdpa_ncu.py --backend cudnn --grid s42-cudnn-decode --out $OUT/s42 --budget-s 120 > $OUT/s42/run.log 2>&1
timeout 60 python3 -m iosim validate --vendor cudnn --hw h200 --seq-len-q 1 --seq-len-kv 6000 -d 128 -B 3 -H 20 --kv-heads 4 --dtype bf16 > $OUT/validate-decode.txt 2>&1
echo "exit $?" >> $OUT/validate-decode.txt
if echo "$GPU" | grep -q H200; then
  mkdir -p $OUT/s38
  timeout 270 python3 benchmarks/sdpa_ncu.py --grid s38 --out $OUT/s38 --budget-s 235 > $OUT/s38/run.log 2>&1
fi
cd $OUT && tar czf results.tgz s42 $(ls -d s38 2>/dev/null); rm -rf s42 s38; ls -la
