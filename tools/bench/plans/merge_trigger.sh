# device_call.sh plan (run 86): the split merge lets the o projection launch before it waits, so the o GEMV's
# blocks take the SMs the QKV matmul left and ask for their weights while attention runs (every other kernel
# keeps its trigger after its wait: run 85, early_trigger.sh, showed what an early trigger everywhere costs),
# and the tensor-core decode attention copies the K/V rows its window did not write before pdl_wait() (this
# build), against the build before it (.devcarry/old.txz: strata_bench_cuda and strata at 8613fe0). The
# attention and verify-window bit tests first, then decode alternated old / new at strata-tiny (the
# speculation path and the default), 1B and 8B, the new build's timelines, spec1 both ways, the suite last.
AB_LOG=ab_merge_trigger.log
. tools/bench/plans/early_trigger.sh  # the same steps on this build
