#!/bin/bash
# Session 52's call: grid s52 in both input layouts (predicted before it ran: predictions-*.json, with the
# model before session 52's last-line keying in before/), then the tests that need a GPU (the others run in CI)
# for what time is left of the call. Each grid is packed as it ends (raw-GRID.tgz).
export PYTHONPATH=$PWD
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)
echo "$GPU" > $OUT/gpu.txt
git log --oneline -1 > $OUT/commit.txt 2>/dev/null
python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version())" >> $OUT/gpu.txt
python3 -c "import cupy, triton; print('cupy', cupy.__version__, 'triton', triton.__version__)" >> $OUT/gpu.txt 2>&1
for g in s52 s52-bnhd; do
  mkdir -p $OUT/$g
  timeout 130 python3 benchmarks/sdpa_ncu.py --grid $g --out $OUT/$g --budget-s 120 > $OUT/$g/run.log 2>&1
  (cd $OUT && tar czf raw-$g.tgz $g && rm -rf $g)
done
LEFT=$((${LIMIT:-440} - SECONDS))
echo "tests/gpu (GPU-only files), ${LEFT} s left" > $OUT/gpu-tests.log
timeout $LEFT python3 -m pytest -q -rs -p no:cacheprovider tests/gpu/test_gpu_kernels.py tests/gpu/test_gpu_missing.py \
  tests/gpu/test_triton_kernel.py tests/gpu/test_triton_validate.py tests/gpu/test_cudnn_validate.py >> $OUT/gpu-tests.log 2>&1
echo "rc=$?" >> $OUT/gpu-tests.log
tail -3 $OUT/gpu-tests.log; ls -la $OUT
