# device_call.sh plan (run 111): kernel timelines of the committed decode path at 1B and 8B (trace build,
# one window each, per-layer summary), and two consecutive 1B windows in one trace for the host's gap between
# them (trace_summary.py --windows, added after the run; run 111 read the same gaps from the CSV).
$S $B info
. tools/bench/plans/lib.sh
models_ready 1b 8b
$S $B trace1b trace8b
LD_LIBRARY_PATH=$B/lib timeout 120 $B/strata_bench_cuda_trace --model /tmp/llama-1b --prompt 256 --tokens 64 \
  --prefill 16 --trace "$OUT/trace2_1b.csv" --trace-windows 3 2>&1 | grep -E "^decode|trace" | tee "$OUT/trace2_1b.log"
python3 tools/bench/trace_summary.py "$OUT/trace2_1b.csv" --windows 3 --layers 16 > "$OUT/trace2_1b.txt"
head -3 "$OUT/trace2_1b.txt"
