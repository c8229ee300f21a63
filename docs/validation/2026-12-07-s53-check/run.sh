#!/bin/bash
# Session 53: grid s53 (drawn at random, predicted before it ran: predictions-h200.json, predictions-h100.json)
# under ncu on whatever GPU comes; on an H200 then grids s50 and s46 ((B, H, N, d) inputs: predicted in sessions
# 50 and 46, never run on an H200) for what time is left. Each grid is packed as it ends (raw-GRID.tgz).
# (benchmarks/device_grids.sh, which this script's body became after it ran: the same steps.)
FIRST=s53 FIRST_S=300 H200_GRIDS="s50 s46" exec bash benchmarks/device_grids.sh
