# device_call.sh plan: where a decode step's time goes, from inside the graph: one window's kernel timeline at
# strata-tiny (batch 1 and 5), its 1-layer draft, 1B and 8B (gpu_session.sh trace steps). Before the call,
# build the trace binary and let pack_device.sh carry it:
#   cmake -S . -B build-trace -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_CUDA=ON -DSTRATA_TESTS=OFF \
#     -DSTRATA_KERNEL_TRACE=ON && ninja -C build-trace strata_bench_cuda && tools/bench/pack_device.sh bin
$S $B info
TRACE_BATCH=1,5 $S $B tracetiny tracedraft
$S $B trace1b trace8b
