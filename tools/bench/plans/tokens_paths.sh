$S $B info
AB_LOG=ab_tok.log
one2() {
  local label=$1 m=$2; shift 2
  LD_LIBRARY_PATH=$B/lib timeout 150 "$B/strata_bench_cuda" --model "$m" --prefill 16 "$@" 2>&1 | grep -E "^decode" | sed "s#^#[$label] #"
}
for r in 1 2; do
  for t in 64 256; do
    one2 "fused t$t" models/strata-tiny --prompt 256 --tokens $t --batch 1
    one2 "skinny t$t" models/strata-tiny --prompt 256 --tokens $t --batch 1,5 --gemm-min-rows 17
  done
  one2 "fused p16 t64" models/strata-tiny --prompt 16 --tokens 64 --batch 1
  one2 "skinny p16 t64" models/strata-tiny --prompt 16 --tokens 64 --batch 1,5 --gemm-min-rows 17
done
