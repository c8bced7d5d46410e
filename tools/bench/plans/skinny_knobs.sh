# device_call.sh plan (run 100): why strata-tiny's one-row windows cost ~0.195 ms on the skinny kernel against
# ~0.161 on the fused GEMV when the kernel timelines differ by ~9 us: the same windows under each switch.
$S $B info
AB_LOG=ab_knobs.log
. tools/bench/plans/lib.sh
for r in 1 2; do
  one "fused r$r" models/strata-tiny --batch 1
  one "skinny r$r" models/strata-tiny --batch 1,5 --gemm-min-rows 17
  STRATA_CUDA_PDL=0 one "fused nopdl r$r" models/strata-tiny --batch 1
  STRATA_CUDA_PDL=0 one "skinny nopdl r$r" models/strata-tiny --batch 1,5 --gemm-min-rows 17
  STRATA_SKINNY_FOLD=0 one "skinny nofold r$r" models/strata-tiny --batch 1,5 --gemm-min-rows 17
  one "skinny fixed-attn r$r" models/strata-tiny --batch 1,5 --gemm-min-rows 17 --attention-tc off
  one "fused16 r$r" models/strata-tiny --batch 1,5 --gemm-min-rows 17 --fused-gemv-rows 16
done
