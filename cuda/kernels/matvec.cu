// The skinny matmul for decode and verify windows (launch_matvec in kernels.hpp). Decode is memory-bound:
// the weights stream through once per 16 rows with 16-byte non-allocating loads while the activations (a
// few KB per row) stay in L1/L2. Per output element the arithmetic is: lane l of the warp accumulates, with
// fp32 FMAs, the 16-byte weight vectors l, l + 32, l + 64, ... in order (elements of a vector in order), then
// the warp butterfly adds the 32 lane sums. That order is a function of k only, so the same row gives the same
// bits in a tile of 1, 2, 4, 8 or 16 rows.
#include <cuda_bf16.h>

#include <cstdlib>

#include "cuda/cuda_check.hpp"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/kernels.hpp"
#include "cuda/kernels/launch.cuh"

namespace strata {
namespace cuda {
namespace {

constexpr int kWarps = 8;  // output elements per block
constexpr int kMaxTile = 16;
constexpr int kInFlight = 8;  // 16-byte weight loads each lane issues before it uses the first

// How the weights are read (set_matvec_variant; the arithmetic is the same in all of them):
// 0: non-coherent, no L1 allocation; 1: the same with a 256-byte L2 prefetch per miss; 2: non-coherent through
// L1 with the 256-byte L2 prefetch; 3: bf16 rows through shared memory by bulk copies (matvec_bulk_kernel).
template <int Load>
__device__ __forceinline__ uint4 load_stream(const uint4* p) {
  uint4 r;
  if (Load == 0)
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
                 : "l"(p));
  else if (Load == 1)
    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
                 : "l"(p));
  else
    asm volatile("ld.global.nc.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
                 : "l"(p));
  return r;
}

int g_variant = -1;  // -1: not read yet

template <class W>
struct Vec;

template <>
struct Vec<__nv_bfloat16> {
  static constexpr int n = 8;
  __device__ static void unpack(const uint4& u, float* f) {
    f[0] = bf16_lo(u.x), f[1] = bf16_hi(u.x), f[2] = bf16_lo(u.y), f[3] = bf16_hi(u.y);
    f[4] = bf16_lo(u.z), f[5] = bf16_hi(u.z), f[6] = bf16_lo(u.w), f[7] = bf16_hi(u.w);
  }
};

template <>
struct Vec<float> {
  static constexpr int n = 4;
  __device__ static void unpack(const uint4& u, float* f) {
    f[0] = __uint_as_float(u.x), f[1] = __uint_as_float(u.y), f[2] = __uint_as_float(u.z),
    f[3] = __uint_as_float(u.w);
  }
};

// A warp computes NJ consecutive outputs j0 .. j0 + NJ - 1 for the tile's rows (with Swiglu also their up rows
// n + j: NR weight rows in all). Every x vector a lane loads serves all NR weight rows, which is what keeps
// multi-row tiles from being bound by L1 traffic; every output still accumulates vectors l, l + 32, l + 64, ...
// of its own row in order with the same FMAs, so NJ changes nothing in the bits. kInFlight / NR loads per weight
// row are issued before the first is used (the loads are volatile asm: they issue in program order).
//
// y[r][j] = w[j] . x[r]; with Swiglu, w is a stacked [gate | up] matrix and y[r][j] = silu(gate) * up as
// launch_swiglu computes it, so the fused and unfused paths give the same bits.
template <class W, int RT, int NJ, bool Swiglu, int Load>
__global__ void __launch_bounds__(kWarps * 32) matvec_kernel(const W* __restrict__ w, int n, int k,
                                                             const float* __restrict__ x, int rows,
                                                             float* __restrict__ y) {
  pdl_wait();
  pdl_launch_dependents();
  constexpr int V = Vec<W>::n;
  constexpr int NR = NJ * (Swiglu ? 2 : 1);
  constexpr int U = kInFlight / NR > 0 ? kInFlight / NR : 1;
  const int lane = threadIdx.x & 31;
  const int j0 = (blockIdx.x * kWarps + (threadIdx.x >> 5)) * NJ;
  if (j0 >= n) return;
  const int r0 = blockIdx.y * RT;
  const int nr = min(RT, rows - r0);
  const int nvec = k / V;
  const uint4* wrow[NR];
  bool live[NR];
#pragma unroll
  for (int i = 0; i < NR; ++i) {
    const int jj = j0 + i % NJ;
    live[i] = jj < n;
    wrow[i] = reinterpret_cast<const uint4*>(w + (size_t(live[i] ? jj : j0) + (i >= NJ ? size_t(n) : 0)) * k);
  }
  float acc[NR][RT];
#pragma unroll
  for (int i = 0; i < NR; ++i)
#pragma unroll
    for (int r = 0; r < RT; ++r) acc[i][r] = 0.0f;
  for (int v0 = lane; v0 < nvec; v0 += 32 * U) {
    uint4 raw[NR][U];
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int i = 0; i < NR; ++i)
        if (v0 + 32 * u < nvec && live[i]) raw[i][u] = load_stream<Load>(wrow[i] + v0 + 32 * u);
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int v = v0 + 32 * u;
      if (v >= nvec) break;
      float wf[NR][V];
#pragma unroll
      for (int i = 0; i < NR; ++i) Vec<W>::unpack(live[i] ? raw[i][u] : make_uint4(0, 0, 0, 0), wf[i]);
#pragma unroll
      for (int r = 0; r < RT; ++r) {
        if (r < nr) {
          const float4* xr = reinterpret_cast<const float4*>(x + size_t(r0 + r) * k + size_t(v) * V);
#pragma unroll
          for (int q = 0; q < V / 4; ++q) {
            const float4 xv = __ldg(xr + q);
#pragma unroll
            for (int i = 0; i < NR; ++i) {
              float a = acc[i][r];
              a = __fmaf_rn(wf[i][4 * q + 0], xv.x, a);
              a = __fmaf_rn(wf[i][4 * q + 1], xv.y, a);
              a = __fmaf_rn(wf[i][4 * q + 2], xv.z, a);
              a = __fmaf_rn(wf[i][4 * q + 3], xv.w, a);
              acc[i][r] = a;
            }
          }
        }
      }
    }
  }
#pragma unroll
  for (int i = 0; i < NJ; ++i) {
    const int jj = j0 + i;
#pragma unroll
    for (int r = 0; r < RT; ++r) {
      const float g = warp_sum(acc[i][r]);
      if (!Swiglu) {
        if (lane == 0 && r < nr && jj < n) y[size_t(r0 + r) * n + jj] = g;
      } else {
        const float up = warp_sum(acc[NJ + i][r]);
        if (lane == 0 && r < nr && jj < n)
          y[size_t(r0 + r) * n + jj] = __fmul_rn(__fdiv_rn(g, __fadd_rn(1.0f, expf(-g))), up);
      }
    }
  }
}

// Variant 3: the block's weight rows stream into shared memory through the bulk-copy engine (cp.async.bulk
// with an mbarrier per stage, kBulkStages stages of kBulkVec 16-byte vectors per row), so the loads hold no L1
// miss slots; the warps then read their row from shared memory. Lane l still takes vectors l, l + 32, ... of
// the row in order (a stage holds a multiple of 32 vectors), so every output has the bits of variant 0.
constexpr int kBulkVec = 64;
constexpr int kBulkStages = 3;

__device__ __forceinline__ uint32_t smem_addr(const void* p) { return uint32_t(__cvta_generic_to_shared(p)); }

template <class W, int RT, bool Swiglu>
__global__ void __launch_bounds__(kWarps * 32) matvec_bulk_kernel(const W* __restrict__ w, int n, int k,
                                                                  const float* __restrict__ x, int rows,
                                                                  float* __restrict__ y) {
  pdl_wait();
  pdl_launch_dependents();
  constexpr int V = Vec<W>::n;
  constexpr int WR = kWarps * (Swiglu ? 2 : 1);  // weight rows per block: outputs (and their up rows)
  extern __shared__ __align__(128) uint4 stage_mem[];  // [kBulkStages][WR][kBulkVec]
  __shared__ __align__(8) uint64_t full[kBulkStages];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int j = blockIdx.x * kWarps + warp;
  const int r0 = blockIdx.y * RT;
  const int nr = min(RT, rows - r0);
  const int nvec = k / V;
  const int nchunks = (nvec + kBulkVec - 1) / kBulkVec;
  const int valid = min(kWarps, n - int(blockIdx.x) * kWarps);  // output rows of this block below n
  if (threadIdx.x == 0) {
    for (int s = 0; s < kBulkStages; ++s)
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(&full[s])) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }
  __syncthreads();
  auto issue = [&](int c) {  // thread 0 only
    const int s = c % kBulkStages;
    const int v0 = c * kBulkVec, nv = min(kBulkVec, nvec - v0);
    const uint32_t bytes = uint32_t(nv) * 16u;
    const uint32_t bar = smem_addr(&full[s]);
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes * uint32_t(valid) * (Swiglu ? 2u : 1u))
                 : "memory");
    for (int wr = 0; wr < WR; ++wr) {
      const int local = wr % kWarps;
      if (local >= valid) continue;
      const size_t row = size_t(blockIdx.x) * kWarps + local + (wr >= kWarps ? size_t(n) : 0);
      const uint4* src = reinterpret_cast<const uint4*>(w + row * k) + v0;
      uint4* dst = stage_mem + (size_t(s) * WR + wr) * kBulkVec;
      asm volatile(
          "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(smem_addr(dst)),
          "l"(src), "r"(bytes), "r"(bar)
          : "memory");
    }
  };
  if (threadIdx.x == 0)
    for (int c = 0; c < min(kBulkStages, nchunks); ++c) issue(c);
  float acc[RT], up[RT];
#pragma unroll
  for (int r = 0; r < RT; ++r) acc[r] = up[r] = 0.0f;
  for (int c = 0; c < nchunks; ++c) {
    const int s = c % kBulkStages;
    const uint32_t bar = smem_addr(&full[s]), parity = uint32_t(c / kBulkStages) & 1u;
    uint32_t done = 0;
    while (!done)
      asm volatile(
          "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
          : "=r"(done)
          : "r"(bar), "r"(parity)
          : "memory");
    if (warp < valid) {
      const int v0 = c * kBulkVec, nv = min(kBulkVec, nvec - v0);
      for (int half = 0; half < (Swiglu ? 2 : 1); ++half) {
        const uint4* srow = stage_mem + (size_t(s) * WR + warp + half * kWarps) * kBulkVec;
        float* a = half ? up : acc;
        for (int u = lane; u < nv; u += 32) {
          float wf[V];
          Vec<W>::unpack(srow[u], wf);
          const int v = v0 + u;
#pragma unroll
          for (int r = 0; r < RT; ++r) {
            if (r < nr) {
              const float4* xr = reinterpret_cast<const float4*>(x + size_t(r0 + r) * k + size_t(v) * V);
              float t = a[r];
#pragma unroll
              for (int q = 0; q < V / 4; ++q) {
                const float4 xv = __ldg(xr + q);
                t = __fmaf_rn(wf[4 * q + 0], xv.x, t);
                t = __fmaf_rn(wf[4 * q + 1], xv.y, t);
                t = __fmaf_rn(wf[4 * q + 2], xv.z, t);
                t = __fmaf_rn(wf[4 * q + 3], xv.w, t);
              }
              a[r] = t;
            }
          }
        }
      }
    }
    __syncthreads();  // every warp is done with stage s before it is refilled
    if (threadIdx.x == 0 && c + kBulkStages < nchunks) issue(c + kBulkStages);
  }
  if (warp >= valid) return;
#pragma unroll
  for (int r = 0; r < RT; ++r) {
    const float g = warp_sum(acc[r]);
    if (!Swiglu) {
      if (lane == 0 && r < nr) y[size_t(r0 + r) * n + j] = g;
    } else {
      const float u = warp_sum(up[r]);
      if (lane == 0 && r < nr) y[size_t(r0 + r) * n + j] = __fmul_rn(__fdiv_rn(g, __fadd_rn(1.0f, expf(-g))), u);
    }
  }
}

template <class W, int RT, bool Swiglu>
void launch_tile(const void* w, int n, int k, const float* x, int rows, float* y, cudaStream_t stream) {
  const dim3 grid((n + kWarps - 1) / kWarps, (rows + RT - 1) / RT);
  const W* wt = static_cast<const W*>(w);
  const int variant = matvec_variant();
  // The fused SwiGLU form would need two rows' stages (over the 48 KB default of shared memory): it keeps the
  // register loads, which already run near the copy bandwidth on its large matrix.
  if (variant == 3 && Vec<W>::n == 8 && !Swiglu) {
    const size_t smem = size_t(kBulkStages) * kWarps * (Swiglu ? 2 : 1) * kBulkVec * 16;
    launch_kernel(matvec_bulk_kernel<W, RT, Swiglu>, grid, kWarps * 32, smem, stream, wt, n, k, x, rows, y);
    STRATA_CUDA_CHECK_LAUNCH();
    return;
  }
  // Outputs per warp: one for single rows (the most warps, the most loads in flight), more for multi-row tiles,
  // whose cost is the x traffic through L1 that NJ outputs share.
  constexpr int NJ = RT == 1 ? 1 : (Swiglu || RT == 2) ? 2 : 4;
  const dim3 g((n + kWarps * NJ - 1) / (kWarps * NJ), grid.y);
  switch (variant) {
    case 1: launch_kernel(matvec_kernel<W, RT, NJ, Swiglu, 1>, g, kWarps * 32, 0, stream, wt, n, k, x, rows, y); break;
    case 2: launch_kernel(matvec_kernel<W, RT, NJ, Swiglu, 2>, g, kWarps * 32, 0, stream, wt, n, k, x, rows, y); break;
    default: launch_kernel(matvec_kernel<W, RT, NJ, Swiglu, 0>, g, kWarps * 32, 0, stream, wt, n, k, x, rows, y);
  }
  STRATA_CUDA_CHECK_LAUNCH();
}

template <class W, bool Swiglu>
void launch_typed(const void* w, int n, int k, const float* x, int rows, float* y, cudaStream_t stream) {
  // The tile only decides how many rows share a weight load; each row's arithmetic is the same in all of them.
  if (rows <= 1) return launch_tile<W, 1, Swiglu>(w, n, k, x, rows, y, stream);
  if (rows <= 2) return launch_tile<W, 2, Swiglu>(w, n, k, x, rows, y, stream);
  if (rows <= 4) return launch_tile<W, 4, Swiglu>(w, n, k, x, rows, y, stream);
  if (rows <= 8) return launch_tile<W, 8, Swiglu>(w, n, k, x, rows, y, stream);
  return launch_tile<W, kMaxTile, Swiglu>(w, n, k, x, rows, y, stream);
}

template <bool Swiglu>
void launch_checked(const void* w, WType t, int n, int k, const float* x, int rows, float* y, cudaStream_t stream) {
  if (rows <= 0 || n <= 0) return;
  const int vec = t == WType::BF16 ? 8 : 4;
  if (k % vec != 0)
    throw Error("cuda matvec: inner dimension " + std::to_string(k) + " is not a multiple of " +
                std::to_string(vec) + " (16-byte weight loads)");
  if (t == WType::BF16)
    launch_typed<__nv_bfloat16, Swiglu>(w, n, k, x, rows, y, stream);
  else
    launch_typed<float, Swiglu>(w, n, k, x, rows, y, stream);
}

}  // namespace

int matvec_variant() {
  if (g_variant < 0) {
    const char* v = std::getenv("STRATA_MATVEC_LOAD");
    g_variant = v && v[0] >= '1' && v[0] <= '3' && !v[1] ? v[0] - '0' : 0;
  }
  return g_variant;
}

void set_matvec_variant(int v) { g_variant = v >= 0 && v <= 3 ? v : 0; }

void launch_matvec(const void* w, WType t, int n, int k, const float* x, int rows, float* y, cudaStream_t stream) {
  launch_checked<false>(w, t, n, k, x, rows, y, stream);
}

void launch_matvec_swiglu(const void* w, WType t, int ff, int k, const float* x, int rows, float* act,
                          cudaStream_t stream) {
  launch_checked<true>(w, t, ff, k, x, rows, act, stream);
}

}  // namespace cuda
}  // namespace strata
