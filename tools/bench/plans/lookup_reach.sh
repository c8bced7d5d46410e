# device_call.sh plan (run 133): prompt lookup's copies past k. A copy costs no draft work and a verify window
# of up to 8 rows costs about one row's on the skinny kernel, so lookup's proposals fill those rows and reach
# on (doubling while kept whole) up to --spec-lookup-k, and a stream's proposal is copied on by lookup. The
# GPU tests of speculation first (windows of up to 16 rows through the engine); then strata-tiny's
# speculation-path windows by row count (the cost a row adds); then `strata bench spec --spec
# off,plain,ngram,draft` at --spec-lookup-k 4 (no room past k: as before) and 15 (the default), ROUNDS (3)
# rounds in ABBA order after a warm-up, and once each at 256 tokens.
$S $B info
TEST_FILTER="CUDA:*,a verify window*" $S $B test || true
LD_LIBRARY_PATH=$B/lib timeout 60 "$B/strata_bench_cuda" --model models/strata-tiny --prompt 256 --tokens 256 \
  --prefill 16 --batch 1,2,5,8,12,16 --gemm-min-rows 17 2>&1 | grep -E "^decode" | tee "$OUT/rows.log"
. tools/bench/plans/lib.sh
MODES=off,plain,ngram,draft
ROUNDS=${ROUNDS:-3} spec_ab lk4 SPEC_LOOKUP_K=4 lk15 SPEC_LOOKUP_K=15
r=t256
for lk in 4 15; do spec_cfg "lk$lk" SPEC_LOOKUP_K=$lk TOKENS=256; done
