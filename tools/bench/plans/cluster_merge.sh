# (The kernel change it measured is in history at 528484f, reverted after this run.)
# device_call.sh plan (run 98): the tensor-core decode attention merging a grid's splits inside thread-block
# clusters of its split blocks (after a cluster barrier, with the combine kernel's code) instead of the combine
# kernel; STRATA_ATTN_CLUSTER_MERGE=0 (the combine kernel) and 1 alternated on this build. The attention bit
# tests (a row alone against the combine kernel's crowded windows) and the verify-window test first; decode at
# 1B / 8B / strata-tiny, spec1; the whole suite last.
$S $B info
AB_LOG=ab_cluster.log
. tools/bench/plans/lib.sh
TEST_FILTER="attention: a row's bits alone*" $S $B test
TEST_FILTER="tensor-core attention on a bf16 arena*" $S $B test
TEST_FILTER="a verify window of T = 1..16 rows*" $S $B test
models_ready 1b 8b
for r in 1 2; do
  for v in 0 1; do STRATA_ATTN_CLUSTER_MERGE=$v one "1b cluster=$v r$r" /tmp/llama-1b --batch 1; done
  for v in 0 1; do STRATA_ATTN_CLUSTER_MERGE=$v one "tiny cluster=$v r$r" models/strata-tiny --batch 1,5 --gemm-min-rows 17; done
  for v in 0 1; do STRATA_ATTN_CLUSTER_MERGE=$v one "tinyplain cluster=$v r$r" models/strata-tiny --batch 1; done
done
for v in 0 1; do STRATA_ATTN_CLUSTER_MERGE=$v one "8b cluster=$v" /tmp/llama-8b --batch 1; done
for v in 0 1; do STRATA_ATTN_CLUSTER_MERGE=$v one "1b-b16 cluster=$v" /tmp/llama-1b --batch 16; done
SPEC_ROUNDS=1 $S $B spec1
$S $B test
