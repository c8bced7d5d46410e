# device_call.sh plan: the kernel timelines alone (plans/trace.sh without the late-norm A/B): strata-tiny at
# batch 1 and 5 (a verify window's rows), its 1-layer draft, then 1B and 8B. Needs the trace build carried
# (see plans/trace.sh).
$S $B info
TRACE_BATCH=1,5 $S $B tracetiny tracedraft
$S $B trace1b trace8b
