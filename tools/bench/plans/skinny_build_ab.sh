# device_call.sh plan (run 103): run 102's machine ran strata-tiny's skinny windows at 0.166 ms (one row)
# where runs 96-101 had 0.193-0.201: the build before the STRATA_MATVEC_PDL_MODE / CARVEOUT switches
# (.devcarry/old.txz, the committed 78539a7) against this one, alternated, with the fused GEMV's one-row
# window beside them; then spec1 on this build.
$S $B info
. tools/bench/plans/lib.sh
AB_LOG=ab_build.log
mkdir -p /tmp/oldbin && tar xJf .devcarry/old.txz -C /tmp/oldbin
for r in 1 2 3; do
  BENCH=/tmp/oldbin/strata_bench_cuda one "old r$r" models/strata-tiny --batch 1,5 --gemm-min-rows 17
  one "new r$r" models/strata-tiny --batch 1,5 --gemm-min-rows 17
  STRATA_MATVEC_CARVEOUT=50 one "new carveout50 r$r" models/strata-tiny --batch 1,5 --gemm-min-rows 17
  one "fused r$r" models/strata-tiny --batch 1
done
SPEC_ROUNDS=2 $S $B spec1
