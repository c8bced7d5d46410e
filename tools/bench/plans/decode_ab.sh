# device_call.sh plan: 1B and 8B batch-1 decode under each of VARIANTS (strata_bench_cuda flags, ';' between
# variants; unset: the default path alone), alternated AB_ROUNDS times (default 2; 8B once), then the GPU
# tests. Copy it for an experiment's own plan: order the steps by what matters most, since the call's time
# limit cuts the rest.
$S $B info
VARIANTS="${VARIANTS:- }" AB_ROUNDS="${AB_ROUNDS:-2}" $S $B ab1b
VARIANTS="${VARIANTS:- }" AB_ROUNDS=1 $S $B ab8b
$S $B test
