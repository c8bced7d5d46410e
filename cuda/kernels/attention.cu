// Attention for every row of a window, decode rows and prompt-chunk rows alike (launch_attention in
// kernels.hpp). A block takes one query tile (up to kAttnQueryTile rows of one slot at consecutive
// positions), one head and one split of kAttnSplit positions; K/V tiles of kAttnTile positions are loaded
// into shared memory once and used by every row of the tile. A second kernel merges the splits of each row.
//
// Why the result of a row never depends on the window: tile and split boundaries sit at fixed multiples of
// kAttnTile / kAttnSplit positions; a row only ever reads positions <= its own (causal), its running max / sum
// / accumulator advance only on tiles holding such positions, every sum runs in position order and every dot
// product in an order fixed by head_dim. Other rows in the same query tile change which blocks load a K/V
// tile, not any number a row computes, so a verify window of T rows gives the bits of T single-row windows.
#include <cuda_bf16.h>

#include "cuda/cuda_check.hpp"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/kernels.hpp"
#include "cuda/kernels/kv_access.cuh"
#include "cuda/kernels/launch.cuh"

namespace strata {
namespace cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kQT = kAttnQueryTile;
constexpr int kP = kAttnTile;
constexpr int kMaxHeadDim = 256;
constexpr int kDimsPerThread = kMaxHeadDim / kThreads;
constexpr int kKPad = 4;
static_assert(kAttnSplit % kAttnTile == 0, "tiles must not straddle split boundaries");
static_assert((kAttnTile * 4) % kThreads == 0, "score lanes must fill whole warps on every iteration");

struct Smem {
  float* q;     // [kQT][hd]
  float* k;     // [kP][hd + 4]  (padded: the 32 lanes scoring 8 positions x 4 quarters hit 32 banks)
  float* v;     // [kP][hd]
  float* p;     // [kQT][kP] scores, then probabilities
  float* m;     // [kQT] running max
  float* l;     // [kQT] running sum
  float* corr;  // [kQT] rescale of the accumulator for this tile
  int* nvalid;  // [kQT] positions of this tile the row may read
};

__device__ Smem carve(float* base, int hd) {
  Smem s;
  s.q = base;
  s.k = s.q + kQT * hd;
  s.v = s.k + kP * (hd + kKPad);
  s.p = s.v + kP * hd;
  s.m = s.p + kQT * kP;
  s.l = s.m + kQT;
  s.corr = s.l + kQT;
  s.nvalid = reinterpret_cast<int*>(s.corr + kQT);
  return s;
}

__global__ void __launch_bounds__(kThreads) attention_partial(AttentionParams a) {
  pdl_wait();
  pdl_launch_dependents();
  extern __shared__ __align__(16) float smem_raw[];
  const int tile = blockIdx.z;
  if (tile >= *a.n_tiles) return;
  const int split = blockIdx.x, h = blockIdx.y;
  const int hd = a.head_dim;
  const int g = h / (a.n_heads / a.n_kv_heads);
  const int row0 = a.tile_first[tile], nq = a.tile_rows[tile];
  const int p0 = a.pos[row0], plast = p0 + nq - 1;
  const int s_begin = split * kAttnSplit;
  if (s_begin > plast) return;
  const int s_end = min(s_begin + kAttnSplit, plast + 1);
  const int slot = a.slot[row0];
  Smem s = carve(smem_raw, hd);
  const int tid = threadIdx.x;

  for (int i = tid; i < nq * hd; i += kThreads) {
    const int r = i / hd, d = i % hd;
    s.q[r * hd + d] = a.qkv[size_t(row0 + r) * a.qkv_stride + size_t(h) * hd + d];
  }
  if (tid < kQT) {
    s.m[tid] = -INFINITY;
    s.l[tid] = 0.0f;
  }
  float acc[kQT][kDimsPerThread];
#pragma unroll
  for (int r = 0; r < kQT; ++r)
#pragma unroll
    for (int e = 0; e < kDimsPerThread; ++e) acc[r][e] = 0.0f;

  // A tile may span blocks of the slot's table: each position's cell is looked up on its own (kv_row).
  const float* kb = a.kv.k;
  const float* vb = a.kv.v;
  const size_t head_off = size_t(g) * hd;
  for (int t0 = s_begin; t0 < s_end; t0 += kP) {
    const int np = min(kP, s_end - t0);
    __syncthreads();  // the previous tile's readers are done
    if (hd % 4 == 0) {  // 16-byte loads: head_dim, kv_dim and every cell offset are multiples of 4 floats
      const int hd4 = hd / 4;
      for (int i = tid; i < np * hd4; i += kThreads) {
        const int j = i / hd4, d = (i % hd4) * 4;
        const float4 kv4 = *reinterpret_cast<const float4*>(kv_row(kb, a.kv, slot, t0 + j) + head_off + d);
        const float4 vv4 = *reinterpret_cast<const float4*>(kv_row(vb, a.kv, slot, t0 + j) + head_off + d);
        *reinterpret_cast<float4*>(s.k + j * (hd + kKPad) + d) = kv4;
        *reinterpret_cast<float4*>(s.v + j * hd + d) = vv4;
      }
    } else {
      for (int i = tid; i < np * hd; i += kThreads) {
        const int j = i / hd, d = i % hd;
        s.k[j * (hd + kKPad) + d] = kv_row(kb, a.kv, slot, t0 + j)[head_off + d];
        s.v[j * hd + d] = kv_row(vb, a.kv, slot, t0 + j)[head_off + d];
      }
    }
    __syncthreads();
    // Each score is four quarter dot products (dimensions q, q + 4, q + 8, ... in order) held by four adjacent
    // lanes, then ((q0 + q1) + (q2 + q3)) by two butterflies: an order fixed by head_dim alone. nq * kP * 4 is
    // a multiple of the block size, so every lane runs the same iterations and the shuffles are warp-wide.
    for (int i = tid; i < nq * kP * 4; i += kThreads) {
      const int quarter = i & 3, item = i >> 2;
      const int r = item / kP, j = item % kP;
      const bool valid = j < np && t0 + j <= p0 + r;
      float part = 0.0f;
      if (valid) {
        const float* qr = s.q + r * hd;
        const float* kj = s.k + j * (hd + kKPad);
        for (int d = quarter; d < hd; d += 4) part = __fmaf_rn(qr[d], kj[d], part);
      }
      part = __fadd_rn(part, __shfl_xor_sync(0xffffffffu, part, 1));
      part = __fadd_rn(part, __shfl_xor_sync(0xffffffffu, part, 2));
      if (quarter == 0) s.p[r * kP + j] = valid ? __fmul_rn(part, a.scale) : -INFINITY;
    }
    __syncthreads();
    if (tid < nq) {
      const int r = tid;
      const int nv = min(kP, p0 + r - t0 + 1);  // <= 0: this tile is past the row's position
      s.nvalid[r] = nv;
      if (nv > 0) {
        float tmax = -INFINITY;
        for (int j = 0; j < nv; ++j) tmax = fmaxf(tmax, s.p[r * kP + j]);
        const float m_old = s.m[r];
        const float m_new = fmaxf(m_old, tmax);
        const float c = expf(m_old - m_new);  // 0 on the row's first tile (m_old = -inf)
        float sum = 0.0f;
        for (int j = 0; j < nv; ++j) {
          const float e = expf(s.p[r * kP + j] - m_new);
          s.p[r * kP + j] = e;
          sum = __fadd_rn(sum, e);
        }
        s.l[r] = __fadd_rn(__fmul_rn(s.l[r], c), sum);
        s.m[r] = m_new;
        s.corr[r] = c;
      }
    }
    __syncthreads();
#pragma unroll
    for (int e = 0; e < kDimsPerThread; ++e) {
      const int d = tid + e * kThreads;
      if (d < hd) {
#pragma unroll
        for (int r = 0; r < kQT; ++r) {
          if (r < nq) {
            const int nv = s.nvalid[r];
            if (nv > 0) {
              float o = __fmul_rn(acc[r][e], s.corr[r]);
              for (int j = 0; j < nv; ++j) o = __fmaf_rn(s.p[r * kP + j], s.v[j * hd + d], o);
              acc[r][e] = o;
            }
          }
        }
      }
    }
  }
  __syncthreads();
#pragma unroll
  for (int r = 0; r < kQT; ++r) {
    if (r < nq) {
      const size_t cell = (size_t(row0 + r) * a.n_heads + h) * a.max_splits + split;
#pragma unroll
      for (int e = 0; e < kDimsPerThread; ++e) {
        const int d = tid + e * kThreads;
        if (d < hd) a.part_acc[cell * hd + d] = acc[r][e];
      }
      if (tid == 0) {
        a.part_ml[cell * 2] = s.m[r];
        a.part_ml[cell * 2 + 1] = s.l[r];
      }
    }
  }
}

// Merges a row's splits in split order: weights exp(m_s - M) against the largest split max M.
__global__ void __launch_bounds__(kThreads) attention_combine(AttentionParams a) {
  pdl_wait();
  pdl_launch_dependents();
  extern __shared__ float w[];  // [max_splits], then the total
  const int r = blockIdx.x, h = blockIdx.y, hd = a.head_dim;
  const int ns = a.pos[r] / kAttnSplit + 1;
  const size_t cell0 = (size_t(r) * a.n_heads + h) * a.max_splits;
  if (threadIdx.x == 0) {
    float M = -INFINITY;
    for (int sp = 0; sp < ns; ++sp) M = fmaxf(M, a.part_ml[(cell0 + sp) * 2]);
    float L = 0.0f;
    for (int sp = 0; sp < ns; ++sp) {
      w[sp] = expf(a.part_ml[(cell0 + sp) * 2] - M);
      L = __fmaf_rn(a.part_ml[(cell0 + sp) * 2 + 1], w[sp], L);
    }
    w[a.max_splits] = L;
  }
  __syncthreads();
  const float L = w[a.max_splits];
  __nv_bfloat16* out16 = static_cast<__nv_bfloat16*>(a.out16);
  const int q_dim = a.n_heads * hd;
  for (int d = threadIdx.x; d < hd; d += kThreads) {
    float o = 0.0f;
    for (int sp = 0; sp < ns; ++sp) o = __fmaf_rn(a.part_acc[(cell0 + sp) * hd + d], w[sp], o);
    const float v = __fdiv_rn(o, L);
    a.out[size_t(r) * q_dim + size_t(h) * hd + d] = v;
    if (out16) out16[size_t(r) * q_dim + size_t(h) * hd + d] = to_bf16(v);
  }
}

}  // namespace

size_t attention_smem_bytes(int hd) {
  return sizeof(float) * (size_t(kQT) * hd + size_t(kP) * (hd + kKPad) + size_t(kP) * hd + size_t(kQT) * kP + 3 * kQT) +
         sizeof(int) * kQT;
}

void configure_attention(int head_dim) {
  const size_t smem = attention_smem_bytes(head_dim);
  if (smem > 48 * 1024)
    STRATA_CUDA_CHECK(cudaFuncSetAttribute(attention_partial, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
}

void launch_attention(const AttentionParams& a, cudaStream_t stream) {
  if (a.rows <= 0) return;
  if (a.head_dim > kMaxHeadDim || a.n_kv_heads <= 0 || a.n_heads % a.n_kv_heads != 0)
    throw Error("cuda attention: head_dim " + std::to_string(a.head_dim) + " (max " + std::to_string(kMaxHeadDim) +
                ") or heads " + std::to_string(a.n_heads) + "/" + std::to_string(a.n_kv_heads) + " unsupported");
  const size_t smem = attention_smem_bytes(a.head_dim);
  const dim3 grid(a.grid_splits, a.n_heads, a.max_tiles);
  launch_kernel(attention_partial, grid, kThreads, smem, stream, a);
  STRATA_CUDA_CHECK_LAUNCH();
  const size_t csmem = sizeof(float) * (size_t(a.max_splits) + 1);
  launch_kernel(attention_combine, dim3(a.rows, a.n_heads), kThreads, csmem, stream, a);
  STRATA_CUDA_CHECK_LAUNCH();
}

}  // namespace cuda
}  // namespace strata
