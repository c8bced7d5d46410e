# device_call.sh plan: why the fused GEMV's kernels take longer as the rows a block serves grow (strata-tiny,
# the speculation path on the fused GEMV): Nsight Compute's warp-state, compute and memory sections for the
# GEMV launches of the last two windows at 1 row and at 8 rows a block (STRATA_GEMV_BLOCK_ROWS=8).
$S $B info
for cfg in "1 0" "8 8"; do
  set -- $cfg
  STRATA_GEMV_BLOCK_ROWS=$2 LD_LIBRARY_PATH=$B/lib timeout 200 ncu --profile-from-start off --clock-control none \
    -k regex:gemv_kernel --section WarpStateStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    --section LaunchStats --section Occupancy --section SpeedOfLight --csv --page details --print-units base \
    "$B/strata_bench_cuda" --model models/strata-tiny --prompt 256 --tokens 8 --prefill 16 --batch $1 --profile \
    --gemm-min-rows 17 --fused-gemv-rows 16 >"$OUT/ncu_gemv_b$1.csv" 2>"$OUT/ncu_gemv_b$1.err"
  echo "b$1: $(wc -l < "$OUT/ncu_gemv_b$1.csv") lines"
done
