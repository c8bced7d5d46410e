# device_call.sh plan: the fused GEMV widening each weight piece once for all the rows a block serves, and
# its per-row butterflies unbranched (this build), against the build before it (.devcarry/old.txz:
# strata_bench_cuda at f643b4a): windows of 1-8 rows on the fused GEMV (--fused-gemv-rows 16) at strata-tiny,
# 1B and 8B, and the default one-row path, alternated; the fused GEMV's bit tests first, the suite last.
$S $B info
TEST_FILTER="the fused GEMV*" $S $B test
TEST_FILTER="a verify window of T = 1..16 rows*" $S $B test
mkdir -p .devcarry/old && tar xJf .devcarry/old.txz -C .devcarry/old
ab() {  # model label flags...
  local m=$1 label=$2; shift 2
  for b in .devcarry/old/strata_bench_cuda "$B/strata_bench_cuda"; do
    echo "--- $label $b"
    LD_LIBRARY_PATH=$B/lib timeout 150 "$b" --model "$m" --prompt 256 --tokens 256 --prefill 16 "$@" 2>&1 |
      grep -E "^decode" | sed "s#^#[$label ${b%%/strata_bench_cuda}] #" | tee -a "$OUT/ab_widen.log"
  done
}
for r in 1 2; do ab models/strata-tiny "tiny fused r$r" --batch 1,2,5,8 --gemm-min-rows 17 --fused-gemv-rows 16; done
python3 tools/bench/random_llama_gpu.py --shape 1b --out /tmp/llama-1b >/dev/null
ab /tmp/llama-1b "1b fused" --batch 1,4,8 --gemm-min-rows 17 --fused-gemv-rows 16
ab /tmp/llama-1b "1b default" --batch 1
python3 tools/bench/random_llama_gpu.py --shape 8b --out /tmp/llama-8b >/dev/null
ab /tmp/llama-8b "8b fused" --batch 1,4,8 --gemm-min-rows 17 --fused-gemv-rows 16
ab /tmp/llama-8b "8b default" --batch 1
SPEC_ROUNDS=1 $S $B spec1
$S $B test
