#!/bin/bash
# Session 56: grid s56 (drawn at random, predicted before it ran: predictions-h200.json, predictions-h100.json)
# under ncu on whatever GPU comes; on an H200 then the grids named in H200_GRIDS (default "s53 s50 s46": predicted
# in sessions 53, 50 and 46, never run on an H200) for what time is left. RUN_S56=0 skips s56. Each grid is packed as
# it ends (raw-GRID.tgz); at most 8 files come back. (benchmarks/device_grids.sh, which this script's body became
# after it ran: the same steps.)
[ "${RUN_S56:-1}" = 1 ] && first=s56 || first=
FIRST=$first FIRST_S=300 H200_GRIDS="${H200_GRIDS:-s53 s50 s46}" exec bash benchmarks/device_grids.sh
