# device_call.sh plan: where a batch-1 decode layer's time goes, from inside the graph: one window's kernel
# timeline at strata-tiny (batch 1 and 5, a verify window's row count), its 1-layer draft, 1B and 8B
# (gpu_session.sh trace steps; pack_device.sh must have carried the
# -DSTRATA_KERNEL_TRACE=ON build), then the late-norm A/B (plans/late_norm.sh's steps). Before the call:
#   cmake -S . -B build-trace -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_CUDA=ON -DSTRATA_TESTS=OFF \
#     -DSTRATA_KERNEL_TRACE=ON && ninja -C build-trace strata_bench_cuda && tools/bench/pack_device.sh bin
$S $B info
TRACE_BATCH=1,5 $S $B tracetiny tracedraft
$S $B trace1b trace8b
bash -e tools/bench/plans/late_norm.sh
