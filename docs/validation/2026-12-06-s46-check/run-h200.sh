#!/bin/bash
# Grid s46-bnhd on an H200 against predictions-s46-bnhd-h200.json (committed before any run); on any other GPU
# nothing (the session's last device time).
export PYTHONPATH=$PWD
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)
echo "$GPU" | tee $OUT/gpu.txt
echo "$GPU" | grep -q H200 || exit 0
python3 -c "import torch; print(torch.__version__, torch.version.cuda)" >> $OUT/gpu.txt
mkdir -p $OUT/bnhd
timeout 220 python3 benchmarks/sdpa_ncu.py --grid s46-bnhd --out $OUT/bnhd --budget-s 200 > $OUT/bnhd/run.log 2>&1
cd $OUT && tar czf raw.tgz bnhd && rm -rf bnhd && ls -la
