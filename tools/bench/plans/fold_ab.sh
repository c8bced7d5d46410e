# device_call.sh plan: the fused GEMV's late input norm (now its only form) and the tensor-core attention's
# folded split merge (STRATA_ATTN_MERGE_FOLD) against the build before both (.devcarry/old/strata_bench_cuda,
# carried by hand), alternated: the attention kernels' bit tests first, then 1B (two rounds), 8B and
# strata-tiny batch-1 decode, spec1 with and without the fold, and the whole GPU suite.
$S $B info
TEST_FILTER="tensor-core attention*" $S $B test
old=.devcarry/old/strata_bench_cuda
dec() {  # label, binary, model, env...
  local label=$1 bin=$2 model=$3; shift 3
  echo "--- $label $(basename "$model")"
  env "$@" LD_LIBRARY_PATH=$B/lib timeout 150 "$bin" --model "$model" --prompt 256 --tokens 256 --prefill 16 2>&1 |
    grep -E "^decode" | tee -a "$OUT/ab_fold.log"
}
python3 tools/bench/random_llama_gpu.py --shape 1b --out /tmp/llama-1b
for r in 1 2; do
  dec old "$old" /tmp/llama-1b X=1
  dec late-norm "$B/strata_bench_cuda" /tmp/llama-1b STRATA_ATTN_MERGE_FOLD=0
  dec late-norm+fold "$B/strata_bench_cuda" /tmp/llama-1b STRATA_ATTN_MERGE_FOLD=1
done
for r in 1 2; do
  dec old "$old" models/strata-tiny X=1
  dec late-norm+fold "$B/strata_bench_cuda" models/strata-tiny STRATA_ATTN_MERGE_FOLD=1
done
for v in 1 0; do
  echo "--- spec1 STRATA_ATTN_MERGE_FOLD=$v"
  STRATA_ATTN_MERGE_FOLD=$v SPEC_ROUNDS=1 $S $B spec1 | grep -E "draft|plain"
done
python3 tools/bench/random_llama_gpu.py --shape 8b --out /tmp/llama-8b
dec old "$old" /tmp/llama-8b X=1
dec late-norm "$B/strata_bench_cuda" /tmp/llama-8b STRATA_ATTN_MERGE_FOLD=0
dec late-norm+fold "$B/strata_bench_cuda" /tmp/llama-8b STRATA_ATTN_MERGE_FOLD=1
$S $B test
