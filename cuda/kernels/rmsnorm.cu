// RMSNorm with the residual add fused in front (launch_add_rmsnorm in kernels.hpp). One block per row, its
// thread count T a function of n alone (threads_for); every element stays in registers between the one read
// and the one write of the row (rows over 16384 floats: add_rmsnorm_long, a second pass over memory). Thread t
// owns the groups of four elements g = t, t + T, t + 2T, ... (16-byte loads when every row is 16-byte aligned,
// else scalar loads of the same elements). The sum of squares is each thread's sequential FMAs over its
// elements in index order, then a butterfly in every warp, then the warp sums by a butterfly over warps: an
// order fixed by n, never by the number of rows or the alignment, so a row's norm depends on the row alone.
// The element-wise steps round as the CPU backend's do: v = x + (delta + bias), inv = 1 / sqrt(sum / n + eps),
// y = weight * (v * inv).
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>

#include "cuda/cuda_check.hpp"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/kernels.hpp"
#include "cuda/kernels/launch.cuh"

namespace strata {
namespace cuda {
namespace {

constexpr int kMaxThreads = 512;  // 128 registers per thread
constexpr int kTargetGroups = 4;  // groups of four elements per thread the thread count aims at
constexpr int kMaxGroups = 8;     // in registers: rows up to 4 * 8 * 512 = 16384 floats
constexpr unsigned kFull = 0xffffffffu;

int groups_of(int n) { return (n + 3) / 4; }

// Threads per row: a multiple of 32 that gives each thread about kTargetGroups groups.
int threads_for(int n) {
  const int g = groups_of(n);
  const int t = (g + kTargetGroups - 1) / kTargetGroups;
  return std::min(kMaxThreads, std::max(32, (t + 31) / 32 * 32));
}

struct Row4 {
  float v[4];
};

template <bool kVec>
__device__ __forceinline__ Row4 load4(const float* p, int i, int n) {
  Row4 r;
  if (kVec) {
    const float4 f = *reinterpret_cast<const float4*>(p + i);
    r.v[0] = f.x;
    r.v[1] = f.y;
    r.v[2] = f.z;
    r.v[3] = f.w;
  } else {
#pragma unroll
    for (int c = 0; c < 4; ++c) r.v[c] = i + c < n ? p[i + c] : 0.0f;
  }
  return r;
}

template <bool kVec>
__device__ __forceinline__ void store4(float* p, int i, int n, const Row4& r) {
  if (kVec) {
    *reinterpret_cast<float4*>(p + i) = make_float4(r.v[0], r.v[1], r.v[2], r.v[3]);
  } else {
#pragma unroll
    for (int c = 0; c < 4; ++c)
      if (i + c < n) p[i + c] = r.v[c];
  }
}

// 1 / sqrt(mean of squares + eps) from each thread's partial sum of squares: a butterfly per warp, then every
// warp adds the warp sums by the same butterfly (warp w's sum at lane w, zeros past the last warp), so the
// order is fixed by the block size, which n alone decides.
__device__ __forceinline__ float inv_rms(float ss, float* warp_sums, int n, float eps) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int o = 16; o >= 1; o /= 2) ss = __fadd_rn(ss, __shfl_xor_sync(kFull, ss, o));
  if (lane == 0) warp_sums[warp] = ss;
  __syncthreads();
  float total = lane < int(blockDim.x >> 5) ? warp_sums[lane] : 0.0f;
#pragma unroll
  for (int o = 16; o >= 1; o /= 2) total = __fadd_rn(total, __shfl_xor_sync(kFull, total, o));
  return rms_inv(total, n, eps);
}

// A thread's groups: g = threadIdx.x + k * blockDim.x for k < kG (those below n / 4, rounded up).
template <bool kVec, int kG>
__global__ void __launch_bounds__(kMaxThreads)
    add_rmsnorm_kernel(float* __restrict__ x, const float* __restrict__ delta, const float* __restrict__ delta_rem,
                       const float* __restrict__ bias, const float* __restrict__ weight,
                       const int* __restrict__ row_map, int n, float eps, bool write_back, float* __restrict__ y,
                       __nv_bfloat16* __restrict__ y16, size_t rem_off) {
  pdl_wait();
  pdl_launch_dependents();
  __shared__ float warp_sums[kMaxThreads / 32];
  const int T = blockDim.x;
  const int ng = (n + 3) / 4;
  const int i_out = blockIdx.x;

  // The weights do not depend on the row: their loads go out first (after the sum for the longest rows, to
  // stay within the registers).
  constexpr bool kEarlyWeight = kG <= 4;
  Row4 w[kEarlyWeight ? kG : 1];
  if (kEarlyWeight) {
#pragma unroll
    for (int k = 0; k < kG; ++k) {
      const int g = threadIdx.x + k * T;
      if (g < ng) w[k] = load4<kVec>(weight, 4 * g, n);
    }
  }
  const int src = row_map ? row_map[i_out] : i_out;
  float* xr = x + size_t(src) * n;
  const float* dr = delta ? delta + size_t(src) * n : nullptr;
  const float* drr = delta_rem ? delta_rem + size_t(src) * n : nullptr;
  Row4 v[kG];
#pragma unroll
  for (int k = 0; k < kG; ++k) {
    const int g = threadIdx.x + k * T;
    if (g < ng) {
      v[k] = load4<kVec>(xr, 4 * g, n);
      if (dr) {
        Row4 d = load4<kVec>(dr, 4 * g, n);
        if (drr) {
          const Row4 e = load4<kVec>(drr, 4 * g, n);
#pragma unroll
          for (int c = 0; c < 4; ++c) d.v[c] = __fadd_rn(d.v[c], e.v[c]);
        }
        if (bias) {
          const Row4 b = load4<kVec>(bias, 4 * g, n);
#pragma unroll
          for (int c = 0; c < 4; ++c) d.v[c] = __fadd_rn(d.v[c], b.v[c]);
        }
#pragma unroll
        for (int c = 0; c < 4; ++c) v[k].v[c] = __fadd_rn(v[k].v[c], d.v[c]);
      }
    }
  }
  float ss = 0.0f;
#pragma unroll
  for (int k = 0; k < kG; ++k) {
    const int g = threadIdx.x + k * T;
    if (g < ng) {
#pragma unroll
      for (int c = 0; c < 4; ++c)
        if (kVec || 4 * g + c < n) ss = __fmaf_rn(v[k].v[c], v[k].v[c], ss);
    }
  }
  const float inv = inv_rms(ss, warp_sums, n, eps);

  float* yr = y ? y + size_t(i_out) * n : nullptr;
  __nv_bfloat16* y16r = y16 ? y16 + size_t(i_out) * n : nullptr;
#pragma unroll
  for (int k = 0; k < kG; ++k) {
    const int g = threadIdx.x + k * T;
    if (g < ng) {
      if (write_back && dr) store4<kVec>(xr, 4 * g, n, v[k]);
      const Row4 wk = kEarlyWeight ? w[kEarlyWeight ? k : 0] : load4<kVec>(weight, 4 * g, n);
      Row4 o;
#pragma unroll
      for (int c = 0; c < 4; ++c) o.v[c] = __fmul_rn(wk.v[c], __fmul_rn(v[k].v[c], inv));
      if (yr) store4<kVec>(yr, 4 * g, n, o);
      if (y16r) {
        if (kVec) {
          store_bf16x2_split(y16r + 4 * g, rem_off, o.v[0], o.v[1]);
          store_bf16x2_split(y16r + 4 * g + 2, rem_off, o.v[2], o.v[3]);
        } else {
#pragma unroll
          for (int c = 0; c < 4; ++c)
            if (4 * g + c < n) store_bf16_split(y16r + 4 * g + c, rem_off, o.v[c]);
        }
      }
    }
  }
}

// Rows longer than kMaxGroups groups per thread: the same ownership and order with a second pass over memory.
__global__ void __launch_bounds__(kMaxThreads)
    add_rmsnorm_long(float* __restrict__ x, const float* __restrict__ delta, const float* __restrict__ delta_rem,
                     const float* __restrict__ bias, const float* __restrict__ weight,
                     const int* __restrict__ row_map, int n, float eps, bool write_back, float* __restrict__ y,
                     __nv_bfloat16* __restrict__ y16, size_t rem_off) {
  pdl_wait();
  pdl_launch_dependents();
  __shared__ float warp_sums[kMaxThreads / 32];
  const int T = blockDim.x;
  const int ng = (n + 3) / 4;
  const int i_out = blockIdx.x;
  const int src = row_map ? row_map[i_out] : i_out;
  float* xr = x + size_t(src) * n;
  const float* dr = delta ? delta + size_t(src) * n : nullptr;
  const float* drr = delta_rem ? delta_rem + size_t(src) * n : nullptr;
  // The residual's update, as the register kernel forms it: (delta + delta_rem) + bias.
  auto upd = [&](int i) {
    const float d = drr ? __fadd_rn(dr[i], drr[i]) : dr[i];
    return bias ? __fadd_rn(d, bias[i]) : d;
  };
  float ss = 0.0f;
  for (int g = threadIdx.x; g < ng; g += T) {
    for (int c = 0; c < 4; ++c) {
      const int i = 4 * g + c;
      if (i >= n) break;
      float v = xr[i];
      if (dr) v = __fadd_rn(v, upd(i));
      if (write_back && dr) xr[i] = v;
      ss = __fmaf_rn(v, v, ss);
    }
  }
  const float inv = inv_rms(ss, warp_sums, n, eps);
  float* yr = y ? y + size_t(i_out) * n : nullptr;
  for (int g = threadIdx.x; g < ng; g += T) {
    for (int c = 0; c < 4; ++c) {
      const int i = 4 * g + c;
      if (i >= n) break;
      float v = xr[i];  // this thread's own write above when write_back
      if (dr && !write_back) v = __fadd_rn(v, upd(i));
      const float o = __fmul_rn(weight[i], __fmul_rn(v, inv));
      if (yr) yr[i] = o;
      if (y16) store_bf16_split(y16 + size_t(i_out) * n + i, rem_off, o);
    }
  }
}

bool aligned(const void* p, uintptr_t a) { return (reinterpret_cast<uintptr_t>(p) & (a - 1)) == 0; }

template <bool kVec>
void launch_sized(int kg, dim3 grid, int threads, cudaStream_t stream, float* x, const float* delta,
                  const float* delta_rem, const float* bias, const float* weight, const int* row_map, int n, float eps,
                  bool write_back, float* y, __nv_bfloat16* y16, size_t rem_off) {
  auto go = [&](auto kernel) {
    launch_kernel(kernel, grid, threads, 0, stream, x, delta, delta_rem, bias, weight, row_map, n, eps, write_back, y,
                  y16, rem_off);
  };
  if (kg <= 1)
    go(add_rmsnorm_kernel<kVec, 1>);
  else if (kg <= 2)
    go(add_rmsnorm_kernel<kVec, 2>);
  else if (kg <= 4)
    go(add_rmsnorm_kernel<kVec, 4>);
  else
    go(add_rmsnorm_kernel<kVec, kMaxGroups>);
}

}  // namespace

void launch_add_rmsnorm(float* x, const float* delta, const float* delta_rem, const float* bias, const float* weight,
                        const int* row_map, int rows, int n, float eps, bool write_back, float* y, Bf16Out y16,
                        cudaStream_t stream) {
  if (rows <= 0 || n <= 0) return;
  const int threads = threads_for(n);
  const int kg = (groups_of(n) + threads - 1) / threads;  // groups per thread
  __nv_bfloat16* y16b = static_cast<__nv_bfloat16*>(y16.p);
  const size_t rem_off = y16.split ? size_t(rows) * size_t(n) : 0;
  if (kg > kMaxGroups) {
    launch_kernel(add_rmsnorm_long, rows, threads, 0, stream, x, delta, delta_rem, bias, weight, row_map, n, eps,
                  write_back, y, y16b, rem_off);
  } else {
    // 16-byte loads need every row on 16 bytes; the scalar loads read the same elements in the same order.
    const bool vec = n % 4 == 0 && aligned(x, 16) && aligned(delta, 16) && aligned(delta_rem, 16) &&
                     aligned(bias, 16) && aligned(weight, 16) && aligned(y, 16) && aligned(y16b, 8);
    if (vec)
      launch_sized<true>(kg, rows, threads, stream, x, delta, delta_rem, bias, weight, row_map, n, eps, write_back, y,
                         y16b, rem_off);
    else
      launch_sized<false>(kg, rows, threads, stream, x, delta, delta_rem, bias, weight, row_map, n, eps, write_back,
                          y, y16b, rem_off);
  }
  STRATA_CUDA_CHECK_LAUNCH();
}

}  // namespace cuda
}  // namespace strata
