// `strata bench` on the GPU: decode tokens/s at batch 1 and prefill tokens/s for given prompt lengths, each
// against the roofline measured in the same run (device copy bandwidth; cuBLAS bf16 GEMM rate).
#pragma once

namespace strata {

// argv[0] is the command's name; flags:
//   --model DIR (required)  --prompt P (256)  --tokens N (256)  --prefill L1,L2,... (512,4096)  --device D (0)
// Prints one key=value line per measurement on stdout; returns 0, or 2 on bad flags, 1 on a failure (message
// on stderr).
int run_bench_command(int argc, char** argv);

}  // namespace strata
