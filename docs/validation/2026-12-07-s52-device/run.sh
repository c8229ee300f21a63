#!/bin/bash
# Session 52's call: on an H200, grid s50 and grid s46 with (B, H, N, d) inputs (2026-12-07-s50-check/run.sh,
# against predictions committed in sessions 50 and 46); then, on any GPU, the tests that need one (the others
# run in CI), for what time is left of the call.
export PYTHONPATH=$PWD
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)
if echo "$GPU" | grep -q H200; then
  bash docs/validation/2026-12-07-s50-check/run.sh > $OUT/grids.log 2>&1
fi
echo "$GPU" > $OUT/gpu.txt
python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version())" >> $OUT/gpu.txt
python3 -c "import cupy, triton; print('cupy', cupy.__version__, 'triton', triton.__version__)" >> $OUT/gpu.txt 2>&1
LEFT=$((570 - SECONDS))
echo "tests/gpu (GPU-only files), ${LEFT} s left" > $OUT/gpu-tests.log
timeout $LEFT python3 -m pytest -q -rs -p no:cacheprovider tests/gpu/test_gpu_kernels.py tests/gpu/test_gpu_missing.py \
  tests/gpu/test_triton_kernel.py tests/gpu/test_triton_validate.py tests/gpu/test_cudnn_validate.py >> $OUT/gpu-tests.log 2>&1
echo "rc=$?" >> $OUT/gpu-tests.log
tail -3 $OUT/gpu-tests.log
