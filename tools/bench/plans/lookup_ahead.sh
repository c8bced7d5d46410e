# device_call.sh plan (runs 137-139): after run 136, `strata bench spec --spec off,plain,draft` (batch 1, 128
# tokens, greedy) with --spec-k 4 / 3 / 2 (k4 k3 k2), and with the chains fed only lookup proposals drafting N
# steps ahead instead of k + 2 (a2, a3: STRATA_LOOKUP_AHEAD=N, a switch only those runs' binaries had, in no
# commit), the CUDA streams' priorities (p: STRATA_CUDA_STREAM_PRIORITY=1, then a switch that was off by
# default), and both (pa2, since 2 ahead and priorities are the defaults: kLookupAhead, model_runtime.cpp).
# ROUNDS (4) rounds after a warm-up; O1..O4 set each round's order (the default orders rotate k4 k3 k2 a2 a3).
$S $B info
. tools/bench/plans/lib.sh
MODES=off,plain,draft
r=warm
spec_cfg warm
cfg() {
  case $1 in
    k4) spec_cfg k4 ;;
    k3) spec_cfg k3 SPEC_K=3 ;;
    k2) spec_cfg k2 SPEC_K=2 ;;
    a2) spec_cfg a2 STRATA_LOOKUP_AHEAD=2 ;;
    a3) spec_cfg a3 STRATA_LOOKUP_AHEAD=3 ;;
    p) spec_cfg p STRATA_CUDA_STREAM_PRIORITY=1 ;;
    pa2) spec_cfg pa2 STRATA_CUDA_STREAM_PRIORITY=1 STRATA_LOOKUP_AHEAD=2 ;;
  esac
}
spec_rounds cfg "${O1:-k4 k3 k2 a2 a3}" "${O2:-a3 a2 k2 k3 k4}" "${O3:-k3 a3 k4 k2 a2}" "${O4:-a2 k4 a3 k3 k2}"
