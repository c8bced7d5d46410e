// The skinny matmul for the windows whose rows must keep their single-row bits: decode, verify windows, and
// every window under --batch-invariant (launch_matvec in kernels.hpp). Decode is memory-bound: the weights
// should stream through once per window at the HBM bandwidth, whatever the number of rows, so bf16 weights go
// through the tensor cores (mma.sync m16n8k16): a warp holds a 16 x 32 weight tile in registers and applies it
// to 16 rows of the window (64 for the LM head's 8-warp blocks; larger windows run several such blocks, the
// weights then coming from L2), in mma column tiles of 8 rows, the rows' fp32 activations split
// into a bf16 high part and a bf16 remainder (x = hi + lo to 16 significant bits) so the products keep close
// to fp32 accuracy. fp32 weights (f16/f32 checkpoints) take the CUDA-core kernel at the end of the file.
//
// Why a row's bits do not depend on the window (so a verify window of T rows gives the bits of T single-row
// windows, and a slot's tokens do not depend on who else is in the batch): each output element is one
// accumulator column of the mma, which sums only its own row's products; the inner dimension is cut into
// chunks of 32, warp w of the block's KW takes chunks w, w + KW, w + 2 KW, ... in that order (hi part, then lo,
// for each of the chunk's two k16 steps), and the KW warp sums are added in warp order. KW is fixed by the
// matrix's shape (launch_bf16), so all of that is fixed by the matrix alone.
// Rows beyond the window, outputs beyond n and the tail of k past its last multiple of 8 are zeros in the
// fragments: they contribute exact zeros to nobody else's sums.
#include <cuda_bf16.h>

#include <limits>

#include "cuda/cuda_check.hpp"
#include "cuda/env.hpp"
#include "cuda/kernels/attention_common.cuh"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/kernels.hpp"
#include "cuda/kernels/launch.cuh"
#include "cuda/kernels/qkv_rope.cuh"

namespace strata {
namespace cuda {
namespace {

constexpr int kWarps = 8;     // warps per block of the fp32-weight kernel
constexpr int kChunk = 32;    // inner-dimension elements per warp step: 8 per lane of a quad

// Splits 4 consecutive activations into bf16 pairs: hi = rn(x), lo = rn(x - hi).
__device__ __forceinline__ void split4(const float4& v, uint32_t& h0, uint32_t& h1, uint32_t& l0, uint32_t& l1) {
  split_bf16x2(v.x, v.y, h0, l0);
  split_bf16x2(v.z, v.w, h1, l1);
}

__device__ __forceinline__ void mma_bf16(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                         uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// A block's shared memory (mma_matvec_block): the warps' sums, Norm's staged partial sums of squares, the
// residual's y tile (Norm: row 0 holds each row's 1 / rms).
template <int KW, int MT, int NT, bool Norm>
struct MatvecSmem {
  static constexpr int kRows = 8 * NT;            // the block's rows
  static constexpr int kSsCap = Norm ? 4096 : 1;  // Norm: partial sums of squares staged (floats)
  float red[KW][MT * NT * 4][32];
  float fold_ss[kSsCap];
  float fold_rows[16][kRows];
};

// Rope: a block's head of each of its 8 rows in shared memory for the RoPE step, and the rows' 1 / rms; with
// early lookups (MatvecFold::rope_early) also each row's cos / sin table rows and the head's KV cell.
template <int MT>
struct RopeHeads {
  float v[8][16 * MT];
  float inv[8];
  float cs[8][8 * MT], sn[8][8 * MT];
  long long cell[8];
};

// The early lookups for the head of rows r0 .. r0 + 7 (positions, slots and block tables come from the host
// before the graph runs; the tables never change), so the epilogue's rotation and stores wait on none of them.
template <int MT>
__device__ __forceinline__ void rope_lookups(const QkvRopeParams& p, RopeHeads<MT>& hs, int head, int rows, int r0,
                                             int nthreads) {
  constexpr int half = 8 * MT;
  const int nr = min(8, rows - r0);
  const bool rotated = head < p.n_heads + p.n_kv_heads;
  if (rotated)
    for (int e = threadIdx.x; e < nr * half; e += nthreads) {
      const int t = e / half, i = e - t * half;
      const size_t at = size_t(p.pos[r0 + t]) * size_t(half) + size_t(i);
      attn::cp_async4(&hs.cs[t][i], p.cos + at);  // no registers held: the block's cp_async_wait<0>() takes them
      attn::cp_async4(&hs.sn[t][i], p.sin + at);
    }
  if (head >= p.n_heads && int(threadIdx.x) < nr)
    hs.cell[threadIdx.x] = static_cast<long long>(kv_head_at(p, head, p.slot[r0 + threadIdx.x], p.pos[r0 + threadIdx.x]));
}

// The RoPE step in the QKV projection's epilogue (launch_matvec_qkv_rope): the block's 16 MT outputs are one
// head (j0 = its first row of q | k | v) of up to 8 window rows. Each sum is formed as the Store epilogue
// forms it (warp sums in order, times the row's 1 / rms with a folded norm) and the bias added as
// qkv_rope.cuh's prepare_heads adds it; the head's norm and rotation are norm_rotate_heads, and q goes back
// into the qkv rows, k and v into the row's KV cell: launch_matvec then launch_qkv_rope, to the bit.
template <int KW, int MT, bool Norm>
__device__ __forceinline__ void rope_epilogue(const float (&red)[KW][MT * 4][32], const float* inv_rms,
                                              const QkvRopeParams& p, RopeHeads<MT>& hs, float* qkv, int n, int rows,
                                              int r0, int j0, bool early) {
  constexpr int HD = 16 * MT;
  const int nr = min(8, rows - r0);
  for (int v = threadIdx.x; v < MT * 4 * 32; v += KW * 32) {
    const int ln = v & 31, e = (v >> 5) & 3, m = v >> 7;
    const int d = 16 * m + (ln >> 2) + 8 * (e >> 1), rr = 2 * (ln & 3) + (e & 1);
    float s = red[0][m * 4 + e][ln];
#pragma unroll
    for (int wi = 1; wi < KW; ++wi) s = __fadd_rn(s, red[wi][m * 4 + e][ln]);
    if (Norm) s = __fmul_rn(s, inv_rms[rr]);
    hs.v[rr][d] = p.bias ? __fadd_rn(s, p.bias[j0 + d]) : s;
  }
  __syncthreads();
  const int head = j0 / HD;
  const bool is_q = head < p.n_heads, is_k = !is_q && head < p.n_heads + p.n_kv_heads;
  const int half = HD / 2;
  norm_rotate_heads(nr, is_q ? p.q_norm : is_k ? p.k_norm : nullptr, p.eps, is_q || is_k,
                    [&](int t) {
                      if (early) return CosSin{hs.cs[t], hs.sn[t]};
                      const size_t at = size_t(p.pos[r0 + t]) * size_t(half);
                      return CosSin{p.cos + at, p.sin + at};
                    },
                    HD, &hs.v[0][0], HD, hs.inv, int(threadIdx.x), KW * 32, [] { __syncthreads(); });
  for (int e = threadIdx.x; e < nr * HD; e += KW * 32) {
    const int t = e / HD, d = e - t * HD, r = r0 + t;
    if (is_q) {
      qkv[size_t(r) * n + j0 + d] = hs.v[t][d];
    } else {
      const size_t cell = early ? size_t(hs.cell[t]) : kv_head_at(p, head, p.slot[r], p.pos[r]);
      store_kv(p.kv, is_k ? p.kv.k : p.kv.v, cell + size_t(d), hs.v[t][d]);
    }
  }
}

// Fragment layout (PTX m16n8k16): lane = 4 g + t. The inner dimension is permuted inside each chunk of 32 so
// that every lane loads 8 consecutive elements (16 bytes) of a weight row and of an activation row: lane (g, t)
// holds physical k = 8t .. 8t + 7 of weight rows g and g + 8 and of activation row (column) g; the mma's
// logical k 2t, 2t + 1 / 2t + 8, 2t + 9 of step s are physical 8t + 4s + {0, 1} / {2, 3}. A and B use the same
// permutation, so the dot product is the same sum.
//
// A block of KW warps computes MT tiles of 16 outputs (with Swiglu: tile 0 the gate rows j0 .., tile 1 their up
// rows n + j0 ..) for NT column tiles of 8 rows starting at row r0 = bx * 8 NT. U chunks' weight loads
// are in flight per warp before the first is used. The first U chunks' weights are loaded before pdl_wait():
// weights never depend on the previous kernel, so with programmatic dependent launch their fetch overlaps the
// tail of the kernel before (the norm, RoPE or attention kernels that run between matmuls).
//
// Block (bx, by) of mma_matvec_kernel's grid, which has out_parts (ceil(n / outputs a block)) blocks in y: row
// tile bx, output tile by. A block past the outputs returns after pdl_wait().
template <int KW, int MT, int NT, int U, bool Swiglu, bool Norm, bool Rope = false>
__device__ __forceinline__ void mma_matvec_block(const __nv_bfloat16* __restrict__ w, int n, int k,
                                                 const float* __restrict__ x, int rows, float* __restrict__ y,
                                                 const MatvecFold& fold, int bx, int by, int out_parts,
                                                 MatvecSmem<KW, MT, NT, Norm>& sm, const QkvRopeParams* rp = nullptr,
                                                 RopeHeads<MT>* heads = nullptr) {
  auto& red = sm.red;
  constexpr int kRows = 8 * NT;
  constexpr int kSsCap = MatvecSmem<KW, MT, NT, Norm>::kSsCap;
  float* const fold_ss = sm.fold_ss;
  auto& fold_rows = sm.fold_rows;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int j0 = by * (Swiglu ? 16 : 16 * MT);
  const int r0 = bx * 8 * NT;
  const int nchunks = (k + kChunk - 1) / kChunk;

  // This lane's two weight rows per output tile (clamped to row j0 when past n; their loads are skipped).
  const __nv_bfloat16* wa[MT];
  const __nv_bfloat16* wb[MT];
  bool la[MT], lb[MT];
#pragma unroll
  for (int m = 0; m < MT; ++m) {
    const int base = Swiglu ? j0 : j0 + 16 * m;
    const size_t off = Swiglu && m == 1 ? size_t(n) : 0;
    la[m] = base + g < n;
    lb[m] = base + g + 8 < n;
    wa[m] = w + (off + size_t(la[m] ? base + g : j0)) * k + 8 * t;
    wb[m] = w + (off + size_t(lb[m] ? base + g + 8 : j0)) * k + 8 * t;
  }
  uint4 ra[U][MT], rb[U][MT];
  auto load_weights = [&](int c0) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int kk = (c0 + u * KW) * kChunk;
      const bool in_k = kk + 8 * t + 8 <= k;  // k is a multiple of 8: a lane's 8 elements are all in or all out
#pragma unroll
      for (int m = 0; m < MT; ++m) {
        ra[u][m] = in_k && la[m] ? load_stream(wa[m] + kk) : make_uint4(0, 0, 0, 0);
        rb[u][m] = in_k && lb[m] ? load_stream(wb[m] + kk) : make_uint4(0, 0, 0, 0);
      }
    }
  };
  // The first weights are asked for before the wait, the dependents triggered after it (pdl_mode 0). Modes 1
  // (weights after the wait) and 2 (trigger first) are measurement switches (STRATA_MATVEC_PDL_MODE), and the
  // branches they add are load-bearing: with the loads unconditionally ahead of griddepcontrol.wait, the
  // compiled kernel fetched them only after it, as mode 1 does (strata-tiny's windows 0.192-0.201 ms against
  // 0.161-0.171 with this form; docs/PERFORMANCE.md runs 102-103).
  if (fold.pdl_mode == 2) pdl_launch_dependents();
  if (fold.pdl_mode != 1) load_weights(warp);
  // Rope at head_dim 64 (strata-tiny and its draft): the tables and cells looked up now. At 128 the lookups
  // made the kernel spill, so they stay in the epilogue.
  const bool rope_early = Rope && MT == 4 && fold.rope_early;
  if constexpr (Rope) {
    if (rope_early && j0 < n) rope_lookups<MT>(*rp, *heads, j0 / (16 * MT), rows, r0, KW * 32);
  }
  pdl_wait();  // x is the previous kernel's output
  if (fold.pdl_mode == 1) load_weights(warp);
  if (fold.pdl_mode != 2) pdl_launch_dependents();
  if (j0 >= n) return;  // the same for the whole block

  // What the epilogue needs besides the sums goes out now, into shared memory (cp.async: no registers held
  // over the main loop), each word copied by the thread that reads it, so no barrier is added: Norm's partial
  // sums of squares (warp w copies and later adds those of rows w, w + KW, ..., when they fit), the
  // residual's y tile (in the final loop's layout, below).
  // Input row r of the window is x_rows[r] of x (and of ss_in) when the caller gathers rows.
  auto src = [&](int r) -> size_t { return size_t(fold.x_rows ? fold.x_rows[r] : r); };
  const int parts = (k + 15) / 16;
  const bool ss_staged = Norm && kRows * parts <= kSsCap;
  if (ss_staged)
    for (int i = warp; i < kRows; i += KW)
      if (r0 + i < rows)
        for (int p = lane; p < parts; p += 32)
          attn::cp_async4(&fold_ss[i * parts + p], fold.ss_in + src(r0 + i) * parts + p);
  constexpr int kPairs = NT * 64;  // residual: (q, e & 1, lane) pairs of outputs j, j + 8 of one row
  // The residual's old row r: y's own, or res_table's row of r's token.
  auto res_row = [&](int r) -> const float* {
    if (!fold.res_table) return y + size_t(r) * n;
    const int tok = r < fold.res_feed.n ? fold.res_feed.picks[r] : fold.res_tokens[r];
    return fold.res_table + size_t(tok) * n;
  };
  if (!Swiglu && fold.ss_out) {
    for (int u = threadIdx.x; u < kPairs; u += KW * 32) {
      const int ln = u & 31, rr = 8 * (u >> 6) + 2 * (ln & 3) + ((u >> 5) & 1);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int jj = (ln >> 2) + 8 * h;
        if (r0 + rr < rows && j0 + jj < n) attn::cp_async4(&fold_rows[jj][rr], res_row(r0 + rr) + j0 + jj);
      }
    }
    // A chained step's picks are kept once, by the first output tile's blocks.
    if (fold.res_table && fold.res_feed.kept && by == 0)
      for (int i = threadIdx.x; i < kRows; i += KW * 32)
        if (r0 + i < fold.res_feed.n && r0 + i < rows) fold.res_feed.kept[r0 + i] = fold.res_feed.picks[r0 + i];
  }
  attn::cp_async_commit();

  const float* xr[NT];
  bool lx[NT];
#pragma unroll
  for (int q = 0; q < NT; ++q) {
    const int r = r0 + 8 * q + g;
    lx[q] = r < rows;
    xr[q] = x + (lx[q] ? src(r) : 0) * k + 8 * t;
  }

  float acc[MT][NT][4];
#pragma unroll
  for (int m = 0; m < MT; ++m)
#pragma unroll
    for (int q = 0; q < NT; ++q)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[m][q][e] = 0.0f;

  for (int c0 = warp; c0 < nchunks; c0 += KW * U) {
    if (c0 != warp) load_weights(c0);
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int c = c0 + u * KW;
      if (c >= nchunks) break;  // uniform over the warp: every lane of it runs every mma below
      const int kk = c * kChunk;
      const bool in_k = kk + 8 * t + 8 <= k;
#pragma unroll
      for (int q = 0; q < NT; ++q) {
        float4 x0 = make_float4(0.f, 0.f, 0.f, 0.f), x1 = x0;
        if (in_k && lx[q]) {
          x0 = __ldg(reinterpret_cast<const float4*>(xr[q] + kk));
          x1 = __ldg(reinterpret_cast<const float4*>(xr[q] + kk + 4));
        }
        uint32_t h[4], l[4];
        split4(x0, h[0], h[1], l[0], l[1]);
        split4(x1, h[2], h[3], l[2], l[3]);
#pragma unroll
        for (int m = 0; m < MT; ++m) {
          const uint4 A = ra[u][m], B = rb[u][m];
          mma_bf16(acc[m][q], A.x, B.x, A.y, B.y, h[0], h[1]);  // step 0: physical 8t + 0..3
          mma_bf16(acc[m][q], A.x, B.x, A.y, B.y, l[0], l[1]);
          mma_bf16(acc[m][q], A.z, B.z, A.w, B.w, h[2], h[3]);  // step 1: physical 8t + 4..7
          mma_bf16(acc[m][q], A.z, B.z, A.w, B.w, l[2], l[3]);
        }
      }
    }
  }

  // Norm: each row's 1 / sqrt(mean(x^2) + eps) from the residual launch's partial sums of squares, a warp a
  // row: lane l adds parts l, l + 32, ... in order (the words it staged itself), then the warp butterfly, an
  // order fixed by k alone. The barrier below publishes it with the warp sums.
  attn::cp_async_wait<0>();
  if constexpr (Norm) {
    for (int i = warp; i < kRows; i += KW) {
      const int r = r0 + i;
      float ss = 0.0f;
      if (r < rows)
        for (int p = lane; p < parts; p += 32)
          ss = __fadd_rn(ss, ss_staged ? fold_ss[i * parts + p] : fold.ss_in[src(r) * parts + p]);
      ss = warp_sum(ss);
      if (lane == 0) fold_rows[0][i] = rms_inv(ss, k, fold.eps);
    }
  }
#pragma unroll
  for (int m = 0; m < MT; ++m)
#pragma unroll
    for (int q = 0; q < NT; ++q)
#pragma unroll
      for (int e = 0; e < 4; ++e) red[warp][(m * NT + q) * 4 + e][lane] = acc[m][q][e];
  __syncthreads();
  if constexpr (Norm) {  // each row's normed input, by the first output tile's blocks
    if (fold.x_normed_out && by == 0)
      for (int e = threadIdx.x; e < kRows * k; e += KW * 32) {
        const int i = e / k, j = e - i * k;
        if (r0 + i < rows)
          fold.x_normed_out[size_t(r0 + i) * k + j] = __fmul_rn(x[src(r0 + i) * k + j], fold_rows[0][i]);
      }
  }
  if constexpr (Rope) {
    rope_epilogue<KW, MT, Norm>(red, fold_rows[0], *rp, *heads, y, n, rows, r0, j0, rope_early);
    return;
  }
  // The residual: y = y + (s + bias), rounded as launch_add_rmsnorm adds; a thread takes outputs j and j + 8 of
  // one row (value ((q * 4 + e) * 32 + lane) below, e and e + 2), so the row's sum of squares over the block's
  // 16 outputs is its two squares, then a butterfly over the lanes of the row's 8 output pairs: at
  // ss_out[r][blockIdx.y] (gridDim.y = ceil(n / 16) parts a row).
  if (!Swiglu && fold.ss_out) {
    for (int u = threadIdx.x; u < kPairs; u += KW * 32) {
      const int ln = u & 31, el = (u >> 5) & 1, q = u >> 6;
      const int r = r0 + 8 * q + 2 * (ln & 3) + el;
      float sq = 0.0f;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int e = el + 2 * h, j = j0 + (ln >> 2) + 8 * h;
        float s = red[0][q * 4 + e][ln];
#pragma unroll
        for (int wi = 1; wi < KW; ++wi) s = __fadd_rn(s, red[wi][q * 4 + e][ln]);
        if (j < n && r < rows) {
          const float val = __fadd_rn(fold_rows[j - j0][r - r0], fold.bias ? __fadd_rn(s, fold.bias[j]) : s);
          y[size_t(r) * n + j] = val;
          if (fold.xn_out) fold.xn_out[size_t(r) * n + j] = __fmul_rn(fold.next_norm[j], val);
          sq = __fmaf_rn(val, val, sq);
        }
      }
      sq = __fadd_rn(sq, __shfl_xor_sync(0xffffffffu, sq, 4));
      sq = __fadd_rn(sq, __shfl_xor_sync(0xffffffffu, sq, 8));
      sq = __fadd_rn(sq, __shfl_xor_sync(0xffffffffu, sq, 16));
      if ((ln >> 2) == 0 && r < rows) fold.ss_out[size_t(r) * out_parts + by] = sq;
    }
    return;
  }
  // Value v = ((m * NT + q) * 4 + e) * 32 + lane is output j0 + 16 m + g + 8 (e >> 1), row r0 + 8 q + 2 t + (e & 1).
  constexpr int kOut = (Swiglu ? 1 : MT) * NT * 4 * 32;
  for (int v = threadIdx.x; v < kOut; v += KW * 32) {
    const int ln = v & 31, e = (v >> 5) & 3, mq = v >> 7;
    const int m = mq / NT, q = mq % NT;
    const int j = j0 + 16 * m + (ln >> 2) + 8 * (e >> 1);
    const int r = r0 + 8 * q + 2 * (ln & 3) + (e & 1);
    float s = red[0][mq * 4 + e][ln];
#pragma unroll
    for (int wi = 1; wi < KW; ++wi) s = __fadd_rn(s, red[wi][mq * 4 + e][ln]);
    const float inv = Norm ? fold_rows[0][r - r0] : 1.0f;
    if (Norm) s = __fmul_rn(s, inv);
    if (Swiglu) {
      float up = red[0][(NT + q) * 4 + e][ln];
#pragma unroll
      for (int wi = 1; wi < KW; ++wi) up = __fadd_rn(up, red[wi][(NT + q) * 4 + e][ln]);
      if (Norm) up = __fmul_rn(up, inv);
      if (j < n && r < rows) y[size_t(r) * n + j] = __fmul_rn(__fdiv_rn(s, __fadd_rn(1.0f, expf(-s))), up);
    } else {
      if (j < n && r < rows) y[size_t(r) * n + j] = s;
    }
  }
}

template <int KW, int MT, int NT, int U, bool Swiglu, bool Norm>
__global__ void __launch_bounds__(KW * 32) mma_matvec_kernel(const __nv_bfloat16* __restrict__ w, int n, int k,
                                                             const float* __restrict__ x, int rows,
                                                             float* __restrict__ y, MatvecFold fold) {
  __shared__ MatvecSmem<KW, MT, NT, Norm> sm;
  mma_matvec_block<KW, MT, NT, U, Swiglu, Norm>(w, n, k, x, rows, y, fold, blockIdx.x, blockIdx.y, gridDim.y, sm);
}

template <int KW, int MT, int NT, int U, bool Swiglu>
void launch_mma(const void* w, int n, int k, const float* x, int rows, float* y, const MatvecFold& f,
                cudaStream_t stream) {
  const int outs_per_block = Swiglu ? 16 : 16 * MT;
  const dim3 grid((rows + 8 * NT - 1) / (8 * NT), (n + outs_per_block - 1) / outs_per_block);
  if (f.ss_in)
    launch_kernel(mma_matvec_kernel<KW, MT, NT, U, Swiglu, true>, grid, KW * 32, 0, stream,
                  static_cast<const __nv_bfloat16*>(w), n, k, x, rows, y, f);
  else
    launch_kernel(mma_matvec_kernel<KW, MT, NT, U, Swiglu, false>, grid, KW * 32, 0, stream,
                  static_cast<const __nv_bfloat16*>(w), n, k, x, rows, y, f);
  STRATA_CUDA_CHECK_LAUNCH();
}

// The QKV projection with the RoPE step (launch_matvec_qkv_rope): a block is one head (MT = head_dim / 16
// output tiles) of 8 rows, its shared memory the matvec block's and the head's staging (dynamic: over the
// static 48 KB). The warps split k as launch_bf16 splits it for this matrix (KW 16), and each output's sum
// takes its chunks in the same order whatever MT and U are, so the sums are launch_matvec's.
template <int KW, int MT, bool Norm>
struct RopeBlockSmem {
  MatvecSmem<KW, MT, 1, Norm> mv;
  RopeHeads<MT> heads;
};

template <int KW, int MT, bool Norm>
__global__ void __launch_bounds__(KW * 32) mma_qkv_rope_kernel(const __nv_bfloat16* __restrict__ w, int n, int k,
                                                               const float* __restrict__ x, int rows,
                                                               float* __restrict__ qkv, MatvecFold fold,
                                                               QkvRopeParams p) {
  extern __shared__ __align__(16) unsigned char rope_smem[];
  auto& sm = *reinterpret_cast<RopeBlockSmem<KW, MT, Norm>*>(rope_smem);
  mma_matvec_block<KW, MT, 1, 8 / MT, false, Norm, true>(w, n, k, x, rows, qkv, fold, blockIdx.x, blockIdx.y,
                                                          gridDim.y, sm.mv, &p, &sm.heads);
}

constexpr int kRopeKw = 16;

template <int MT, bool Norm>
void launch_qkv_rope_mt(const void* w, int n, int k, const float* x, int rows, float* qkv, const MatvecFold& f,
                        const QkvRopeParams& p, cudaStream_t stream) {
  const dim3 grid((rows + 7) / 8, n / (16 * MT));
  launch_kernel(mma_qkv_rope_kernel<kRopeKw, MT, Norm>, grid, kRopeKw * 32, sizeof(RopeBlockSmem<kRopeKw, MT, Norm>),
                stream, static_cast<const __nv_bfloat16*>(w), n, k, x, rows, qkv, f, p);
  STRATA_CUDA_CHECK_LAUNCH();
}

template <int MT, bool Norm>
void configure_qkv_rope_mt() {
  STRATA_CUDA_CHECK(cudaFuncSetAttribute(mma_qkv_rope_kernel<kRopeKw, MT, Norm>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         int(sizeof(RopeBlockSmem<kRopeKw, MT, Norm>))));
}

// Column tiles only decide how many rows share one pass over the weights; a row's arithmetic is the same in
// all of them. Larger windows run blocks of 8 NT rows side by side (grid x, the fastest-varying index), so the
// weights come from L2 for all but the first of them. Only windows of more than 16 rows (batch-invariant mode,
// or a caller's gemm_min_rows above 17) use the wider tiles.
template <int KW, bool Swiglu>
void launch_bf16_kw(const void* w, int n, int k, const float* x, int rows, float* y, const MatvecFold& f,
                    cudaStream_t stream) {
  constexpr int MT = Swiglu ? 2 : 1;
  if constexpr (!Swiglu) {  // wider blocks on request (MatvecFold::out_tiles): the same sums, fewer blocks
    if (rows <= 8 && !f.ss_out && f.out_tiles == 4) return launch_mma<KW, 4, 1, 2, false>(w, n, k, x, rows, y, f, stream);
    if (rows <= 8 && !f.ss_out && f.out_tiles == 2) return launch_mma<KW, 2, 1, 4, false>(w, n, k, x, rows, y, f, stream);
  }
  if (rows <= 8) return launch_mma<KW, MT, 1, 8 / MT, Swiglu>(w, n, k, x, rows, y, f, stream);
  if constexpr (KW > 8 || Swiglu) {  // more column tiles would spill registers (or take one block per SM)
    return launch_mma<KW, MT, 2, 8 / MT, Swiglu>(w, n, k, x, rows, y, f, stream);
  } else {
    if (rows <= 16) return launch_mma<KW, MT, 2, 8, Swiglu>(w, n, k, x, rows, y, f, stream);
    if (rows <= 32) return launch_mma<KW, MT, 4, 4, Swiglu>(w, n, k, x, rows, y, f, stream);
    return launch_mma<KW, MT, 8, 2, Swiglu>(w, n, k, x, rows, y, f, stream);
  }
}

// How many warps split k is part of the order, so it is a function of the matrix alone: 16 for matrices of
// fewer than 65536 rows (the fused SwiGLU form counts its stacked gate and up rows), 8 for the LM head. 16
// warps keep more weight bytes in flight (and prefetched before griddepcontrol.wait); on the 8B shape they
// gave 4 % more batch-1 decode than 8 for matrices of 4096+ rows, while the LM head ran 3 % slower with them.
// STRATA_MATVEC_KW16_BELOW moves that threshold, for the kernel benchmark's comparisons only: it changes the
// bits, so a process must keep one value for its whole life (it is read once).
int kw16_below() {
  static const int v = env_int("STRATA_MATVEC_KW16_BELOW", std::numeric_limits<int>::min(),
                               std::numeric_limits<int>::max(), 65536);
  return v;
}

template <bool Swiglu>
void launch_bf16(const void* w, int n, int k, const float* x, int rows, float* y, const MatvecFold& f,
                 cudaStream_t stream) {
  const int stacked_rows = Swiglu ? 2 * n : n;
  if (stacked_rows < kw16_below()) return launch_bf16_kw<16, Swiglu>(w, n, k, x, rows, y, f, stream);
  return launch_bf16_kw<8, Swiglu>(w, n, k, x, rows, y, f, stream);
}

// ---- fp32 weights: CUDA cores -------------------------------------------------------------------------------
// A warp per output element, 16-byte weight loads, lane l accumulating vectors l, l + 32, ... in order with fp32
// FMAs, then the warp butterfly: an order fixed by k alone. Up to 8 rows share a weight load.
constexpr int kF32MaxTile = 8;

template <int RT, bool Swiglu>
__global__ void __launch_bounds__(kWarps * 32) f32_matvec_kernel(const float* __restrict__ w, int n, int k,
                                                                 const float* __restrict__ x, int rows,
                                                                 float* __restrict__ y) {
  pdl_wait();
  pdl_launch_dependents();
  const int lane = threadIdx.x & 31;
  const int j = blockIdx.x * kWarps + (threadIdx.x >> 5);
  if (j >= n) return;
  const int r0 = blockIdx.y * RT;
  const int nr = min(RT, rows - r0);
  const int nvec = k / 4;
  constexpr int NR = Swiglu ? 2 : 1;
  const float4* wrow[NR];
  wrow[0] = reinterpret_cast<const float4*>(w + size_t(j) * k);
  if (Swiglu) wrow[NR - 1] = reinterpret_cast<const float4*>(w + (size_t(n) + j) * k);
  float acc[NR][RT];
#pragma unroll
  for (int i = 0; i < NR; ++i)
#pragma unroll
    for (int r = 0; r < RT; ++r) acc[i][r] = 0.0f;
  for (int v = lane; v < nvec; v += 32) {
    float4 wv[NR];
#pragma unroll
    for (int i = 0; i < NR; ++i) wv[i] = __ldg(wrow[i] + v);
#pragma unroll
    for (int r = 0; r < RT; ++r) {
      if (r < nr) {
        const float4 xv = __ldg(reinterpret_cast<const float4*>(x + size_t(r0 + r) * k) + v);
#pragma unroll
        for (int i = 0; i < NR; ++i) {
          float a = acc[i][r];
          a = __fmaf_rn(wv[i].x, xv.x, a);
          a = __fmaf_rn(wv[i].y, xv.y, a);
          a = __fmaf_rn(wv[i].z, xv.z, a);
          a = __fmaf_rn(wv[i].w, xv.w, a);
          acc[i][r] = a;
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < RT; ++r) {
    const float gsum = warp_sum(acc[0][r]);
    if (!Swiglu) {
      if (lane == 0 && r < nr) y[size_t(r0 + r) * n + j] = gsum;
    } else {
      const float up = warp_sum(acc[NR - 1][r]);
      if (lane == 0 && r < nr) y[size_t(r0 + r) * n + j] = __fmul_rn(__fdiv_rn(gsum, __fadd_rn(1.0f, expf(-gsum))), up);
    }
  }
}

template <int RT, bool Swiglu>
void launch_f32_tile(const void* w, int n, int k, const float* x, int rows, float* y, cudaStream_t stream) {
  const dim3 grid((n + kWarps - 1) / kWarps, (rows + RT - 1) / RT);
  launch_kernel(f32_matvec_kernel<RT, Swiglu>, grid, kWarps * 32, 0, stream, static_cast<const float*>(w), n, k, x,
                rows, y);
  STRATA_CUDA_CHECK_LAUNCH();
}

template <bool Swiglu>
void launch_f32(const void* w, int n, int k, const float* x, int rows, float* y, cudaStream_t stream) {
  if (rows <= 1) return launch_f32_tile<1, Swiglu>(w, n, k, x, rows, y, stream);
  if (rows <= 2) return launch_f32_tile<2, Swiglu>(w, n, k, x, rows, y, stream);
  if (rows <= 4) return launch_f32_tile<4, Swiglu>(w, n, k, x, rows, y, stream);
  return launch_f32_tile<kF32MaxTile, Swiglu>(w, n, k, x, rows, y, stream);
}

template <bool Swiglu>
void launch_checked(const void* w, WType t, int n, int k, const float* x, int rows, float* y, const MatvecFold& f,
                    cudaStream_t stream) {
  if (rows <= 0 || n <= 0) return;
  const int vec = t == WType::BF16 ? 8 : 4;
  if (k % vec != 0)
    throw Error("cuda matvec: inner dimension " + std::to_string(k) + " is not a multiple of " +
                std::to_string(vec) + " (16-byte weight loads)");
  const bool folded = f.ss_in || f.ss_out;
  if (folded && t != WType::BF16) throw Error("cuda matvec: a folded norm or residual needs bf16 weights");
  if (!f.ss_out && (f.xn_out || f.next_norm)) throw Error("cuda matvec: xn_out belongs to the residual epilogue");
  if (!f.xn_out != !f.next_norm) throw Error("cuda matvec: xn_out and next_norm go together");
  if (Swiglu && f.ss_out) throw Error("cuda matvec: the SwiGLU form has no residual epilogue");
  if (f.out_tiles != 1 && f.out_tiles != 2 && f.out_tiles != 4)
    throw Error("cuda matvec: out_tiles must be 1, 2 or 4, found " + std::to_string(f.out_tiles));
  if (f.x_rows && (t != WType::BF16 || f.ss_out)) throw Error("cuda matvec: gathered input rows need bf16 weights and no residual epilogue");
  if (f.ss_in && f.ss_out) throw Error("cuda matvec: a folded norm and a residual epilogue in one launch");
  if (f.res_table && (!f.ss_out || !f.res_tokens || Swiglu))
    throw Error("cuda matvec: a residual table needs the residual epilogue and the rows' tokens");
  if (f.res_feed.n > 0 && (!f.res_table || !f.res_feed.picks || f.res_feed.n > rows))
    throw Error("cuda matvec: a chained step's picks must cover at most the window's rows of a residual table");
  if (f.x_normed_out && !f.ss_in) throw Error("cuda matvec: x_normed_out belongs to a normed input");
  static const int pdl_mode = env_int("STRATA_MATVEC_PDL_MODE", 0, 2, 0);
  MatvecFold fm = f;
  fm.pdl_mode = pdl_mode;
  if (t == WType::BF16)
    launch_bf16<Swiglu>(w, n, k, x, rows, y, fm, stream);
  else
    launch_f32<Swiglu>(w, n, k, x, rows, y, stream);
}

}  // namespace

void launch_matvec(const void* w, WType t, int n, int k, const float* x, int rows, float* y, cudaStream_t stream,
                   const MatvecFold& fold) {
  launch_checked<false>(w, t, n, k, x, rows, y, fold, stream);
}

bool matvec_qkv_rope_supports(WType t, int n, int head_dim) {
  return t == WType::BF16 && (head_dim == 64 || head_dim == 128) && n % head_dim == 0 && n < kw16_below();
}

void configure_matvec() {
  configure_qkv_rope_mt<4, false>();
  configure_qkv_rope_mt<4, true>();
  configure_qkv_rope_mt<8, false>();
  configure_qkv_rope_mt<8, true>();
}

void launch_matvec_qkv_rope(const void* w, WType t, int n, int k, const float* x, int rows, float* qkv,
                            const QkvRopeParams& p, cudaStream_t stream, const MatvecFold& fold) {
  if (rows <= 0) return;
  check_qkv_rope(p);
  if (!matvec_qkv_rope_supports(t, n, p.head_dim))
    throw Error("cuda matvec: the QKV projection with RoPE needs bf16 weights, head_dim 64 or 128 and fewer than " +
                std::to_string(kw16_below()) + " rows");
  if (n != (p.n_heads + 2 * p.n_kv_heads) * p.head_dim)
    throw Error("cuda matvec: the QKV projection with RoPE needs the q | k | v rows (" + std::to_string(n) + ")");
  if (k % 8 != 0) throw Error("cuda matvec: inner dimension " + std::to_string(k) + " is not a multiple of 8");
  if (p.qkv_rem || fold.ss_out || fold.xn_out || fold.next_norm)
    throw Error("cuda matvec: the QKV projection with RoPE takes no remainder rows or residual epilogue");
  const bool norm = fold.ss_in != nullptr;
  static const int pdl_mode = env_int("STRATA_MATVEC_PDL_MODE", 0, 2, 0);
  // STRATA_SKINNY_ROPE_EARLY=0: the table rows and KV cells looked up in the epilogue instead of before the
  // wait (a measurement switch; the same bits).
  static const bool rope_early = env_int("STRATA_SKINNY_ROPE_EARLY", 0, 1, 1) != 0;
  MatvecFold fm = fold;
  fm.pdl_mode = pdl_mode;
  fm.rope_early = fm.rope_early && rope_early;
  if (p.head_dim == 64)
    norm ? launch_qkv_rope_mt<4, true>(w, n, k, x, rows, qkv, fm, p, stream)
         : launch_qkv_rope_mt<4, false>(w, n, k, x, rows, qkv, fm, p, stream);
  else
    norm ? launch_qkv_rope_mt<8, true>(w, n, k, x, rows, qkv, fm, p, stream)
         : launch_qkv_rope_mt<8, false>(w, n, k, x, rows, qkv, fm, p, stream);
}

void launch_matvec_swiglu(const void* w, WType t, int ff, int k, const float* x, int rows, float* act,
                          cudaStream_t stream, const MatvecFold& fold) {
  launch_checked<true>(w, t, ff, k, x, rows, act, fold, stream);
}

}  // namespace cuda
}  // namespace strata
