// The fused single-row matmul of the tolerance path (launch_gemv in kernels.hpp): a one-row window reads every
// weight once and does little else, so the kernel is built around the weight stream. Each warp owns a
// contiguous run of outputs (tasks) and streams their bf16 rows with 16-byte loads, two buffers of U loads a
// lane in flight; the fp32 activation row sits in shared memory, staged once per block (and RMS-normed there
// when the sub-layer starts with a norm, so the norm is no kernel of its own), in a layout that gives every
// lane its eight elements as two conflict-free 16-byte reads. The sub-layer's end rides in the epilogue: the
// residual add (o and down projections), SwiGLU on the gate and up rows of one task, or (QkvRope) RoPE on
// the q and k heads and the K/V store, from the two rows of a rotation pair that one warp sums. Both buffers' first
// weight loads go out before pdl_wait(): they do not depend on the previous kernel, so their fetch overlaps
// its tail.
//
// kStream (GemvParams::stream_x) reads the activations where they are instead of staging them: each lane
// loads its eight elements of a chunk from global memory when it consumes the chunk (L1 hits after the
// first warp of an SM), so a block starts on its weights as soon as pdl_wait() returns, with no staging pass,
// block reduction or barrier in front. The norm then rides outside the sums: the dot product runs over
// norm * x and is scaled once by 1 / rms at the end, the sum of squares taken by each warp over its first
// task's reads (every task reads all of x).
//
// Sums: a lane's FMAs over its chunks in k order, then a butterfly over the warp; the norm's sum of squares
// is fixed by k and the block size (kStream: by k). So the result depends on the shapes alone (deterministic), though not
// the skinny kernel's bits: windows that must match other windows bit for bit never come here.
#include <cuda_bf16.h>

#include <algorithm>

#include "cuda/cuda_check.hpp"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/kernels.hpp"
#include "cuda/kernels/kv_access.cuh"
#include "cuda/kernels/launch.cuh"
#include "cuda/kernels/qkv_rope.cuh"

namespace strata {
namespace cuda {
namespace {

constexpr int kWarps = 8;           // per block
constexpr int kBlocksPerSm = 2;     // the grid is one wave: every block stages the activations once
constexpr int kLoads = 8;           // 16-byte weight loads per lane per buffer (over the task's rows)
constexpr int kChunk = 256;         // elements of a weight row per warp load step (8 per lane)
constexpr size_t kSmemTwoBlocks = 110 * 1024;  // staged rows up to this size keep two blocks on an SM

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

// QkvRope's task order: tasks 2m and 2m + 1 are rows i and i + hd / 2 of head m / (hd / 2) (i = m mod hd / 2),
// so a warp (an even number of tasks) holds both halves of every pair it rotates.
__device__ __forceinline__ int qkv_row_of(int task, int hd) {
  const int half = hd / 2, m = task >> 1;
  return (m / half) * hd + m % half + ((task & 1) ? half : 0);
}

// NR weight rows per task: 1, or 2 for SwiGLU (gate row j and up row n + j).
template <int NR, GemvEpilogue EP, bool NORM, bool kStream>
__global__ void __launch_bounds__(kWarps * 32, kBlocksPerSm) gemv_kernel(GemvParams p, int tasks_per_warp) {
  extern __shared__ float4 xs[];  // chunks * 64 float4s
  __shared__ float scratch[32];
  constexpr int U = kLoads / NR;
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
    const int out_row = EP == GemvEpilogue::QkvRope ? qkv_row_of(task, p.rope.head_dim) : task;
#pragma unroll
    for (int r = 0; r < NR; ++r) {
      const __nv_bfloat16* row = w + (size_t(out_row) + (r ? size_t(p.n) : 0)) * size_t(k);
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
  const float4* n4 = reinterpret_cast<const float4*>(p.norm);
  float ss = 0.0f;
  for (int g = threadIdx.x; g < groups && !kStream; g += blockDim.x) {
    const float4 v = g < real ? x4[g] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (NORM) {
      ss = fmaf(v.x, v.x, ss);
      ss = fmaf(v.y, v.y, ss);
      ss = fmaf(v.z, v.z, ss);
      ss = fmaf(v.w, v.w, ss);
    }
    xs[permuted(g)] = v;
  }
  if (NORM && !kStream) {
    const float total_ss = block_sum(ss, scratch);
    const float inv = 1.0f / sqrtf(__fadd_rn(__fdiv_rn(total_ss, float(k)), p.eps));
    for (int g = threadIdx.x; g < real; g += blockDim.x) {  // each thread rescales the groups it wrote
      float4& v = xs[permuted(g)];
      const float4 nw = n4[g];
      v = make_float4(__fmul_rn(nw.x, __fmul_rn(v.x, inv)), __fmul_rn(nw.y, __fmul_rn(v.y, inv)),
                      __fmul_rn(nw.z, __fmul_rn(v.z, inv)), __fmul_rn(nw.w, __fmul_rn(v.w, inv)));
    }
  }
  if (!kStream) __syncthreads();
  float inv = 1.0f;  // kStream with NORM: 1 / rms, known once the warp's first task is summed

  float acc[NR];
#pragma unroll
  for (int r = 0; r < NR; ++r) acc[r] = 0.0f;
  float pair_first = 0.0f;  // QkvRope: the first half of the pair being summed (lane 0)
  auto consume = [&](int s, const uint4(&b)[NR][U]) {
    const int task = t0 + s / steps, st = s % steps;
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int c = st * U + u;
      if (c < chunks) {
        float4 a0, a1;
        if (kStream) {
          const int e = (c * 32 + lane) * 8;  // this lane's eight elements; zeros past k (as its weights)
          const int g = e / 4;
          a0 = e < k ? x4[g] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
          a1 = e < k ? x4[g + 1] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
          if (NORM) {
            if (task == t0) {
              ss = fmaf(a0.x, a0.x, ss), ss = fmaf(a0.y, a0.y, ss), ss = fmaf(a0.z, a0.z, ss), ss = fmaf(a0.w, a0.w, ss);
              ss = fmaf(a1.x, a1.x, ss), ss = fmaf(a1.y, a1.y, ss), ss = fmaf(a1.z, a1.z, ss), ss = fmaf(a1.w, a1.w, ss);
            }
            const float4 m0 = e < k ? n4[g] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            const float4 m1 = e < k ? n4[g + 1] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            a0 = make_float4(__fmul_rn(m0.x, a0.x), __fmul_rn(m0.y, a0.y), __fmul_rn(m0.z, a0.z), __fmul_rn(m0.w, a0.w));
            a1 = make_float4(__fmul_rn(m1.x, a1.x), __fmul_rn(m1.y, a1.y), __fmul_rn(m1.z, a1.z), __fmul_rn(m1.w, a1.w));
          }
        } else {
          a0 = xs[c * 64 + lane], a1 = xs[c * 64 + 32 + lane];
        }
#pragma unroll
        for (int r = 0; r < NR; ++r) acc[r] = dot8(b[r][u], a0, a1, acc[r]);
      }
    }
    if (st != steps - 1) return;
#pragma unroll
    for (int r = 0; r < NR; ++r) acc[r] = warp_sum(acc[r]);
    if (kStream && NORM) {
      if (task == t0) inv = 1.0f / sqrtf(__fadd_rn(__fdiv_rn(warp_sum(ss), float(k)), p.eps));
#pragma unroll
      for (int r = 0; r < NR; ++r) acc[r] = __fmul_rn(acc[r], inv);
    }
    if (lane == 0) {
      if (EP == GemvEpilogue::Store) {
        p.y[task] = acc[0];
      } else if (EP == GemvEpilogue::Residual) {
        const float d = p.bias ? __fadd_rn(acc[0], p.bias[task]) : acc[0];
        p.y[task] = __fadd_rn(p.y[task], d);
      } else if (EP == GemvEpilogue::QkvRope) {
        const QkvRopeParams& q = p.rope;
        const int hd = q.head_dim, half = hd / 2, row = qkv_row_of(task, hd);
        const float v = q.bias ? __fadd_rn(acc[0], q.bias[row]) : acc[0];
        if ((task & 1) == 0) {
          pair_first = v;
        } else {
          const int head = row / hd, i = row - head * hd - half;  // this is row i + half of the head
          const bool is_q = head < q.n_heads, is_k = !is_q && head < q.n_heads + q.n_kv_heads;
          const int pos = q.pos[0];
          float lo = pair_first, hi = v;
          if (is_q || is_k)  // prepare_heads' rotation
            rotate_pair(pair_first, v, q.cos[size_t(pos) * half + i], q.sin[size_t(pos) * half + i], &lo, &hi);
          if (is_q) {
            p.y[row - half] = lo;
            p.y[row] = hi;
          } else {
            void* base = is_k ? q.kv.k : q.kv.v;
            const size_t at = kv_head_at(q, head, q.slot[0], pos);
            store_kv(q.kv, base, at + i, lo);
            store_kv(q.kv, base, at + i + half, hi);
          }
        }
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

template <int NR, GemvEpilogue EP, bool NORM, bool kStream>
void launch_one(const GemvParams& p, cudaStream_t stream) {
  static int sms = [] {
    int dev = 0, n = 0;
    STRATA_CUDA_CHECK(cudaGetDevice(&dev));
    STRATA_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
    return n;
  }();
  const size_t smem = kStream ? 0 : smem_for(p.k);
  const int per_sm = smem <= kSmemTwoBlocks ? kBlocksPerSm : 1;
  const int warps = sms * per_sm * kWarps;
  int tpw = (p.n + warps - 1) / warps;
  if (EP == GemvEpilogue::QkvRope) tpw += tpw & 1;  // whole pairs in every warp
  const int blocks = (p.n + kWarps * tpw - 1) / (kWarps * tpw);
  launch_kernel(gemv_kernel<NR, EP, NORM, kStream>, dim3(blocks), dim3(kWarps * 32), smem, stream, p, tpw);
  STRATA_CUDA_CHECK_LAUNCH();
}

template <int NR, GemvEpilogue EP, bool NORM>
void configure_one() {
  STRATA_CUDA_CHECK(cudaFuncSetAttribute(gemv_kernel<NR, EP, NORM, false>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, int(2 * kSmemTwoBlocks)));
  // The streaming variant stages nothing: the SM's memory goes to L1, where its activations are read.
  STRATA_CUDA_CHECK(cudaFuncSetAttribute(gemv_kernel<NR, EP, NORM, true>,
                                         cudaFuncAttributePreferredSharedMemoryCarveout, 0));
}

template <int NR, GemvEpilogue EP, bool NORM>
void launch_variant(const GemvParams& p, cudaStream_t stream) {
  if (p.stream_x)
    launch_one<NR, EP, NORM, true>(p, stream);
  else
    launch_one<NR, EP, NORM, false>(p, stream);
}

}  // namespace

bool gemv_supports(int k) { return k > 0 && k % 8 == 0 && smem_for(k) <= 2 * kSmemTwoBlocks; }

void configure_gemv() {
  configure_one<1, GemvEpilogue::Store, false>();
  configure_one<1, GemvEpilogue::Store, true>();
  configure_one<1, GemvEpilogue::Residual, false>();
  configure_one<2, GemvEpilogue::Swiglu, true>();
  configure_one<2, GemvEpilogue::Swiglu, false>();
  configure_one<1, GemvEpilogue::QkvRope, true>();
  configure_one<1, GemvEpilogue::QkvRope, false>();
}

void launch_gemv(const GemvParams& p, cudaStream_t stream) {
  if (p.n <= 0) return;
  if (!gemv_supports(p.k)) throw Error("gemv: inner dimension " + std::to_string(p.k) + " is not a multiple of 8 "
                                       "or is too long for the staged activation row");
  const bool norm = p.norm != nullptr;
  switch (p.ep) {
    case GemvEpilogue::Store:
      norm ? launch_variant<1, GemvEpilogue::Store, true>(p, stream) : launch_variant<1, GemvEpilogue::Store, false>(p, stream);
      break;
    case GemvEpilogue::Residual:
      if (norm) throw Error("gemv: the residual epilogue takes no input norm");
      launch_variant<1, GemvEpilogue::Residual, false>(p, stream);
      break;
    case GemvEpilogue::Swiglu:
      norm ? launch_variant<2, GemvEpilogue::Swiglu, true>(p, stream)
           : launch_variant<2, GemvEpilogue::Swiglu, false>(p, stream);
      break;
    case GemvEpilogue::QkvRope: {
      const QkvRopeParams& q = p.rope;
      if (q.head_dim <= 0 || q.head_dim % 2 != 0 || p.n != (q.n_heads + 2 * q.n_kv_heads) * q.head_dim)
        throw Error("gemv: the q/k/v epilogue needs n = (heads + 2 kv heads) x an even head_dim");
      if (q.q_norm || q.k_norm || q.qkv_rem) throw Error("gemv: the q/k/v epilogue takes no q/k norms");
      norm ? launch_variant<1, GemvEpilogue::QkvRope, true>(p, stream)
           : launch_variant<1, GemvEpilogue::QkvRope, false>(p, stream);
      break;
    }
  }
}

}  // namespace cuda
}  // namespace strata
