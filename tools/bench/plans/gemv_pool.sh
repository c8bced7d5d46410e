# device_call.sh plan (run 91): the fused GEMV's warps share the last tasks of a launch through a pool (a warp
# takes the next when it gets there, so SMs that stream faster take more of the tail), that build (not committed:
# it lost, docs/PERFORMANCE.md run 91), with
# STRATA_GEMV_POOL=0 (fixed runs, the build before) and 30 / 50 (percent of the tasks in the pool) alternated
# on one binary. The fused GEMV's bit tests (with and without a pool) and the verify-window test first, decode
# at 1B, 8B and strata-tiny, the 8B timeline with the default, the whole suite last.
$S $B info
AB_LOG=ab_pool.log
. tools/bench/plans/lib.sh
TEST_FILTER="the fused GEMV*" $S $B test
TEST_FILTER="a verify window of T = 1..16 rows*" $S $B test
models_ready 1b 8b
for r in 1 2; do
  for v in 0 30 50; do STRATA_GEMV_POOL=$v one "1b pool=$v r$r" /tmp/llama-1b --batch 1; done
  for v in 0 30 50; do STRATA_GEMV_POOL=$v one "8b pool=$v r$r" /tmp/llama-8b --batch 1; done
done
for v in 0 30; do STRATA_GEMV_POOL=$v one "tiny pool=$v" models/strata-tiny --batch 1; done
$S $B trace8b
$S $B test
