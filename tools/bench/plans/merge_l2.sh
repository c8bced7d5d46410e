# device_call.sh plan: three ways to shorten a decode layer, each alone and together, against none,
# alternated: the o matmul merging attention's splits (--attention-merge-in-o: no combine kernel), the
# tensor-core attention doing the RoPE step's work (--rope-in-attention: no RoPE kernel), and the L2 prefetch
# of o and gate/up weights during attention (--l2-prefetch-mb). Their bit tests first, then 1B and 8B
# batch-1 decode, the GPU tests with the merge and the RoPE fold forced on, strata-tiny windows, and batch-1
# speculation with and without them.
$S $B info
LD_LIBRARY_PATH=$B/lib timeout 120 $B/test_cuda "the o matmul's merge*,RoPE in the tensor-core*" 2>&1 | tail -30 | tee "$OUT/fold_tests.log"
V="--l2-prefetch-mb 0;--attention-merge-in-o on;--rope-in-attention on;--attention-merge-in-o on --rope-in-attention on"
V="$V;--attention-merge-in-o on --rope-in-attention on --l2-prefetch-mb 16;--l2-prefetch-mb 16"
VARIANTS="$V" AB_ROUNDS=2 $S $B ab1b
VARIANTS="$V" AB_ROUNDS=1 $S $B ab8b
STRATA_ATTENTION_MERGE_IN_O=1 STRATA_ROPE_IN_ATTENTION=1 $S $B test
VARIANTS="--l2-prefetch-mb 0;--attention-merge-in-o on --rope-in-attention on" AB_ROUNDS=2 AB_BATCH=1,8 $S $B abtiny
STRATA_ATTENTION_MERGE_IN_O=1 STRATA_ROPE_IN_ATTENTION=1 SPEC_ROUNDS=1 OUT=$OUT/spec_folds $S $B spec1
SPEC_ROUNDS=1 $S $B spec1
