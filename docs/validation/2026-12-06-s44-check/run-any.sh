#!/bin/bash
# Session 44's last call: on an H200, grid s44 against predictions-h200.json; elsewhere, the live
# --vendor cudnn checks at odd head dims (docs/validation/2026-12-06-cudnn-odd/live/run.sh, without its GPU tests).
export PYTHONPATH=$PWD
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)
echo "$GPU" | tee $OUT/gpu.txt
if echo "$GPU" | grep -q H200; then
  mkdir -p $OUT/raw
  timeout 200 python3 benchmarks/sdpa_ncu.py --grid s44 --out $OUT/raw --budget-s 180 > $OUT/raw/run.log 2>&1
  cd $OUT && tar czf raw.tgz raw && rm -rf raw && ls -la
else
  v() { name=$1; shift; timeout 60 python3 -m iosim validate --vendor cudnn --hw h200 "$@" > $OUT/$name.txt 2>&1; echo "exit $?" >> $OUT/$name.txt; }
  v d88-causal-gqa -N 3000 -d 88 -B 2 -H 6 --kv-heads 3 --causal --dtype bf16
  v d184-unequal --seq-len-q 1234 --seq-len-kv 2345 -d 184 -B 1 -H 3
  v d232-decode --seq-len-q 1 --seq-len-kv 5000 -d 232 -B 1 -H 8 --kv-heads 2
  grep -h "exit" $OUT/d*.txt
fi
