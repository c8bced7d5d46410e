# device_call.sh plan: the o matmul merging attention's splits (--attention-merge-in-o; the combine kernel
# skipped) and the L2 prefetch of o and gate/up weights during attention (--l2-prefetch-mb), each alone and
# together, against neither, alternated: the merge's bit test first, 1B and 8B batch-1 decode, the GPU tests
# with the merge forced on, strata-tiny windows, then batch-1 speculation with and without the merge.
$S $B info
LD_LIBRARY_PATH=$B/lib timeout 90 $B/test_cuda "the o matmul's merge*" 2>&1 | tail -4 | tee "$OUT/merge_test.log"
V="--attention-merge-in-o off --l2-prefetch-mb 0;--attention-merge-in-o on --l2-prefetch-mb 0"
V="$V;--attention-merge-in-o off --l2-prefetch-mb 16;--attention-merge-in-o on --l2-prefetch-mb 16"
VARIANTS="$V" AB_ROUNDS=2 $S $B ab1b
VARIANTS="$V" AB_ROUNDS=1 $S $B ab8b
STRATA_ATTENTION_MERGE_IN_O=1 $S $B test
VARIANTS="--attention-merge-in-o off;--attention-merge-in-o on" AB_ROUNDS=2 AB_BATCH=1 $S $B abtiny
STRATA_ATTENTION_MERGE_IN_O=1 SPEC_ROUNDS=1 OUT=$OUT/spec_merge $S $B spec1
SPEC_ROUNDS=1 $S $B spec1
