#!/bin/bash
# Session 58 (prepared in session 57): grid s58 (drawn at random, predicted before it ran, with the L2 edge:
# predictions-h200.json, predictions-h100.json) under ncu on whatever GPU comes; on an H200 then the grids named in
# H200_GRIDS (default "s57 s56 s53 s50": predicted in sessions 57, 56, 53 and 50, never run on an H200) for what time
# is left. RUN_S58=0 skips s58; ONLY_H200=1 stops at once on any other GPU (benchmarks/device_grids.sh).
[ "${RUN_S58:-1}" = 1 ] && first=s58 || first=
FIRST=$first H200_GRIDS="${H200_GRIDS:-s57 s56 s53 s50}" exec bash benchmarks/device_grids.sh
