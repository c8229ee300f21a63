#!/bin/bash
# Session 57: grid s57 (drawn at random, predicted before it ran: predictions-h200.json, predictions-h100.json)
# under ncu on whatever GPU comes; on an H200 then the grids named in H200_GRIDS (default "s56 s53 s50 s46": predicted
# in sessions 56, 53, 50 and 46, never run on an H200) for what time is left. RUN_S57=0 skips s57; ONLY_H200=1 stops
# at once on any other GPU (benchmarks/device_grids.sh, which this script's body became after it ran).
[ "${RUN_S57:-1}" = 1 ] && first=s57 || first=
FIRST=$first H200_GRIDS="${H200_GRIDS:-s56 s53 s50 s46}" exec bash benchmarks/device_grids.sh
