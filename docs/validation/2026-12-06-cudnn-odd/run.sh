#!/bin/bash
# cuDNN's decode kernel (sm80 flash_fprop_wmma) at d = 40 (no multiple of 16) and 48, under ncu's
# source counters: per SASS instruction, its sectors against the ideal (why odd d loads 1.17-1.30 x).
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
for d in 40 48; do
  cfg='{"seq_len": 1, "seq_len_kv": 4096, "head_dim": '$d', "batch": 1, "heads": 4, "causal": false, "backend": "cudnn", "ranges": true}'
  timeout 200 ncu --profile-from-start off --clock-control none --kernel-name regex:fprop --launch-count 1 \
      --section SourceCounters --metrics l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum,smsp__sass_data_bytes_mem_global_op_ldgsts.sum \
      --page source --print-source sass --csv python3 -m iosim.gpu.sdpa_target "$cfg" > $OUT/source_d$d.csv 2> $OUT/source_d$d.err
  timeout 200 ncu --profile-from-start off --clock-control none --kernel-name regex:fprop --launch-count 1 \
      --section SourceCounters --metrics l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum,smsp__sass_data_bytes_mem_global_op_ldgsts.sum \
      --csv python3 -m iosim.gpu.sdpa_target "$cfg" > $OUT/details_d$d.csv 2>> $OUT/source_d$d.err
done
cd $OUT && gzip -f *.csv; ls -la
