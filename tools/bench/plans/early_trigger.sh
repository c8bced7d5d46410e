# device_call.sh plan (run 85): every kernel lets its dependents launch in pdl_wait() (the trigger before the
# wait, so kernel N + 1's blocks take free SMs and issue their early loads while N still waits for N - 1), and
# the tensor-core decode attention copies the K/V rows its window did not write before pdl_wait() (that build,
# not committed: the trigger change was dropped, see merge_trigger.sh), against the build before it
# (.devcarry/old.txz: strata_bench_cuda and strata at 8613fe0). The attention and verify-window bit tests
# first, then decode alternated old / new at strata-tiny (the speculation path and the default), 1B and 8B,
# the new build's timelines, spec1 both ways, the whole suite last.
$S $B info
TEST_FILTER="*attention*" $S $B test
TEST_FILTER="a verify window of T = 1..16 rows*" $S $B test
mkdir -p .devcarry/old && tar xJf .devcarry/old.txz -C .devcarry/old && ln -sfn ../bin/lib .devcarry/old/lib
AB_LOG=${AB_LOG:-ab_trigger.log}
. tools/bench/plans/lib.sh
ab() {  # model label flags...: the build before, then this one
  local m=$1 label=$2 b; shift 2
  for b in .devcarry/old "$B"; do echo "--- $label $b"; BENCH=$b/strata_bench_cuda one "$label $b" "$m" "$@"; done
}
for r in 1 2; do
  ab models/strata-tiny "tiny spec-path r$r" --batch 1,5,8 --gemm-min-rows 17
  ab models/strata-tiny "tiny default r$r" --batch 1
done
models_ready 1b
for r in 1 2 3; do ab /tmp/llama-1b "1b r$r" --batch 1; done
models_ready 8b
for r in 1 2; do ab /tmp/llama-8b "8b r$r" --batch 1; done
$S $B trace1b trace8b
TRACE_BATCH=1,5 $S $B tracetiny
SPEC_ROUNDS=1 $S $B spec1
mkdir -p "$OUT/old" && OUT=$OUT/old SPEC_ROUNDS=1 $S .devcarry/old spec1
$S $B test
