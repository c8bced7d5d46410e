# device_call.sh plan: strata-tiny's windows as kernel timelines on the three paths a target window can take
# (the skinny kernel, the speculation path's default; the fused GEMV for several rows; the fused GEMV's one-row
# plain step), at 1 and 5 rows, and the draft's one-row step. Needs the trace build (see plans/trace.sh).
$S $B info
TRACE_BATCH=1,5 BENCH_EXTRA="--gemm-min-rows 17" $S $B tracetiny
mv "$OUT/trace_tiny.txt" "$OUT/trace_tiny_skinny.txt"; mv "$OUT/trace_tiny.log" "$OUT/trace_tiny_skinny.log"
rm -f "$OUT"/trace_tiny.csv*
TRACE_BATCH=1,5 BENCH_EXTRA="--gemm-min-rows 17 --fused-gemv-rows 16" $S $B tracetiny
mv "$OUT/trace_tiny.txt" "$OUT/trace_tiny_fused.txt"; mv "$OUT/trace_tiny.log" "$OUT/trace_tiny_fused.log"
rm -f "$OUT"/trace_tiny.csv*
$S $B tracetiny tracedraft
rm -f "$OUT"/trace_*.csv*
