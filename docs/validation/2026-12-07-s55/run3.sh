#!/bin/bash
# Session 55's third call: on an H200 only, grids s53, s50 and s46 (docs/validation/2026-12-07-s53-check/run.sh,
# each packed as raw-GRID.tgz); on any other GPU it stops at once. The small files in meta.tgz.
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)
echo "$GPU"
echo "$GPU" | grep -q H200 || { echo "not an H200: nothing run"; exit 0; }
mkdir -p $OUT/grids
OUT=$OUT/grids LIMIT=${LIMIT:-560} bash docs/validation/2026-12-07-s53-check/run.sh
mv $OUT/grids/raw-*.tgz $OUT/ 2>/dev/null
(cd $OUT && tar czf meta.tgz grids && rm -rf grids)
ls -la $OUT
