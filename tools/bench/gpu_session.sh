#!/usr/bin/env bash
# One GPU-machine session: the CUDA tests and the decode/prefill benchmarks on random Llama-3.2-1B and
# Llama-3.1-8B shaped checkpoints, every log written to $OUT. Binaries are built on the dev machine
# (scripts/setup-build.sh --cuda on) and carried with their non-CUDA shared libraries:
#
#   tools/bench/gpu_session.sh BINDIR [steps...]     steps: info test serve bench1b bench8b (default: all)
#
#   extra steps: ncu1b ncu8b (per-kernel decode times through Nsight Compute); trace1b trace8b tracetiny
#   tracedraft (one decode window's kernel timeline at each batch of TRACE_BATCH (default 1) from inside the
#   graph, tools/bench/trace_summary.py; needs the -DSTRATA_KERNEL_TRACE=ON build that pack_device.sh carries as strata_bench_cuda_trace); sweep1b sweep8b
#   sweep8b-invariant (HTTP load at SWEEP_LEVELS concurrency; node from PATH or .devcarry/node.xz);
#   spec-cuda spec-cuda-invariant spec-cpu (strata bench spec on models/strata-tiny + its draft); spec1 (the same
#   at batch 1 only, for each of SPEC_K (default 4) drafts a window, SPEC_ROUNDS (default 2) times);
#   ncubatch1b ncubatch8b (per-kernel times of decode windows at NCU_BATCH batch sizes); ncumixed1b ncumixed8b
#   (the same for mixed windows of NCU_MIXED, e.g. 64:128 = 64 decode rows and a 128-row prompt chunk); ab1b ab8b (decode
#   under each of VARIANTS, e.g. VARIANTS="--fused-gemv on;--fused-gemv off", AB_ROUNDS times alternated,
#   AB_BATCH batch sizes; abtiny the same on models/strata-tiny). BENCH_EXTRA adds
#   flags to bench1b/bench8b/ncubatch*, SWEEP_EXTRA to the sweeps' bench_serve.mjs (e.g. --temperature 1 --seed 1),
#   SERVE_EXTRA to the sweeps' strata serve (e.g. --prefill-chunk 512); SWEEP_SPLIT=1 runs each level
#   on its own and saves the engine's window metrics after each (metrics_STEP_cN.txt).
# TEST_FILTER narrows the test step to the cases a Catch2 filter names.
# BINDIR holds strata, test_cuda, strata_bench_cuda and lib/ (the .so files ldd names that the GPU image
# lacks): tools/bench/pack_device.sh packs them (and models/, node, a tokenizer) into .devcarry/ for the call.
# The tests find their fixtures through the source path compiled into them, so that path is linked to here.
set -uo pipefail
bin=$(readlink -f "$1"); shift
steps=${*:-info test serve bench1b bench8b}
out=${OUT:-/tmp/strata-gpu-out}; mkdir -p "$out"
libs="$bin/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
run() { LD_LIBRARY_PATH="$libs" "$@"; }  # only our binaries see the carried libraries
export PYTHONUNBUFFERED=1
src=$(grep -a -o -m1 "/[[:alnum:]/._-]*/tests/data/models" "$bin/test_cuda" | head -1 | sed 's#/tests/data/models$##')
if [ -n "$src" ] && [ ! -e "$src" ]; then mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; fi
tok=.devcarry/llama3_1  # a Llama 3 tokenizer.json + tokenizer_config.json (or .devcarry/llama3_1.tgz of that folder)
if [ ! -d "$tok" ] && [ -f .devcarry/llama3_1.tgz ]; then tar xzf .devcarry/llama3_1.tgz -C /tmp && tok=/tmp/llama3_1; fi

make_model() {  # shape dir
  local t=""; [ -d "$tok" ] && t="--tokenizer-dir $tok"  # the tokenizer is only needed to serve the model
  [ -f "$2/config.json" ] || python3 tools/bench/random_llama_gpu.py --shape "$1" --out "$2" $t
}

for step in $steps; do
  echo "=== $step $(date -u +%T)"
  case $step in
    info)
      nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
      run ldd "$bin/strata" | grep "not found"
      git rev-parse HEAD 2>/dev/null || true ;;
    test)
      run timeout 180 "$bin/test_cuda" ${TEST_FILTER:+"$TEST_FILTER"} -d yes 2>&1 | tee -a "$out/test_cuda.log" |
        grep -E "PASSED|FAILED|passed|failed|error|s: " | tail -60 ;;
    serve)
      make_model 1b /tmp/llama-1b
      LD_LIBRARY_PATH="$libs" "$bin/strata" serve --model /tmp/llama-1b --device cuda --port 18080 --max-slots 8 --ctx-size 4096 >"$out/serve.log" 2>&1 &
      pid=$!
      for i in $(seq 120); do curl -sf localhost:18080/ready >/dev/null && break; kill -0 $pid || break; sleep 0.5; done
      curl -s localhost:18080/v1/completions -H 'content-type: application/json' \
        -d '{"model":"x","prompt":"Hello, my name is","max_tokens":16,"temperature":0}' | tee "$out/serve_completion.json"
      echo
      kill $pid; wait $pid; tail -20 "$out/serve.log" ;;
    bench1b)
      make_model 1b /tmp/llama-1b
      run timeout 150 "$bin/strata_bench_cuda" --model /tmp/llama-1b --prompt 256 --tokens 256 --prefill 512,4096 ${BENCH_EXTRA:-} 2>&1 | tee "$out/bench_1b.log" ;;
    bench8b)
      make_model 8b /tmp/llama-8b
      run timeout 200 "$bin/strata_bench_cuda" --model /tmp/llama-8b --prompt 256 --tokens 256 --prefill 512,4096 ${BENCH_EXTRA:-} 2>&1 | tee "$out/bench_8b.log" ;;
    ab1b|ab8b|abtiny)  # decode under each of VARIANTS (bench flags, ';' between variants), alternated, AB_ROUNDS rounds
      shape=${step#ab}; model=/tmp/llama-$shape
      if [ "$shape" = tiny ]; then model=models/strata-tiny; else make_model "$shape" "$model"; fi
      IFS=';' read -r -a variants <<< "${VARIANTS:-}"
      for round in $(seq "${AB_ROUNDS:-2}"); do
        for v in "${variants[@]}"; do
          echo "--- $shape round $round: $v"
          run timeout 120 "$bin/strata_bench_cuda" --model "$model" --prompt 256 --tokens 256 --prefill 16 \
            ${AB_BATCH:+--batch $AB_BATCH} $v ${BENCH_EXTRA:-} 2>&1 | grep -E "^model=|decode" | tee -a "$out/ab_$shape.log"
        done
      done ;;
    trace1b|trace8b|tracetiny|tracedraft)  # decode windows' kernel timelines (strata_bench_cuda_trace, kernel_trace.hpp)
      shape=${step#trace}; model=/tmp/llama-$shape; layers=16
      case $shape in
        8b) layers=32; make_model "$shape" "$model" ;;
        tiny) model=models/strata-tiny; layers=8 ;;
        draft) model=models/strata-tiny-draft; layers=1 ;;
        *) make_model "$shape" "$model" ;;
      esac
      run timeout 120 "$bin/strata_bench_cuda_trace" --model "$model" --prompt 256 --tokens 64 --prefill 16 \
        --trace "$out/trace_$shape.csv" ${TRACE_BATCH:+--batch $TRACE_BATCH} ${BENCH_EXTRA:-} 2>&1 |
        grep -E "^model=|decode|trace" | tee "$out/trace_$shape.log"
      for f in "$out"/trace_"$shape".csv*; do  # trace_SHAPE.csv at batch 1, trace_SHAPE.csv.bB at batch B
        echo "--- $f"; python3 tools/bench/trace_summary.py "$f" --layers "$layers"
      done | tee "$out/trace_$shape.txt" ;;
    ncu1b|ncu8b)  # per-kernel times of decode steps (the last replays of the run), CSV for tools/bench/ncu_summary.py
      shape=${step#ncu}; make_model "$shape" /tmp/llama-$shape
      run timeout 240 ncu --clock-control none --metrics gpu__time_duration.sum --csv --print-units base \
        --launch-skip 0 --launch-count 4000 "$bin/strata_bench_cuda" --model /tmp/llama-$shape --prompt 256 \
        --tokens 4 --prefill 512 >"$out/ncu_$shape.csv" 2>"$out/ncu_$shape.err"
      python3 tools/bench/ncu_summary.py "$out/ncu_$shape.csv" | tee "$out/ncu_$shape.txt" ;;
    sweep1b|sweep8b|sweep8b-invariant)  # streaming clients through HTTP (tools/bench/bench_serve.mjs)
      shape=${step#sweep}; shape=${shape%-invariant}; make_model "$shape" /tmp/llama-$shape
      extra=""; [ "${step%-invariant}" != "$step" ] && extra="--batch-invariant"
      levels=${SWEEP_LEVELS:-1,8,32,64,128}  # starts with 1
      node=$(command -v node || true)
      if [ -z "$node" ]; then xz -dc .devcarry/node.xz >/tmp/node && chmod +x /tmp/node && node=/tmp/node; fi
      LD_LIBRARY_PATH="$libs" "$bin/strata" serve --model /tmp/llama-$shape --device cuda --port 18081 \
        --max-slots 128 --ctx-size 1024 --max-queued 4096 $extra ${SERVE_EXTRA:-} >"$out/serve_$step.log" 2>&1 &
      pid=$!
      for i in $(seq 240); do curl -sf localhost:18081/ready >/dev/null && break; kill -0 $pid || break; sleep 0.5; done
      # Concurrency 1 with 8 requests (a 128-request run would take minutes at 8B), then the rest with 128 each.
      timeout 120 "$node" tools/bench/bench_serve.mjs --url http://127.0.0.1:18081 --concurrency 1 --requests 8 \
        --prompt-tokens 128 --max-tokens 128 --ignore-eos ${SWEEP_EXTRA:-} --quiet --json "$out/sweep_${step}_c1.json" 2>&1 |
        tee "$out/sweep_$step.txt"
      metrics() { curl -s localhost:18081/metrics | grep -E "^strata_(window_duration_seconds_(sum|count)|prefix_cache|prompt_tokens_total|generation_tokens_total)" >"$out/metrics_${step}_$1.txt"; }
      # Per thread of the server: tid, name, then /proc's schedstat (ns on a CPU, ns waiting on a run queue, slices);
      # sched_STEP_cN.txt minus the file before it is what level N cost each thread.
      schedstat() { for t in /proc/$pid/task/*; do echo "${t##*/} $(cat $t/comm 2>/dev/null) $(cat $t/schedstat 2>/dev/null)"; done >"$out/sched_${step}_$1.txt"; }
      metrics c1; schedstat c1
      if [ -n "${SWEEP_SPLIT:-}" ]; then  # one bench_serve run a level, the engine's window metrics after each
        for c in ${levels//,/ }; do
          [ "$c" = 1 ] && continue
          # Prompts of its own (--seed): a level rerunning another's prompts would find them in the prefix cache.
          timeout 300 "$node" tools/bench/bench_serve.mjs --url http://127.0.0.1:18081 --concurrency "$c" \
            --requests "${SWEEP_REQUESTS:-128}" --prompt-tokens 128 --max-tokens 128 --ignore-eos --seed "$((c * 1000))" ${SWEEP_EXTRA:-} \
            --quiet --json "$out/sweep_${step}_c$c.json" 2>&1 | tee -a "$out/sweep_$step.txt"
          metrics "c$c"; schedstat "c$c"
        done
      elif [ "$levels" != 1 ]; then
        timeout 300 "$node" tools/bench/bench_serve.mjs --url http://127.0.0.1:18081 \
          --concurrency "${levels#1,}" --requests "${SWEEP_REQUESTS:-128}" --prompt-tokens 128 --max-tokens 128 \
          --ignore-eos ${SWEEP_EXTRA:-} --quiet --json "$out/sweep_$step.json" --png "$out/sweep_$step.png" 2>&1 |
          tee -a "$out/sweep_$step.txt"
        metrics all
      fi
      kill $pid; wait $pid; grep -iE "error|warn" "$out/serve_$step.log" | head -5 ;;
    spec-cuda|spec-cuda-invariant|spec-cpu)  # strata bench spec on the embedded strata-tiny pair
      dev=cuda; cfg=""; [ "$step" = spec-cpu ] && dev=cpu
      if [ "$step" = spec-cuda-invariant ]; then printf 'batch-invariant: true\n' >/tmp/spec-inv.yaml; cfg="--config /tmp/spec-inv.yaml"; fi
      run timeout 240 "$bin/strata" bench spec --model models/strata-tiny --draft-model models/strata-tiny-draft \
        --device $dev --batch 1,8 --spec off,plain,ngram,draft --max-tokens 128 --sampling greedy $cfg \
        --prompts tools/bench/spec_prompts.json \
        --json "$out/$step.json" 2>&1 | grep -v " info " | tee "$out/$step.txt" ;;
    spec1)  # batch-1 speculation: short runs repeated, the rows of each to spec1_kK_rR.json / .txt
      for r in $(seq "${SPEC_ROUNDS:-2}"); do
        for k in ${SPEC_K:-4}; do
          run timeout 120 "$bin/strata" bench spec --model models/strata-tiny --draft-model models/strata-tiny-draft \
            --device cuda --batch 1 --spec off,plain,ngram,draft --spec-k "$k" --max-tokens 128 --sampling greedy \
            --prompts tools/bench/spec_prompts.json --json "$out/spec1_k${k}_r$r.json" 2>&1 | grep -v " info " |
            sed "s/^/k$k r$r /" | tee "$out/spec1_k${k}_r$r.txt"
        done
      done ;;
    ncubatch1b|ncubatch8b)  # per-kernel times of the last two decode windows at each of NCU_BATCH (default 1,32)
      shape=${step#ncubatch}; make_model "$shape" /tmp/llama-$shape
      run timeout 300 ncu --profile-from-start off --clock-control none --metrics gpu__time_duration.sum --csv \
        --print-units base "$bin/strata_bench_cuda" --model /tmp/llama-$shape --prompt 256 --tokens 8 --prefill 16 \
        --batch "${NCU_BATCH:-1,32}" --profile ${BENCH_EXTRA:-} >"$out/ncubatch_$shape.csv" 2>"$out/ncubatch_$shape.err"
      python3 tools/bench/ncu_summary.py "$out/ncubatch_$shape.csv" | tee "$out/ncubatch_$shape.txt" ;;
    ncumixed1b|ncumixed8b)  # per-kernel times of the last two mixed windows (decode rows + a prompt chunk) of NCU_MIXED
      shape=${step#ncumixed}; make_model "$shape" /tmp/llama-$shape
      run timeout 300 ncu --profile-from-start off --clock-control none --metrics gpu__time_duration.sum --csv \
        --print-units base "$bin/strata_bench_cuda" --model /tmp/llama-$shape --prompt 256 --tokens 8 --prefill 16 \
        --mixed "${NCU_MIXED:-64:128}" --profile ${BENCH_EXTRA:-} >"$out/ncumixed_$shape.csv" 2>"$out/ncumixed_$shape.err"
      python3 tools/bench/ncu_summary.py "$out/ncumixed_$shape.csv" | tee "$out/ncumixed_$shape.txt" ;;
    *) echo "unknown step $step" ;;
  esac
done
echo "=== done $(date -u +%T)"
