#!/bin/bash
# Session 50's second call: on an H200 only, grid s50 and grid s46 with (B, H, N, d) inputs (run.sh); on any
# other GPU nothing (s50 had run on an H100 already).
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)
echo "$GPU" | tee $OUT/gpu.txt
echo "$GPU" | grep -q H200 || exit 0
exec bash docs/validation/2026-12-07-s50-check/run.sh
