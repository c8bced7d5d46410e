# device_call.sh plan: where a batch-1 decode layer's time goes, from inside the graph: one window's kernel
# timeline at 1B, 8B and strata-tiny (gpu_session.sh trace steps; pack_device.sh must have carried the
# -DSTRATA_KERNEL_TRACE=ON build), then the late-norm A/B (plans/late_norm.sh's steps). Before the call:
#   cmake -S . -B build-trace -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_CUDA=ON -DSTRATA_TESTS=OFF \
#     -DSTRATA_KERNEL_TRACE=ON && ninja -C build-trace strata_bench_cuda && tools/bench/pack_device.sh bin
$S $B info
$S $B trace1b trace8b tracetiny
bash -e tools/bench/plans/late_norm.sh
