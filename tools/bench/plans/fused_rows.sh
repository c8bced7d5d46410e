# device_call.sh plan: where strata-tiny's windows of several rows lose time on the fused GEMV (the
# speculation path with --fused-gemv-rows 16): kernel timelines at 1, 2, 5 and 8 rows, then the windows with
# the rows a block serves forced (STRATA_GEMV_BLOCK_ROWS), alternated.
$S $B info
TRACE_BATCH=1,2,5,8 BENCH_EXTRA="--gemm-min-rows 17 --fused-gemv-rows 16" $S $B tracetiny
for r in 1 2; do
  for br in 0 1 2 4 8; do
    echo "--- tiny round $r: STRATA_GEMV_BLOCK_ROWS=$br"
    STRATA_GEMV_BLOCK_ROWS=$br LD_LIBRARY_PATH=$B/lib timeout 120 "$B/strata_bench_cuda" --model models/strata-tiny \
      --prompt 256 --tokens 256 --prefill 16 --batch 1,2,5,8 --gemm-min-rows 17 --fused-gemv-rows 16 2>&1 |
      grep -E "^decode" | sed "s/^/[br $br] /" | tee -a "$OUT/ab_rows.log"
  done
done
