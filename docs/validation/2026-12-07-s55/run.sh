#!/bin/bash
# Session 55's call: benchmarks/l2_shared_ncu.py's new pattern `together` (both sides read the whole buffer
# in every pass, at once, in the same order: is a line two sides read together held twice?), then
# session 54's call (docs/validation/2026-12-07-s54/run.sh) for the time left.
export PYTHONPATH=$PWD
START=$SECONDS
mkdir -p $OUT/l2-together
IOSIM_PATTERNS=together timeout 90 python3 benchmarks/l2_shared_ncu.py --out $OUT/l2-together \
  > $OUT/l2-together/run.log 2>&1
echo "l2-together rc=$? at ${SECONDS} s" | tee -a $OUT/calls.log
python3 benchmarks/l2_shared_ncu.py --summary $OUT/l2-together/ 2>&1 | tail -12
LIMIT=$((${LIMIT:-570} - SECONDS + START)) bash docs/validation/2026-12-07-s54/run.sh
