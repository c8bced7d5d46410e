# device_call.sh plan (run 112): the tensor-core attention's last split block of each (tile, kv head) merging
# the splits in place of the combine kernel (default; STRATA_ATTN_MERGE=0 keeps the combine kernel), against
# the build before it (.devcarry/old.txz, 8c8c31c), alternated: 1B and 8B decode, strata-tiny's windows on
# both paths, spec1; the attention and window tests first, the whole suite last. Measured slower everywhere;
# the merge's code is at commit "the tensor-core attention's last split block merges the splits", reverted.
$S $B info
. tools/bench/plans/lib.sh
mkdir -p .devcarry/old && tar xJf .devcarry/old.txz -C .devcarry/old && ln -sfn "$(readlink -f $B)/lib" .devcarry/old/lib
models_ready 1b 8b
TEST_FILTER="tensor-core attention on a bf16 arena*" $S $B test
TEST_FILTER="a verify window of T*" $S $B test
TEST_FILTER="a greedy chain fed on the device*" $S $B test
AB_LOG=ab.log
for r in 1 2; do
  for m in 1b 8b; do
    BENCH=.devcarry/old/strata_bench_cuda one "old $m r$r" /tmp/llama-$m
    one "merge $m r$r" /tmp/llama-$m
    STRATA_ATTN_MERGE=0 one "combine $m r$r" /tmp/llama-$m
  done
  BENCH=.devcarry/old/strata_bench_cuda one "old tiny-skinny r$r" models/strata-tiny --batch 1,5 --gemm-min-rows 17
  one "merge tiny-skinny r$r" models/strata-tiny --batch 1,5 --gemm-min-rows 17
  BENCH=.devcarry/old/strata_bench_cuda one "old tiny-fused r$r" models/strata-tiny
  one "merge tiny-fused r$r" models/strata-tiny
done
for r in 1 2; do
  mkdir -p "$OUT/old_r$r" "$OUT/new_r$r"
  SPEC_ROUNDS=1 OUT="$OUT/old_r$r" $S .devcarry/old spec1 | sed "s/^/old /"
  SPEC_ROUNDS=1 OUT="$OUT/new_r$r" $S $B spec1 | sed "s/^/new /"
done
$S $B test
