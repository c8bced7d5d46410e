# device_call.sh plan: strata-tiny's windows on the speculation path (--gemm-min-rows 17: the skinny kernel,
# fixed-order attention) at 1 and 5 rows, a plain step and a verify window's size, as kernel timelines, with
# the default path's one-row window beside them. Needs the trace build carried (see plans/trace.sh).
$S $B info
TRACE_BATCH=1,5 BENCH_EXTRA="--gemm-min-rows 17" $S $B tracetiny
mv "$OUT/trace_tiny.txt" "$OUT/trace_tiny_skinny.txt"; mv "$OUT/trace_tiny.log" "$OUT/trace_tiny_skinny.log"
rm -f "$OUT"/trace_tiny.csv*
$S $B tracetiny
