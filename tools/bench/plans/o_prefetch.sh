# device_call.sh plan (run 92): the tensor-core decode attention's split-0 blocks asking the L2 for the o
# projection's weights once their own K/V rows are in shared memory (cp.async.bulk.prefetch.L2), so the o GEMV
# that follows the merge finds them there; that build's (not committed: it lost) STRATA_O_PREFETCH_KB = 0 (off)
# / 8192 / 32768 alternated on one binary, decode at 1B and 8B (the o matrix: 8 MB at 1B, 32 MB at 8B).
$S $B info
AB_LOG=ab_oprefetch.log
. tools/bench/plans/lib.sh
models_ready 1b 8b
for r in 1 2; do
  for v in 0 8192 32768; do STRATA_O_PREFETCH_KB=$v one "1b kb=$v r$r" /tmp/llama-1b --batch 1; done
  for v in 0 8192 32768; do STRATA_O_PREFETCH_KB=$v one "8b kb=$v r$r" /tmp/llama-8b --batch 1; done
done
