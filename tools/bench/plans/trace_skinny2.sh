# device_call.sh plan (run 101): strata-tiny's one- and five-row windows on the skinny kernel and the fused GEMV's
# one-row window as kernel timelines, with the trace's atomic moved after pdl_wait() (it had changed what it
# measured: the trace build's skinny windows ran faster than the plain build's), and the plain build's decode
# beside them.
$S $B info
. tools/bench/plans/lib.sh
AB_LOG=ab_trace2.log
one "plain-build skinny" models/strata-tiny --batch 1,5 --gemm-min-rows 17
one "plain-build fused" models/strata-tiny --batch 1
TRACE_BATCH=1,5 BENCH_EXTRA="--gemm-min-rows 17" $S $B tracetiny
mv "$OUT/trace_tiny.txt" "$OUT/trace_tiny_skinny.txt"; mv "$OUT/trace_tiny.log" "$OUT/trace_tiny_skinny.log"; rm -f "$OUT"/trace_tiny.csv*
$S $B tracetiny
rm -f "$OUT"/trace_tiny.csv*
