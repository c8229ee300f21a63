#!/bin/bash
# Live `iosim validate --vendor cudnn` at head dims no multiple of 16 on shapes no grid has (the preset as
# committed before the call), then the cuDNN GPU tests.
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
v() { name=$1; shift; timeout 120 python3 -m iosim validate --vendor cudnn --hw h200 "$@" > $OUT/$name.txt 2>&1; echo "exit $?" >> $OUT/$name.txt; }
v d88-causal-gqa -N 3000 -d 88 -B 2 -H 6 --kv-heads 3 --causal --dtype bf16
v d184-unequal --seq-len-q 1234 --seq-len-kv 2345 -d 184 -B 1 -H 3
v d56-decode-one-split --seq-len-q 1 --seq-len-kv 400 -d 56 -B 3 -H 4
v d232-decode --seq-len-q 1 --seq-len-kv 5000 -d 232 -B 1 -H 8 --kv-heads 2
timeout 300 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_cudnn_validate.py tests/gpu/test_cudnn_measurement.py > $OUT/gpu-tests.txt 2>&1
tail -3 $OUT/gpu-tests.txt
grep -h "exit" $OUT/d*.txt
