// The fused single-row matmul of the tolerance path (launch_gemv in kernels.hpp): a one-row window reads every
// weight once and does little else, so the kernel is built around the weight stream. Each warp owns a
// contiguous run of outputs (tasks) and streams their bf16 rows with 16-byte loads, two buffers of U loads a
// lane in flight; the fp32 activation row sits in shared memory, staged once per block (and RMS-normed there
// when the sub-layer starts with a norm, so the norm is no kernel of its own), in a layout that gives every
// lane its eight elements as two conflict-free 16-byte reads. The sub-layer's end rides in the epilogue: the
// residual add (o and down projections), or SwiGLU on the gate and up rows of one task. Both buffers' first
// weight loads go out before pdl_wait(): they do not depend on the previous kernel, so their fetch overlaps
// its tail.
//
// Sums: a lane's FMAs over its chunks in k order, then a butterfly over the warp; the norm's sum of squares
// is fixed by k and the block size. So the result depends on the shapes alone (deterministic), though not
// the skinny kernel's bits: windows that must match other windows bit for bit never come here.
#include <cuda_bf16.h>

#include <algorithm>

#include "cuda/cuda_check.hpp"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/kernels.hpp"
#include "cuda/kernels/launch.cuh"

namespace strata {
namespace cuda {
namespace {

// One block an SM: the grid is one wave, and each SM stages the activation row once. Against two blocks of 8
// warps an SM (the same warps and loads in flight) one block of 16 is 2 % faster at batch 1 (8B 233 against
// 229 tok/s, 1B 1,132 against 1,110; docs/PERFORMANCE.md run 45): half the staging reads of the previous
// kernel's output, which every block waits for. Two layouts of the same loads in flight an SM, W warps of L
// 16-byte weight loads a lane a buffer: 16 x 8, or 32 x 4 (twice the warps for the reduction and the
// epilogue, at most 64 registers a thread). A launch without the input norm takes 32 x 4 when that keeps at
// least as many SMs busy (run 46: 8B's o and down projections, +1.5 % at batch 1); with the norm (1B's q/k/v
// and gate/up would qualify) it measured no gain, so those keep 16 x 8. The choice is a function of the
// matrix's shape and the SM count, so results stay deterministic (a lane's chunks and their order do not
// depend on the layout).
constexpr int kBlocksPerSm = 1;
constexpr int kChunk = 256;         // elements of a weight row per warp load step (8 per lane)
constexpr size_t kSmemMax = 220 * 1024;  // the staged row's limit (the SM's 227 KB, less the static scratch)

// Float4 group g of the activation row lives at permuted(g): lane l's elements [8 l, 8 l + 8) of a chunk are
// groups 2 l and 2 l + 1, stored at l and 32 + l of the chunk's 64, so each of a warp's two reads covers 32
// consecutive float4s.
__device__ __forceinline__ int permuted(int g) { return (g & ~63) | ((g & 1) << 5) | ((g & 63) >> 1); }

__device__ __forceinline__ float dot8(const uint4& w, const float4& a, const float4& b, float acc) {
  acc = fmaf(bf16_lo(w.x), a.x, acc);
  acc = fmaf(bf16_hi(w.x), a.y, acc);
  acc = fmaf(bf16_lo(w.y), a.z, acc);
  acc = fmaf(bf16_hi(w.y), a.w, acc);
  acc = fmaf(bf16_lo(w.z), b.x, acc);
  acc = fmaf(bf16_hi(w.z), b.y, acc);
  acc = fmaf(bf16_lo(w.w), b.z, acc);
  acc = fmaf(bf16_hi(w.w), b.w, acc);
  return acc;
}

// NR weight rows per task: 1, or 2 for SwiGLU (gate row j and up row n + j).
template <int NR, GemvEpilogue EP, bool NORM, int kWarps, int kLoads>
__global__ void __launch_bounds__(kWarps * 32, kBlocksPerSm) gemv_kernel(GemvParams p, int tasks_per_warp) {
  extern __shared__ float4 xs[];  // chunks * 64 float4s
  __shared__ float scratch[32];
  constexpr int U = kLoads / NR;
  static_assert(kLoads % NR == 0, "a task's rows share the buffer's loads");
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int k = p.k;
  const int chunks = (k + kChunk - 1) / kChunk;
  const int steps = (chunks + U - 1) / U;
  const int t0 = (blockIdx.x * kWarps + warp) * tasks_per_warp;
  const int t1 = min(p.n, t0 + tasks_per_warp);
  const int total = max(0, t1 - t0) * steps;
  const __nv_bfloat16* w = static_cast<const __nv_bfloat16*>(p.w);

  auto issue = [&](int s, uint4(&b)[NR][U]) {
    const int task = t0 + s / steps, st = s % steps;
#pragma unroll
    for (int r = 0; r < NR; ++r) {
      const __nv_bfloat16* row = w + (size_t(task) + (r ? size_t(p.n) : 0)) * size_t(k);
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int e = ((st * U + u) * 32 + lane) * 8;
        b[r][u] = e < k ? load_stream(row + e) : make_uint4(0, 0, 0, 0);
      }
    }
  };
  uint4 A[NR][U], B[NR][U];
  if (total > 0) issue(0, A);
  if (total > 1) issue(1, B);
  pdl_wait();  // the activations are the previous kernel's output
  pdl_launch_dependents();

  // Stage the row (zeros past k up to the last chunk), normed in place when asked.
  const int groups = chunks * (kChunk / 4), real = k / 4;
  const float4* x4 = reinterpret_cast<const float4*>(p.x);
  float ss = 0.0f;
  for (int g = threadIdx.x; g < groups; g += blockDim.x) {
    const float4 v = g < real ? x4[g] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (NORM) {
      ss = fmaf(v.x, v.x, ss);
      ss = fmaf(v.y, v.y, ss);
      ss = fmaf(v.z, v.z, ss);
      ss = fmaf(v.w, v.w, ss);
    }
    xs[permuted(g)] = v;
  }
  if (NORM) {
    const float total_ss = block_sum(ss, scratch);
    const float inv = 1.0f / sqrtf(__fadd_rn(__fdiv_rn(total_ss, float(k)), p.eps));
    const float4* n4 = reinterpret_cast<const float4*>(p.norm);
    for (int g = threadIdx.x; g < real; g += blockDim.x) {  // each thread rescales the groups it wrote
      float4& v = xs[permuted(g)];
      const float4 nw = n4[g];
      v = make_float4(__fmul_rn(nw.x, __fmul_rn(v.x, inv)), __fmul_rn(nw.y, __fmul_rn(v.y, inv)),
                      __fmul_rn(nw.z, __fmul_rn(v.z, inv)), __fmul_rn(nw.w, __fmul_rn(v.w, inv)));
    }
  }
  __syncthreads();

  float acc[NR];
#pragma unroll
  for (int r = 0; r < NR; ++r) acc[r] = 0.0f;
  auto consume = [&](int s, const uint4(&b)[NR][U]) {
    const int task = t0 + s / steps, st = s % steps;
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int c = st * U + u;
      if (c < chunks) {
        const float4 a0 = xs[c * 64 + lane], a1 = xs[c * 64 + 32 + lane];
#pragma unroll
        for (int r = 0; r < NR; ++r) acc[r] = dot8(b[r][u], a0, a1, acc[r]);
      }
    }
    if (st != steps - 1) return;
#pragma unroll
    for (int r = 0; r < NR; ++r) acc[r] = warp_sum(acc[r]);
    if (lane == 0) {
      if (EP == GemvEpilogue::Store) {
        p.y[task] = acc[0];
      } else if (EP == GemvEpilogue::Residual) {
        const float d = p.bias ? __fadd_rn(acc[0], p.bias[task]) : acc[0];
        p.y[task] = __fadd_rn(p.y[task], d);
      } else {
        const float g = acc[0], u = acc[NR - 1];
        p.y[task] = __fmul_rn(__fdiv_rn(g, __fadd_rn(1.0f, expf(-g))), u);
      }
    }
#pragma unroll
    for (int r = 0; r < NR; ++r) acc[r] = 0.0f;
  };
  // A buffer is refilled as soon as it has been consumed, so one is always in flight behind the other.
  for (int s = 0; s < total; s += 2) {
    consume(s, A);
    if (s + 2 < total) issue(s + 2, A);
    if (s + 1 < total) {
      consume(s + 1, B);
      if (s + 3 < total) issue(s + 3, B);
    }
  }
}

size_t smem_for(int k) { return size_t((k + kChunk - 1) / kChunk) * kChunk * sizeof(float); }

template <int NR, GemvEpilogue EP, bool NORM>
void launch_one(const GemvParams& p, cudaStream_t stream) {
  static int sms = [] {
    int dev = 0, n = 0;
    STRATA_CUDA_CHECK(cudaGetDevice(&dev));
    STRATA_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
    return n;
  }();
  const size_t smem = smem_for(p.k);
  // Tasks a warp and blocks of a layout of w warps a block: the tasks spread over every warp of one wave.
  auto plan = [&](int w, int* tpw) {
    const int warps = sms * kBlocksPerSm * w;
    *tpw = (p.n + warps - 1) / warps;
    return (p.n + w * *tpw - 1) / (w * *tpw);
  };
  int tpw_narrow = 0, tpw_wide = 0;
  const int narrow = plan(16, &tpw_narrow), wide = plan(32, &tpw_wide);
  if (!NORM && wide >= narrow)
    launch_kernel(gemv_kernel<NR, EP, NORM, 32, 4>, dim3(wide), dim3(32 * 32), smem, stream, p, tpw_wide);
  else
    launch_kernel(gemv_kernel<NR, EP, NORM, 16, 8>, dim3(narrow), dim3(16 * 32), smem, stream, p, tpw_narrow);
  STRATA_CUDA_CHECK_LAUNCH();
}

template <int NR, GemvEpilogue EP, bool NORM>
void configure_one() {
  const cudaFuncAttribute attr = cudaFuncAttributeMaxDynamicSharedMemorySize;
  STRATA_CUDA_CHECK(cudaFuncSetAttribute(gemv_kernel<NR, EP, NORM, 16, 8>, attr, int(kSmemMax)));
  STRATA_CUDA_CHECK(cudaFuncSetAttribute(gemv_kernel<NR, EP, NORM, 32, 4>, attr, int(kSmemMax)));
}

}  // namespace

bool gemv_supports(int k) { return k > 0 && k % 8 == 0 && smem_for(k) <= kSmemMax; }

void configure_gemv() {
  configure_one<1, GemvEpilogue::Store, false>();
  configure_one<1, GemvEpilogue::Store, true>();
  configure_one<1, GemvEpilogue::Residual, false>();
  configure_one<2, GemvEpilogue::Swiglu, true>();
  configure_one<2, GemvEpilogue::Swiglu, false>();
}

void launch_gemv(const GemvParams& p, cudaStream_t stream) {
  if (p.n <= 0) return;
  if (!gemv_supports(p.k)) throw Error("gemv: inner dimension " + std::to_string(p.k) + " is not a multiple of 8 "
                                       "or is too long for the staged activation row");
  const bool norm = p.norm != nullptr;
  switch (p.ep) {
    case GemvEpilogue::Store:
      norm ? launch_one<1, GemvEpilogue::Store, true>(p, stream) : launch_one<1, GemvEpilogue::Store, false>(p, stream);
      break;
    case GemvEpilogue::Residual:
      if (norm) throw Error("gemv: the residual epilogue takes no input norm");
      launch_one<1, GemvEpilogue::Residual, false>(p, stream);
      break;
    case GemvEpilogue::Swiglu:
      norm ? launch_one<2, GemvEpilogue::Swiglu, true>(p, stream)
           : launch_one<2, GemvEpilogue::Swiglu, false>(p, stream);
      break;
  }
}

}  // namespace cuda
}  // namespace strata
