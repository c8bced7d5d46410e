# device_call.sh plan (run 117, H100): the retrained draft of run
# 115 (.devcarry/newdraft.tgz, its draft.tgz.part-aa) made `strata bench spec` report a greedy output with
# speculation that differs from the same request without it (novel request 2, token 48; the CPU backend
# matches). Which CUDA path breaks the verify window's exactness: the backend's random verify windows against single rows (logits, bit for bit), the same bench with each switch of the target's kernels, the verify
# windows printed (STRATA_DEBUG_VERIFY=1), the prefix cache or the GEMM autotuning off or each backend timing its own GEMMs, and the shipped draft as
# the control; then the engine's GPU test of speculation (test_cuda_speculation.cpp) and the GPU cases on
# verify windows.
$S $B info
TEST_FILTER="CUDA: random verify*" $S $B test || true
. tools/bench/plans/lib.sh
newdraft_ready
printf 'enable-prefix-caching: false\n' > /tmp/nocache.yaml
printf 'gemm-autotune: false\n' > /tmp/noautotune.yaml
spec() {  # LABEL DRAFT [ENV=VALUE...]; CONF=FILE for a --config file
  local label=$1 d=$2; shift 2
  env "$@" LD_LIBRARY_PATH=$B/lib timeout 60 "$B/strata" bench spec ${CONF:+--config "$CONF"} \
    --model models/strata-tiny --draft-model "$d" \
    --device cuda --batch 1 --spec off,draft --spec-k 4 --max-tokens 128 --sampling greedy \
    --prompts tools/bench/spec_prompts.json 2>"$OUT/verify_$label.log" | grep -E "MISMATCH|draft  " |
    sed "s#^#[$label] #" | tee -a "$OUT/mismatch.log"
}
N=$NEWDRAFT
spec default $N STRATA_DEBUG_VERIFY=1
spec control models/strata-tiny-draft STRATA_DEBUG_VERIFY=1
spec gemm_unshared $N STRATA_GEMM_SHARED=0 STRATA_DEBUG_VERIFY=1
CONF=/tmp/nocache.yaml spec nocache $N
CONF=/tmp/noautotune.yaml spec noautotune $N
spec rope_early0 $N STRATA_SKINNY_ROPE_EARLY=0
spec attn_tc0 $N STRATA_TARGET_ATTENTION_TC=0
spec pdl0 $N STRATA_CUDA_PDL=0
spec fold0 $N STRATA_SKINNY_FOLD=0
spec rope0 $N STRATA_SKINNY_ROPE=0
spec edge0 $N STRATA_SKINNY_EDGE_FOLD=0
spec tiles1 $N STRATA_SKINNY_HEAD_TILES=1
spec draft_fused $N STRATA_DRAFT_SKINNY=0
spec pdlmode1 $N STRATA_MATVEC_PDL_MODE=1
TEST_FILTER="CUDA: strata-tiny*" $S $B test || true
TEST_FILTER="*verify*,*autotuned*" $S $B test || true
issue9_on_h200 2
