# device_call.sh plan: where a cluster chain's step goes (STRATA_CLUSTER_CHAIN_STAMPS=1 prints the mean phase
# times when each draft backend closes), with the weights asked of the L2 at each row's start or not and with
# 8-block clusters, each beside batch-1 speculation on the graph replays (STRATA_CLUSTER_CHAIN=0).
$S $B info
for r in 1 2; do
  for v in "STRATA_CLUSTER_CHAIN=0" "STRATA_CLUSTER_CHAIN_STAMPS=1" "STRATA_CLUSTER_CHAIN_STAMPS=1 STRATA_CLUSTER_CHAIN_PREFETCH=1" \
           "STRATA_CLUSTER_CHAIN_STAMPS=1 STRATA_CLUSTER_CHAIN_BLOCKS=8"; do
    echo "--- spec1 $v round $r"
    env $v SPEC_ROUNDS=1 $S $B spec1 | grep -E "draft|phases"
  done
done
