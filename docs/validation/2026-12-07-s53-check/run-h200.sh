#!/bin/bash
# On an H200 only: grid s53 (run.sh, for the time the call has); on any other GPU nothing (s53 ran on an H100).
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)
echo "$GPU" | tee $OUT/gpu.txt
echo "$GPU" | grep -q H200 || exit 0
exec bash docs/validation/2026-12-07-s53-check/run.sh
