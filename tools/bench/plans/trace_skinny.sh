# device_call.sh plan: strata-tiny's speculation-path windows (the skinny kernel) at 1 and 5 rows as kernel
# timelines, with the QKV projection carrying the RoPE step and the edge folds (the default) and without
# (STRATA_SKINNY_ROPE=0 STRATA_SKINNY_EDGE_FOLD=0). Needs the trace build (see plans/trace.sh).
$S $B info
TRACE_BATCH=1,5 BENCH_EXTRA="--gemm-min-rows 17" $S $B tracetiny
mv "$OUT/trace_tiny.txt" "$OUT/trace_tiny_new.txt"; rm -f "$OUT"/trace_tiny.csv*
STRATA_SKINNY_ROPE=0 STRATA_SKINNY_EDGE_FOLD=0 TRACE_BATCH=1,5 BENCH_EXTRA="--gemm-min-rows 17" $S $B tracetiny
mv "$OUT/trace_tiny.txt" "$OUT/trace_tiny_old.txt"; rm -f "$OUT"/trace_tiny.csv*
