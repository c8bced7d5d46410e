# device_call.sh plan (run 102): the skinny kernel's launches under PDL on strata-tiny's speculation path:
# weights asked for before pdl_wait() (default) or after it (STRATA_MATVEC_PDL_MODE=1), dependents triggered at
# the start (2); the preferred shared-memory carveout of the skinny kernels (STRATA_MATVEC_CARVEOUT=100 / 50).
# (The carveout switch was measured uncommitted and dropped: no steady gain.)
$S $B info
. tools/bench/plans/lib.sh
AB_LOG=ab_pdl.log
for r in 1 2; do
  one "default r$r" models/strata-tiny --batch 1,5 --gemm-min-rows 17
  STRATA_MATVEC_PDL_MODE=1 one "late-weights r$r" models/strata-tiny --batch 1,5 --gemm-min-rows 17
  STRATA_MATVEC_PDL_MODE=2 one "early-trigger r$r" models/strata-tiny --batch 1,5 --gemm-min-rows 17
  STRATA_MATVEC_CARVEOUT=100 one "carveout100 r$r" models/strata-tiny --batch 1,5 --gemm-min-rows 17
  STRATA_MATVEC_CARVEOUT=50 one "carveout50 r$r" models/strata-tiny --batch 1,5 --gemm-min-rows 17
  one "fused r$r" models/strata-tiny --batch 1
done
