#!/bin/bash
# Session 43's device call: the one-step backward block's cost (any GPU), then, on an H200 only,
# grid s42 against its committed predictions-h200.json.
export PYTHONPATH=$PWD
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)
echo "$GPU" | tee $OUT/gpu.txt
python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version())" >> $OUT/gpu.txt 2>&1
mkdir -p $OUT/probe
timeout 260 python3 benchmarks/sdpa_decode_bwd_cost.py --out $OUT/probe > $OUT/probe/run.log 2>&1
echo "probe rc=$?" >> $OUT/gpu.txt
if echo "$GPU" | grep -q H200; then
  mkdir -p $OUT/s42
  timeout 300 python3 benchmarks/sdpa_ncu.py --grid s42 --out $OUT/s42 --budget-s 270 > $OUT/s42/run.log 2>&1
fi
cd $OUT && tar czf results.tgz probe $(ls -d s42 2>/dev/null); rm -rf probe s42; ls -la
