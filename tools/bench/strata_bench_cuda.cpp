// CUDA throughput on the GPU machine: strata_bench_cuda --model DIR [--prompt P] [--tokens N] [--prefill L,...]
// (see cuda/bench.hpp). Random-weight checkpoints shaped like Llama-3.2-1B / Llama-3.1-8B are the intended input.
#include "cuda/bench.hpp"

int main(int argc, char** argv) { return strata::run_bench_command(argc, argv); }
