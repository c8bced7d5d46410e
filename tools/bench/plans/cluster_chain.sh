# device_call.sh plan: the cluster chain (kernels/cluster_chain.hpp) for the draft model's proposals: its GPU
# test first, then batch-1 speculation with it (the server's default for a draft) against the graph replays
# (STRATA_CLUSTER_CHAIN=0), alternated, then the whole GPU suite.
$S $B info
TEST_FILTER="a cluster chain*" $S $B test
for r in 1 2; do
  for v in 1 0; do
    echo "--- spec1 STRATA_CLUSTER_CHAIN=$v round $r"
    STRATA_CLUSTER_CHAIN=$v SPEC_ROUNDS=1 $S $B spec1
    mv "$OUT/spec1_k4_r1.txt" "$OUT/spec1_cluster${v}_r$r.txt"; mv "$OUT/spec1_k4_r1.json" "$OUT/spec1_cluster${v}_r$r.json"
  done
done
$S $B test
