// Tensor-core attention for the windows of the GEMM path that flash_attention.cu does not take: decode
// batches, with the single rows and short tiles that share their windows (launch_attention_tc in
// kernels.hpp), from a bf16 KV arena. Same inputs and outputs as launch_attention: a block per (query tile,
// kv head, split of kAttnSplit positions) writes the split's (max, sum) and unnormalized P.V of every query
// vector it serves to part_ml / part_acc, and attention.cu's combine kernel merges the splits.
//
// Why a new kernel: the fp32 kernels spend their time on shared-memory traffic and arithmetic, not on the
// K/V bytes (128 decode rows of the 8B shape: 154 us per layer from fp32, 174 from bf16, where the bytes
// take 47 us from bf16 at the copy bandwidth). Here the GQA group's query heads share the mma's M rows, so a
// K/V tile in shared memory is read once by the tensor cores for the whole group: M = 16 query vectors
// (rows x heads of the tile, in chunks of 16), N = positions, K = head dims.
//
// The block copies the split's K and V rows (cp.async, as stored) into shared memory once; each of its 8
// warps takes 16 of the split's positions: S = Q K^T by mma (K fragments by ldmatrix), mask past each
// vector's own position, the warp's max and sum (quad butterflies), O = P V (V by ldmatrix.trans); then the
// warps' results are merged in warp order through shared memory. Numbers: K and V are exact (bf16 values);
// q and P are split into bf16 hi + remainder (two mma each), so the products keep near-fp32 accuracy, with
// fp32 sums. This is not the staged kernel's order, so its bits are not attention.cu's; but like it, it gives a
// query vector the same bits in any window: split boundaries sit at fixed multiples of kS, each vector's
// scores, softmax and P.V are its own mma rows and fixed-order sums (masked positions add exact zeros), and
// the combine merges a row's splits in order. So it serves verify windows too (test_attention_rmsnorm.cpp:
// a row's bits alone, in verify tiles and beside other slots); --batch-invariant keeps the staged kernel.
#include <cooperative_groups.h>
#include <cuda_bf16.h>

#include <cstdint>
#include <string>

#include "cuda/cuda_check.hpp"
#include "cuda/kernels/attention_common.cuh"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/kernels.hpp"
#include "cuda/kernels/kv_access.cuh"
#include "cuda/kernels/launch.cuh"
#include "cuda/kernels/mma_tile.cuh"

namespace strata {
namespace cuda {
namespace {

using namespace attn;
namespace cg = cooperative_groups;

constexpr int kWarps = 8;
constexpr int kThreads = 32 * kWarps;
constexpr int kS = kAttnSplit;          // positions of one block
constexpr int kWarpPos = kS / kWarps;  // positions of one warp
constexpr int kPad = 8;                 // bf16 padding per shared row: ldmatrix rows hit distinct banks
constexpr int kM = 16;                  // query vectors per mma chunk
static_assert(kWarpPos == 16, "a warp's positions are 2 n8 blocks and one k16 step");
static_assert(kS <= kThreads, "one block-table lookup per thread");


// Two layouts (kLean below). Shared memory: K and V [kS] rows of HD bf16, padded to HD + kPad (plain) or
// unpadded with their 16-byte pieces XOR-swizzled by the row (lean: piece u of row j at u ^ (j & 7), so the
// 8 rows an ldmatrix reads still hit distinct banks), the split's row offsets [kS] (int64), the merge buffer
// [kWarps][kMergeRows][HD / DP + 4] fp32 and each warp's (max, sum) of the chunk's vectors [kWarps][kM][2].
//
// kLean trades a little work for occupancy: the plain kernel keeps the q fragments of a chunk in registers
// (98 a thread) and takes 88.6 KB of shared memory at head_dim 128, two blocks an SM either way; the lean one
// loads each k-step's q fragments when it uses them, does P.V and the merge in two passes of half the
// dims each (half the accumulators and merge buffer) and drops the padding, so three blocks fit (at most 80
// registers, 74.5 KB at head_dim 128).
template <int HD, bool kLean>
struct Smem {
  static constexpr int kMergeRows = 4;  // query vectors merged per round (a decode row's GQA group of 4 in one)
  static constexpr int DP = kLean ? 2 : 1;  // P.V passes, HD / DP dims each
  static constexpr int LD = kLean ? HD : HD + kPad;
  static constexpr int MLD = HD / DP + 4;
  // Element offset of 16-byte piece u (8 bf16) of K/V row j.
  static __device__ __forceinline__ int at(int j, int u) { return j * LD + 8 * (kLean ? (u ^ (j & 7)) : u); }
  static constexpr size_t k_off = 0;
  static constexpr size_t v_off = k_off + size_t(kS) * LD * 2;
  static constexpr size_t off_off = v_off + size_t(kS) * LD * 2;
  static constexpr size_t merge_off = off_off + size_t(kS) * 8;
  static constexpr size_t ml_off = merge_off + size_t(kWarps) * kMergeRows * MLD * 4;
  static constexpr size_t bytes = ml_off + size_t(kWarps) * kM * 2 * 4;
};

// A chunk's kM query vectors staged in shared memory (in the merge buffer, unused until P.V): vector m at
// m * kQLd floats, zeros past the chunk's last vector. The padding spreads the 8 vectors a fragment load reads
// over distinct banks.
template <int HD>
constexpr int kQLd = HD + 8;

// The q fragments of k-step s (dims 16 s .. 16 s + 15) of staged vectors gid (rows 0-7) and gid + 8 (rows
// 8-15), as hi and remainder A fragments.
template <int HD>
__device__ __forceinline__ void load_q(const float* qs, int gid, int s, int tig, uint32_t (&qh)[4],
                                       uint32_t (&ql)[4]) {
#pragma unroll
  for (int e = 0; e < 4; ++e) {  // e: (rows 0-7 | 8-15) x (dims 2t | 2t + 8)
    const int half = e & 1, d = 16 * s + 2 * tig + 8 * (e >> 1);
    const float2 v = *reinterpret_cast<const float2*>(qs + (gid + 8 * half) * kQLd<HD> + d);
    split_bf16x2(v.x, v.y, qh[e], ql[e]);
  }
}

// One split's part of a chunk of kM query vectors (c0 .. c0 + kM - 1 of the tile's Q), by a group of kWarps
// warps: gwarp (0 .. kWarps - 1) takes the split's positions gwarp * kWarpPos on, gtid is the thread's index in
// the group. ks / vs: the split's K and V rows in shared memory (S::at(j, u), j from 0); qs: the chunk's
// staged q; merge and sML: the group's own buffers. Row r of the tile reads the split's positions j < lim + r.
// For each vector whose row reads the split, store_acc(m, qi, r, d, value) gets its unnormalized P.V at dim d
// and store_ml(m, qi, r, M, L) its (max, sum); m is the vector's index in the chunk. The block barriers in here
// are the whole block's: a block's groups call this together, with the same c0 and Q.
template <int HD, bool kLean, class StoreAcc, class StoreMl>
__device__ __forceinline__ void split_chunk(const __nv_bfloat16* ks, const __nv_bfloat16* vs, const float* qs,
                                            float* merge, float* sML, int gwarp, int gtid, int lane, int c0, int Q,
                                            int G, int lim, float scale, StoreAcc&& store_acc, StoreMl&& store_ml) {
  using S = Smem<HD, kLean>;
  constexpr int KS = HD / 16, NB = HD / 8, kMergeRows = S::kMergeRows;
  constexpr int DP = S::DP, NBP = NB / DP, HP = HD / DP;
  const int gid = lane >> 2, tig = lane & 3;
  int rr[2];
  bool ok[2];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int qi = c0 + gid + 8 * half;
    ok[half] = qi < Q;
    rr[half] = ok[half] ? qi / G : 0;
  }
  constexpr int QS = kLean ? 1 : KS;  // k-steps of q held at once
  uint32_t qh[QS][4], ql[QS][4];
  if (!kLean) {
#pragma unroll
    for (int s = 0; s < QS; ++s) load_q<HD>(qs, gid, s, tig, qh[s], ql[s]);
  }

  // S for the warp's positions jw + 8 n + (2 tig, 2 tig + 1), n < 2: rows gid ([0], [1]) and gid + 8 ([2], [3]).
  const int jw = gwarp * kWarpPos;
  float sc[2][4];
#pragma unroll
  for (int n = 0; n < 2; ++n) sc[n][0] = sc[n][1] = sc[n][2] = sc[n][3] = 0.0f;
#pragma unroll
  for (int s = 0; s < KS; s += 2) {
    uint32_t h0[4], l0[4], h1[4], l1[4];  // q fragments of k-steps s and s + 1
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if (!kLean) h0[e] = qh[s % QS][e], l0[e] = ql[s % QS][e], h1[e] = qh[(s + 1) % QS][e], l1[e] = ql[(s + 1) % QS][e];
    }
    if (kLean) {
      load_q<HD>(qs, gid, s, tig, h0, l0);
      load_q<HD>(qs, gid, s + 1, tig, h1, l1);
    }
#pragma unroll
    for (int n = 0; n < 2; ++n) {
      uint32_t b[4];
      const int row = jw + 8 * n + (lane & 7);
      ldsm_x4(b, ks + S::at(row, 2 * s + (lane >> 3)));
      mma_bf16(sc[n], h0, b[0], b[1]);
      mma_bf16(sc[n], l0, b[0], b[1]);
      mma_bf16(sc[n], h1, b[2], b[3]);
      mma_bf16(sc[n], l1, b[2], b[3]);
    }
  }
  float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int n = 0; n < 2; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int half = e >> 1, j = jw + 8 * n + 2 * tig + (e & 1);
      const bool in = ok[half] && j < lim + rr[half];
      sc[n][e] = in ? __fmul_rn(sc[n][e], scale) : -INFINITY;
      mx[half] = fmaxf(mx[half], sc[n][e]);
    }
  float sum[2] = {0.0f, 0.0f};
#pragma unroll
  for (int half = 0; half < 2; ++half) mx[half] = quad_max(mx[half]);
#pragma unroll
  for (int n = 0; n < 2; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int half = e >> 1;
      const float p = sc[n][e] == -INFINITY ? 0.0f : expf(__fsub_rn(sc[n][e], mx[half]));
      sc[n][e] = p;
      sum[half] = __fadd_rn(sum[half], p);
    }
#pragma unroll
  for (int half = 0; half < 2; ++half) sum[half] = quad_sum(sum[half]);

  // The warps' (max, sum) for the merge: M = max of the warps' maxima, each warp's part weighted by
  // exp(m_w - M).
  if (tig == 0) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      sML[(gwarp * kM + gid + 8 * half) * 2] = mx[half];
      sML[(gwarp * kM + gid + 8 * half) * 2 + 1] = sum[half];
    }
  }
  __syncthreads();
  float f[2];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int m = gid + 8 * half;
    float M = -INFINITY;
    for (int w = 0; w < kWarps; ++w) M = fmaxf(M, sML[(w * kM + m) * 2]);
    f[half] = mx[half] == -INFINITY ? 0.0f : expf(__fsub_rn(mx[half], M));
  }
  uint32_t ph[4], pl[4];
  split_bf16x2(sc[0][0], sc[0][1], ph[0], pl[0]);
  split_bf16x2(sc[0][2], sc[0][3], ph[1], pl[1]);
  split_bf16x2(sc[1][0], sc[1][1], ph[2], pl[2]);
  split_bf16x2(sc[1][2], sc[1][3], ph[3], pl[3]);
  const int mi = lane >> 3;
  const int vrow = jw + 8 * (mi & 1) + (lane & 7);
  const int nv = min(kM, Q - c0);  // vectors of this chunk
  // O = P V over the warp's 16 positions, one k16 step of S blocks 0 and 1 (ldmatrix.trans matrix i:
  // positions jw + 8 (i & 1) + (lane & 7), dims 8 (n + (i >> 1))), in DP passes of HP dims each; after a
  // pass the warps are merged in warp order, kMergeRows vectors a round: every warp writes its weighted
  // rows, then a thread per (vector, dim) adds them in warp order.
#pragma unroll 1
  for (int dp = 0; dp < DP; ++dp) {
    float o[NBP][4];
#pragma unroll
    for (int n = 0; n < NBP; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
#pragma unroll
    for (int n = 0; n < NBP; n += 2) {
      uint32_t b[4];
      ldsm_x4_trans(b, vs + S::at(vrow, (mi >> 1) + dp * NBP + n));
      mma_bf16(o[n], ph, b[0], b[1]);
      mma_bf16(o[n], pl, b[0], b[1]);
      mma_bf16(o[n + 1], ph, b[2], b[3]);
      mma_bf16(o[n + 1], pl, b[2], b[3]);
    }
    for (int m0 = 0; m0 < nv; m0 += kMergeRows) {
#pragma unroll
      for (int n = 0; n < NBP; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int m = gid + 8 * (e >> 1) - m0, d = 8 * n + 2 * tig + (e & 1);
          if (m >= 0 && m < kMergeRows) merge[(gwarp * kMergeRows + m) * S::MLD + d] = __fmul_rn(o[n][e], f[e >> 1]);
        }
      __syncthreads();
      for (int i = gtid; i < kMergeRows * HP; i += kThreads) {
        const int mr = i / HP, d = i - mr * HP, m = m0 + mr, qi = c0 + m;
        if (m >= nv) break;
        const int r = qi / G;
        if (lim + r <= 0) continue;  // the vector's row ends before this split: never read
        float acc = merge[mr * S::MLD + d];
        for (int w = 1; w < kWarps; ++w) acc = __fadd_rn(acc, merge[(w * kMergeRows + mr) * S::MLD + d]);
        store_acc(m, qi, r, dp * HP + d, acc);
        if (dp == 0 && d == 0) {
          float M = -INFINITY, L = 0.0f;
          for (int w = 0; w < kWarps; ++w) M = fmaxf(M, sML[(w * kM + m) * 2]);
          for (int w = 0; w < kWarps; ++w) {
            const float mw = sML[(w * kM + m) * 2];
            if (mw != -INFINITY) L = __fadd_rn(L, __fmul_rn(sML[(w * kM + m) * 2 + 1], expf(__fsub_rn(mw, M))));
          }
          store_ml(m, qi, r, M, L);
        }
      }
      __syncthreads();  // the merge buffer is rewritten next round
    }
  }
}

// Stages the K/V rows of positions [j0, j0 + n) of the tile's slot (kv head g) into ks / vs, position j at
// element at(j - j0, u) for its 16-byte piece u, and zeros V's rows [n, n_zero) (their P is zero, and 0 x
// garbage could be NaN; K rows there are never used unmasked). pdl_wait() is in here: the rows this window
// writes for the slot start at the least position of the slot's rows in it (a decode row's own), so the rows
// before that, written by earlier windows, are copied before the wait (under PDL that overlaps the previous
// kernel's tail), and only the window's own rows after it. The window's metadata and block tables come from
// the host before the graph runs, so the lookups placing the rows go first too. Threads tid of n_threads;
// sOff holds n offsets. The copies are in flight on return (cp_async_wait, then a barrier, before use).
template <int HD, class At>
__device__ __forceinline__ void stage_kv(const AttentionParams& a, int slot, int p0, int g, int j0, int n, int n_zero,
                                         At at, __nv_bfloat16* ks, __nv_bfloat16* vs, long long* sOff, int tid,
                                         int n_threads) {
  constexpr int U = HD / 8;
  __shared__ int s_first;
  if (a.rows > 1) {
    if (tid == 0) s_first = p0;
    __syncthreads();
    for (int r = tid; r < a.rows; r += n_threads)
      if (a.slot[r] == slot) atomicMin(&s_first, a.pos[r]);
  }
  for (int j = tid; j < n; j += n_threads)
    sOff[j] = static_cast<long long>(kv_offset(a.kv, slot, j0 + j)) + static_cast<long long>(g) * HD;
  __syncthreads();
  const int first = a.rows > 1 ? s_first : p0;
  const int pre = max(0, min(n, first - j0));  // the rows written before this window
  const __nv_bfloat16* kb = static_cast<const __nv_bfloat16*>(a.kv.k);
  const __nv_bfloat16* vb = static_cast<const __nv_bfloat16*>(a.kv.v);
  auto copy_rows = [&](int r0, int r1) {
    for (int i = r0 * U + tid; i < r1 * U; i += n_threads) {  // consecutive threads: consecutive 16 bytes of a row
      const int j = i / U, u = i - j * U;
      cp_async16(ks + at(j, u), kb + sOff[j] + 8 * u);
      cp_async16(vs + at(j, u), vb + sOff[j] + 8 * u);
    }
    cp_async_commit();
  };
  copy_rows(0, pre);
  pdl_wait();  // K/V of this window's rows and q are the previous kernel's output
  copy_rows(pre, n);
  for (int i = tid; i < (n_zero - n) * U; i += n_threads) {
    const int j = n + i / U, u = i % U;
    *reinterpret_cast<uint4*>(vs + at(j, u)) = make_uint4(0, 0, 0, 0);
  }
}

// Stages vectors c0 .. c0 + kM - 1 of the tile's Q (zeros past Q) into qs, threads tid of n_threads.
template <int HD>
__device__ __forceinline__ void stage_q(float* qs, const AttentionParams& a, int row0, int g, int G, int c0, int Q,
                                        int tid, int n_threads) {
  for (int i = tid; i < kM * (HD / 4); i += n_threads) {
    const int m = i / (HD / 4), d = 4 * (i - m * (HD / 4)), qi = c0 + m;
    const float4 v = qi < Q ? *reinterpret_cast<const float4*>(a.qkv + size_t(row0 + qi / G) * a.qkv_stride +
                                                               size_t(g * G + qi % G) * HD + d)
                            : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    *reinterpret_cast<float4*>(qs + m * kQLd<HD> + d) = v;
  }
}

template <int HD, bool kLean>
__global__ void __launch_bounds__(kThreads, kLean ? 3 : 1) attention_tc_kernel(AttentionParams a) {
  using S = Smem<HD, kLean>;
  static_assert(kM * kQLd<HD> * 4 <= kWarps * S::kMergeRows * S::MLD * 4, "a chunk's staged q fits the merge buffer");
  pdl_launch_dependents();
  extern __shared__ __align__(16) unsigned char smem[];
  __nv_bfloat16* ks = reinterpret_cast<__nv_bfloat16*>(smem + S::k_off);
  __nv_bfloat16* vs = reinterpret_cast<__nv_bfloat16*>(smem + S::v_off);
  long long* sOff = reinterpret_cast<long long*>(smem + S::off_off);
  float* merge = reinterpret_cast<float*>(smem + S::merge_off);
  float* qs = merge;  // the chunk's staged q, until P.V
  float* sML = reinterpret_cast<float*>(smem + S::ml_off);

  const int tile = blockIdx.z;
  if (tile >= load_now(a.n_tiles)) return;
  const int row0 = a.tile_first[tile], nq = a.tile_rows[tile];
  const int G = a.n_heads / a.n_kv_heads, g = blockIdx.y;
  const int split = blockIdx.x, s_begin = split * kS;
  const int p0 = a.pos[row0], slot = a.slot[row0];
  if (s_begin > p0 + nq - 1) return;
  const int nsp = min(kS, p0 + nq - s_begin);  // positions of the split any row of the tile reads
  const int lim = p0 + 1 - s_begin;            // row r reads split positions j < lim + r
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;

  stage_kv<HD>(a, slot, p0, g, s_begin, nsp, kS, [](int j, int u) { return S::at(j, u); }, ks, vs, sOff, tid, kThreads);

  const int Q = nq * G;  // query vector qi: row qi / G of the tile, head g G + qi % G
  for (int c0 = 0; c0 < Q; c0 += kM) {
    // Stage the chunk's q (the first chunk's while K and V are in flight).
    stage_q<HD>(qs, a, row0, g, G, c0, Q, tid, kThreads);
    if (c0 == 0) cp_async_wait<0>();
    __syncthreads();  // q staged; K and V (and V's zero rows) visible to every warp
    auto cell = [&](int qi, int r) {
      return (size_t(row0 + r) * a.n_heads + size_t(g * G + qi % G)) * a.max_splits + split;
    };
    split_chunk<HD, kLean>(
        ks, vs, qs, merge, sML, warp, tid, lane, c0, Q, G, lim, a.scale,
        [&](int, int qi, int r, int d, float v) { a.part_acc[cell(qi, r) * HD + d] = v; },
        [&](int, int qi, int r, float M, float L) {
          a.part_ml[cell(qi, r) * 2] = M;
          a.part_ml[cell(qi, r) * 2 + 1] = L;
        });
    __syncthreads();  // the next chunk rewrites sML and the merge buffer
  }
}

// Merges one query vector's ns splits (at most NS) and writes its output row (row r, head h), a warp: lane l
// < ns reads split l's (max, sum) from ml(l), and split sp's unnormalized P.V (HD floats) is at acc(sp).
// attention.cu's attention_combine, step for step, so the bits are the split kernel's and its merge's.
template <int HD, int NS, class Ml, class Acc>
__device__ __forceinline__ void merge_splits(const AttentionParams& a, int r, int h, int ns, int lane, Ml ml, Acc acc) {
  constexpr int kDims = HD / 32;
  const float m0 = lane < ns ? ml(lane)[0] : -INFINITY;
  const float l0 = lane < ns ? ml(lane)[1] : 0.0f;
  float M = m0;
#pragma unroll
  for (int o = 16; o >= 1; o /= 2) M = fmaxf(M, __shfl_xor_sync(kFull, M, o));
  float Lsum = 0.0f, wc = 0.0f;
  if (lane < ns) {
    wc = expf(m0 - M);
    Lsum = __fmaf_rn(l0, wc, Lsum);
  }
#pragma unroll
  for (int o = 16; o >= 1; o /= 2) Lsum = __fadd_rn(Lsum, __shfl_xor_sync(kFull, Lsum, o));
  float out[kDims];
#pragma unroll
  for (int e = 0; e < kDims; ++e) out[e] = 0.0f;
#pragma unroll
  for (int sp = 0; sp < NS; ++sp) {
    if (sp < ns) {  // warp-uniform
      const float w = __shfl_sync(kFull, wc, sp);
      const float* p = acc(sp);
#pragma unroll
      for (int e = 0; e < kDims; ++e) out[e] = __fmaf_rn(p[lane + 32 * e], w, out[e]);
    }
  }
  __nv_bfloat16* out16 = static_cast<__nv_bfloat16*>(a.out16.p);
  const size_t rem = a.out16.split ? size_t(a.rows) * a.n_heads * HD : 0;
  const size_t o0 = size_t(r) * a.n_heads * HD + size_t(h) * HD;
#pragma unroll
  for (int e = 0; e < kDims; ++e) {
    const int d = lane + 32 * e;
    const float o = __fdiv_rn(out[e], Lsum);
    a.out[o0 + d] = o;
    if (out16) store_bf16_split(out16 + o0 + d, rem, o);
  }
}

// Whole-context attention for short contexts: a block per (query tile, kv head) computes every split of
// the tile's context (at most kWholeSplits<HD>), each exactly as attention_tc_kernel's block for that split
// does (split_chunk, kWholeGroups splits side by side, kWarps warps each), keeps their (max, sum) and P.V
// in shared memory, and merges them as attention.cu's combine kernel does, with its arithmetic in its order:
// the same bits as the split kernel and the combine, without the combine's launch and the partials' round
// trip through global memory. All of the context's K/V rows are staged at once, those written before this
// window ahead of pdl_wait().
constexpr int kWholeGroups = 2;
constexpr int kWholeWarps = kWarps * kWholeGroups;
constexpr int kWholeThreads = 32 * kWholeWarps;
template <int HD>
constexpr int kWholeSplits = HD == 64 ? 4 : 2;  // what fits the 227 KB of an SM (H100 / H200)
// The layout for HD 128 is the lean one (at most 128 registers a thread at 16 warps; the plain one keeps all
// of q's fragments); both compute the same bits.
template <int HD>
constexpr bool kWholeLean = HD > 64;

template <int HD>
struct WholeSmem {
  using S = Smem<HD, kWholeLean<HD>>;
  static constexpr int NS = kWholeSplits<HD>;
  static_assert(NS % kWholeGroups == 0, "the groups' splits s0 + group stay below NS");
  static constexpr int kSplitElems = kS * S::LD;  // bf16 of one split's K (or V) rows
  static constexpr size_t k_off = 0;
  static constexpr size_t v_off = k_off + size_t(NS) * kSplitElems * 2;
  static constexpr size_t off_off = v_off + size_t(NS) * kSplitElems * 2;
  static constexpr size_t q_off = off_off + size_t(NS) * kS * 8;
  static constexpr size_t merge_off = q_off + size_t(kM) * kQLd<HD> * 4;
  static constexpr size_t merge_floats = size_t(kWarps) * S::kMergeRows * S::MLD;  // a group's
  static constexpr size_t ml_off = merge_off + kWholeGroups * merge_floats * 4;
  static constexpr size_t ml_floats = size_t(kWarps) * kM * 2;  // a group's
  static constexpr size_t acc_off = ml_off + kWholeGroups * ml_floats * 4;
  static constexpr size_t sml_off = acc_off + size_t(NS) * kM * HD * 4;  // each split's (max, sum) of the chunk
  static constexpr size_t bytes = sml_off + size_t(NS) * kM * 2 * 4;
};

template <int HD>
__global__ void __launch_bounds__(kWholeThreads, 1) attention_tc_whole_kernel(AttentionParams a) {
  constexpr bool kLean = kWholeLean<HD>;
  using S = Smem<HD, kLean>;
  using W = WholeSmem<HD>;
  constexpr int NS = W::NS;
  pdl_launch_dependents();
  extern __shared__ __align__(16) unsigned char smem[];
  __nv_bfloat16* ks = reinterpret_cast<__nv_bfloat16*>(smem + W::k_off);
  __nv_bfloat16* vs = reinterpret_cast<__nv_bfloat16*>(smem + W::v_off);
  long long* sOff = reinterpret_cast<long long*>(smem + W::off_off);
  float* qs = reinterpret_cast<float*>(smem + W::q_off);
  float* part_acc = reinterpret_cast<float*>(smem + W::acc_off);  // [split][m][HD]
  float* part_ml = reinterpret_cast<float*>(smem + W::sml_off);   // [split][m][2]

  const int tile = blockIdx.y;
  if (tile >= load_now(a.n_tiles)) return;
  const int row0 = a.tile_first[tile], nq = a.tile_rows[tile];
  const int G = a.n_heads / a.n_kv_heads, g = blockIdx.x;
  const int p0 = a.pos[row0], slot = a.slot[row0];
  const int npos = p0 + nq;                // positions any row of the tile reads (at most NS splits: the launch)
  const int nsplit = (npos - 1) / kS + 1;  // splits they span
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int group = warp / kWarps, gwarp = warp % kWarps, gtid = tid % kThreads;

  // Position j of the context is row j % kS of split j / kS's buffers.
  stage_kv<HD>(a, slot, p0, g, 0, npos, nsplit * kS,
               [](int j, int u) { return (j / kS) * W::kSplitElems + S::at(j % kS, u); }, ks, vs, sOff, tid,
               kWholeThreads);

  const int Q = nq * G;
  float* merge = reinterpret_cast<float*>(smem + W::merge_off) + size_t(group) * W::merge_floats;
  float* sML = reinterpret_cast<float*>(smem + W::ml_off) + size_t(group) * W::ml_floats;
  for (int c0 = 0; c0 < Q; c0 += kM) {
    stage_q<HD>(qs, a, row0, g, G, c0, Q, tid, kWholeThreads);
    if (c0 == 0) cp_async_wait<0>();
    __syncthreads();
    for (int s0 = 0; s0 < nsplit; s0 += kWholeGroups) {  // block-uniform
      // A group past the last split still runs (the block's barriers stay together) on buffers nothing
      // staged; its split starts past every row's context, so it stores nothing.
      const int s = s0 + group;
      split_chunk<HD, kLean>(
          ks + size_t(s) * W::kSplitElems, vs + size_t(s) * W::kSplitElems, qs, merge, sML, gwarp, gtid, lane, c0,
          Q, G, p0 + 1 - s * kS, a.scale,
          [&](int m, int, int, int d, float v) { part_acc[(size_t(s) * kM + m) * HD + d] = v; },
          [&](int m, int, int, float M, float L) {
            part_ml[(s * kM + m) * 2] = M;
            part_ml[(s * kM + m) * 2 + 1] = L;
          });
      __syncthreads();
    }
    // The merge of each vector's splits, a warp per vector.
    const int nv = min(kM, Q - c0);
    for (int m = warp; m < nv; m += kWholeWarps) {
      const int qi = c0 + m, r = qi / G;
      merge_splits<HD, NS>(a, row0 + r, g * G + qi % G, (p0 + r) / kS + 1, lane,
                           [&](int sp) { return part_ml + (sp * kM + m) * 2; },
                           [&](int sp) { return part_acc + (size_t(sp) * kM + m) * HD; });
    }
    __syncthreads();  // the next chunk restages q and rewrites the splits' parts
  }
}

// Cluster attention: the split kernel's blocks of one (query tile, kv head), one a split, as a thread-block
// cluster (sm_90) of grid_splits blocks along x, at most kClusterSplits. Each block computes its split of a
// chunk of query vectors exactly as attention_tc_kernel's block does (split_chunk), keeps the chunk's (max,
// sum) and P.V in its own shared memory instead of part_ml / part_acc, and after a barrier of the cluster
// its blocks merge the chunk's vectors (block b: vectors b, b + C, ...; a warp each), reading every split's
// parts from the other blocks' shared memory: the split kernel's parallelism and the combine's bits
// (merge_splits), without the combine's launch and the round trip through global memory. A block whose
// split starts past the tile's context computes nothing but stays for the cluster's barriers.
constexpr int kClusterSplits = 8;  // the portable cluster size

template <int HD, bool kLean>
struct ClusterSmem {
  using S = Smem<HD, kLean>;
  static_assert(S::bytes % 16 == 0, "the parts follow the split kernel's layout, aligned");
  static constexpr size_t acc_off = S::bytes;                    // the chunk's P.V [kM][HD]
  static constexpr size_t ml_off = acc_off + size_t(kM) * HD * 4;  // the chunk's (max, sum) [kM][2]
  static constexpr size_t bytes = ml_off + size_t(kM) * 2 * 4;
};

template <int HD, bool kLean>
__global__ void __launch_bounds__(kThreads, kLean ? 3 : 1) attention_tc_cluster_kernel(AttentionParams a) {
  using S = Smem<HD, kLean>;
  using C = ClusterSmem<HD, kLean>;
  cg::cluster_group cluster = cg::this_cluster();
  pdl_launch_dependents();
  extern __shared__ __align__(16) unsigned char smem[];
  __nv_bfloat16* ks = reinterpret_cast<__nv_bfloat16*>(smem + S::k_off);
  __nv_bfloat16* vs = reinterpret_cast<__nv_bfloat16*>(smem + S::v_off);
  long long* sOff = reinterpret_cast<long long*>(smem + S::off_off);
  float* merge = reinterpret_cast<float*>(smem + S::merge_off);
  float* qs = merge;  // the chunk's staged q, until P.V
  float* sML = reinterpret_cast<float*>(smem + S::ml_off);
  float* my_acc = reinterpret_cast<float*>(smem + C::acc_off);
  float* my_ml = reinterpret_cast<float*>(smem + C::ml_off);

  const int tile = blockIdx.z;
  if (tile >= load_now(a.n_tiles)) return;  // the whole cluster (one tile) leaves together
  const int row0 = a.tile_first[tile], nq = a.tile_rows[tile];
  const int G = a.n_heads / a.n_kv_heads, g = blockIdx.y;
  const int split = blockIdx.x, s_begin = split * kS, nblocks = gridDim.x;  // the cluster: blockIdx.x its rank
  const int p0 = a.pos[row0], slot = a.slot[row0];
  const bool has = s_begin <= p0 + nq - 1;     // block-uniform: some row of the tile reads the split
  const int nsp = min(kS, p0 + nq - s_begin);  // positions of the split any row of the tile reads
  const int lim = p0 + 1 - s_begin;            // row r reads split positions j < lim + r
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;

  if (has)
    stage_kv<HD>(a, slot, p0, g, s_begin, nsp, kS, [](int j, int u) { return S::at(j, u); }, ks, vs, sOff, tid,
                 kThreads);
  else
    pdl_wait();  // the merge below writes the previous kernels' inputs

  const int Q = nq * G;
  for (int c0 = 0; c0 < Q; c0 += kM) {
    if (has) {
      stage_q<HD>(qs, a, row0, g, G, c0, Q, tid, kThreads);
      if (c0 == 0) cp_async_wait<0>();
      __syncthreads();
      split_chunk<HD, kLean>(
          ks, vs, qs, merge, sML, warp, tid, lane, c0, Q, G, lim, a.scale,
          [&](int m, int, int, int d, float v) { my_acc[m * HD + d] = v; },
          [&](int m, int, int, float M, float L) {
            my_ml[m * 2] = M;
            my_ml[m * 2 + 1] = L;
          });
    }
    cluster.sync();  // every split's parts of the chunk written and visible to the cluster
    const int nv = min(kM, Q - c0);
    for (int m = split + nblocks * warp; m < nv; m += nblocks * kWarps) {
      const int qi = c0 + m, r = qi / G;
      // The splits row r reads (all of them computed: each starts at or before the row's position).
      merge_splits<HD, kClusterSplits>(
          a, row0 + r, g * G + qi % G, (p0 + r) / kS + 1, lane,
          [&](int sp) -> const float* { return cluster.map_shared_rank(my_ml, unsigned(sp)) + m * 2; },
          [&](int sp) -> const float* { return cluster.map_shared_rank(my_acc, unsigned(sp)) + m * HD; });
    }
    cluster.sync();  // the parts are rewritten by the next chunk, and no block leaves while another reads them
  }
}

template <int HD, bool kLean>
void configure_one() {
  STRATA_CUDA_CHECK(cudaFuncSetAttribute(attention_tc_kernel<HD, kLean>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, int(Smem<HD, kLean>::bytes)));
  // The lean layout counts on three blocks' shared memory on an SM: ask for the largest carveout.
  if (kLean)
    STRATA_CUDA_CHECK(cudaFuncSetAttribute(attention_tc_kernel<HD, kLean>,
                                           cudaFuncAttributePreferredSharedMemoryCarveout, 100));
}

// Whether the whole-context kernel's shared memory fits this device (set by configure_hd).
template <int HD>
bool whole_fits = false;

template <int HD>
void configure_hd() {
  configure_one<HD, false>();
  configure_one<HD, true>();
  whole_fits<HD> = smem_optin() >= int(WholeSmem<HD>::bytes);
  if (whole_fits<HD>)
    STRATA_CUDA_CHECK(cudaFuncSetAttribute(attention_tc_whole_kernel<HD>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           int(WholeSmem<HD>::bytes)));
  STRATA_CUDA_CHECK(cudaFuncSetAttribute(attention_tc_cluster_kernel<HD, false>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         int(ClusterSmem<HD, false>::bytes)));
  STRATA_CUDA_CHECK(cudaFuncSetAttribute(attention_tc_cluster_kernel<HD, true>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         int(ClusterSmem<HD, true>::bytes)));
}

// The whole-context kernel takes a window when every tile's context fits its splits and its blocks fit one
// wave of the device (decode of a few slots, verify windows); the cluster kernel one whose splits fit a
// cluster and whose blocks fit one wave; larger batches keep the split kernel's blocks and the merge.
template <int HD>
AttentionTcKernel kernel_for(const AttentionParams& a) {
  if (a.tc_whole && whole_fits<HD> && a.grid_splits <= kWholeSplits<HD> &&
      long(a.max_tiles) * a.n_kv_heads <= long(sm_count()))
    return AttentionTcKernel::Whole;
  if (a.tc_cluster && a.grid_splits <= kClusterSplits &&
      long(a.max_tiles) * a.n_kv_heads * a.grid_splits <= long(sm_count()))
    return AttentionTcKernel::Cluster;
  return AttentionTcKernel::Split;
}

// False when the kernel merged the splits itself (no split merge follows).
template <int HD>
bool launch_hd(const AttentionParams& a, dim3 grid, cudaStream_t stream) {
  switch (kernel_for<HD>(a)) {
    case AttentionTcKernel::Whole:
      launch_kernel(attention_tc_whole_kernel<HD>, dim3(a.n_kv_heads, a.max_tiles), kWholeThreads,
                    WholeSmem<HD>::bytes, stream, a);
      return false;
    case AttentionTcKernel::Cluster:
      if (a.tc_lean)
        launch_kernel_cluster(attention_tc_cluster_kernel<HD, true>, grid, kThreads, ClusterSmem<HD, true>::bytes,
                              stream, grid.x, a);
      else
        launch_kernel_cluster(attention_tc_cluster_kernel<HD, false>, grid, kThreads, ClusterSmem<HD, false>::bytes,
                              stream, grid.x, a);
      return false;
    case AttentionTcKernel::Split:
      break;
  }
  if (a.tc_lean)
    launch_kernel(attention_tc_kernel<HD, true>, grid, kThreads, Smem<HD, true>::bytes, stream, a);
  else
    launch_kernel(attention_tc_kernel<HD, false>, grid, kThreads, Smem<HD, false>::bytes, stream, a);
  return true;
}

}  // namespace

bool attention_tc_supports(int head_dim, KvType kv) {
  return kv == KvType::BF16 && (head_dim == 64 || head_dim == 128);
}

void configure_attention_tc(int head_dim) {
  if (head_dim == 64) configure_hd<64>();
  if (head_dim == 128) configure_hd<128>();
}

AttentionTcKernel attention_tc_kernel_for(const AttentionParams& a) {
  return a.head_dim == 64 ? kernel_for<64>(a) : a.head_dim == 128 ? kernel_for<128>(a) : AttentionTcKernel::Split;
}

void launch_attention_tc(const AttentionParams& a, cudaStream_t stream) {
  if (a.rows <= 0) return;
  if (!attention_tc_supports(a.head_dim, a.kv.type))
    throw Error("cuda attention_tc: needs a bf16 KV arena and head_dim 64 or 128 (head_dim " +
                std::to_string(a.head_dim) + ")");
  if (a.n_kv_heads <= 0 || a.n_heads % a.n_kv_heads != 0 || a.kv.kv_dim != a.n_kv_heads * a.head_dim)
    throw Error("cuda attention_tc: heads " + std::to_string(a.n_heads) + "/" + std::to_string(a.n_kv_heads) +
                " or kv_dim " + std::to_string(a.kv.kv_dim) + " unsupported");
  if (a.kv.layer_offset % 8 != 0 || !aligned16(a.kv.k) || !aligned16(a.kv.v) || a.qkv_stride % 2 != 0)
    throw Error("cuda attention_tc: the KV arena or qkv rows are misaligned");
  const dim3 grid(a.grid_splits, a.n_kv_heads, a.max_tiles);
  const bool merge = a.head_dim == 64 ? launch_hd<64>(a, grid, stream) : launch_hd<128>(a, grid, stream);
  STRATA_CUDA_CHECK_LAUNCH();
  if (merge) launch_combine(a, stream);
}

}  // namespace cuda
}  // namespace strata
