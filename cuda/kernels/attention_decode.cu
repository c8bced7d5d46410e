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

template <int HD, bool kLean>
__global__ void __launch_bounds__(kThreads, kLean ? 3 : 1) attention_tc_kernel(AttentionParams a) {
  using S = Smem<HD, kLean>;
  constexpr int KS = HD / 16, NB = HD / 8, U = HD / 8, kMergeRows = S::kMergeRows;
  constexpr int DP = S::DP, NBP = NB / DP, HP = HD / DP;
  static_assert(kM * kQLd<HD> * 4 <= kWarps * kMergeRows * S::MLD * 4, "a chunk's staged q fits the merge buffer");
  pdl_launch_dependents();
  extern __shared__ __align__(16) unsigned char smem[];
  __nv_bfloat16* ks = reinterpret_cast<__nv_bfloat16*>(smem + S::k_off);
  __nv_bfloat16* vs = reinterpret_cast<__nv_bfloat16*>(smem + S::v_off);
  long long* sOff = reinterpret_cast<long long*>(smem + S::off_off);
  float* merge = reinterpret_cast<float*>(smem + S::merge_off);
  float* qs = merge;  // the chunk's staged q, until P.V
  float* sML = reinterpret_cast<float*>(smem + S::ml_off);

  // The window's metadata and block tables come from the host before the graph runs, not from the previous
  // kernel, so the lookups that place the split's K/V rows run before pdl_wait(): under PDL they overlap the
  // previous kernel's tail.
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
  const int gid = lane >> 2, tig = lane & 3;

  // The K/V rows this window writes for the slot start at the least position of the slot's rows in the window
  // (a decode row's own); the split's rows before it were written by earlier windows, so their copies go
  // out before pdl_wait() too, and only the window's own rows wait for the previous kernel.
  __shared__ int s_first;
  if (a.rows > 1) {
    if (tid == 0) s_first = p0;
    __syncthreads();
    for (int r = tid; r < a.rows; r += kThreads)
      if (a.slot[r] == slot) atomicMin(&s_first, a.pos[r]);
  }
  if (tid < nsp) sOff[tid] = static_cast<long long>(kv_offset(a.kv, slot, s_begin + tid)) + static_cast<long long>(g) * HD;
  __syncthreads();
  const int first = a.rows > 1 ? s_first : p0;
  const int pre = max(0, min(nsp, first - s_begin));  // the split's rows written before this window
  const __nv_bfloat16* kb = static_cast<const __nv_bfloat16*>(a.kv.k);
  const __nv_bfloat16* vb = static_cast<const __nv_bfloat16*>(a.kv.v);
  auto copy_rows = [&](int j0, int j1) {
    for (int i = j0 * U + tid; i < j1 * U; i += kThreads) {  // consecutive threads: consecutive 16 bytes of a row
      const int j = i / U, u = i - j * U;
      cp_async16(ks + S::at(j, u), kb + sOff[j] + 8 * u);
      cp_async16(vs + S::at(j, u), vb + sOff[j] + 8 * u);
    }
    cp_async_commit();
  };
  copy_rows(0, pre);
  pdl_wait();  // K/V of this window's rows and q are the previous kernel's output
  copy_rows(pre, nsp);
  // V rows past the split's last are zeros (their P is zero; 0 x garbage could be NaN). K rows there are
  // never used unmasked.
  for (int i = tid; i < (kS - nsp) * U; i += kThreads) {
    const int j = nsp + i / U, u = i % U;
    *reinterpret_cast<uint4*>(vs + S::at(j, u)) = make_uint4(0, 0, 0, 0);
  }

  const int Q = nq * G;  // query vector qi: row qi / G of the tile, head g G + qi % G
  const int jw = warp * kWarpPos;
  for (int c0 = 0; c0 < Q; c0 += kM) {
    // Stage the chunk's q (the first chunk's while K and V are in flight), then take vectors c0 + gid
    // (fragment rows 0-7) and c0 + gid + 8 (rows 8-15) from it as hi and remainder A fragments: all k-steps
    // up front (plain), or each when the S loop reaches it (lean).
    for (int i = tid; i < kM * (HD / 4); i += kThreads) {
      const int m = i / (HD / 4), d = 4 * (i - m * (HD / 4)), qi = c0 + m;
      const float4 v = qi < Q ? *reinterpret_cast<const float4*>(a.qkv + size_t(row0 + qi / G) * a.qkv_stride +
                                                                 size_t(g * G + qi % G) * HD + d)
                              : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      *reinterpret_cast<float4*>(qs + m * kQLd<HD> + d) = v;
    }
    int rr[2];
    bool ok[2];
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int qi = c0 + gid + 8 * half;
      ok[half] = qi < Q;
      rr[half] = ok[half] ? qi / G : 0;
    }
    if (c0 == 0) cp_async_wait<0>();
    __syncthreads();  // q staged; K and V (and V's zero rows) visible to every warp
    constexpr int QS = kLean ? 1 : KS;  // k-steps of q held at once
    uint32_t qh[QS][4], ql[QS][4];
    if (!kLean) {
#pragma unroll
      for (int s = 0; s < QS; ++s) load_q<HD>(qs, gid, s, tig, qh[s], ql[s]);
    }

    // S for the warp's positions jw + 8 n + (2 tig, 2 tig + 1), n < 2: rows gid ([0], [1]) and gid + 8 ([2], [3]).
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
        sc[n][e] = in ? __fmul_rn(sc[n][e], a.scale) : -INFINITY;
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
        sML[(warp * kM + gid + 8 * half) * 2] = mx[half];
        sML[(warp * kM + gid + 8 * half) * 2 + 1] = sum[half];
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
            if (m >= 0 && m < kMergeRows) merge[(warp * kMergeRows + m) * S::MLD + d] = __fmul_rn(o[n][e], f[e >> 1]);
          }
        __syncthreads();
        for (int i = tid; i < kMergeRows * HP; i += kThreads) {
          const int mr = i / HP, d = i - mr * HP, m = m0 + mr, qi = c0 + m;
          if (m >= nv) break;
          const int r = qi / G;
          if (lim + r <= 0) continue;  // the vector's row ends before this split: never read
          float acc = merge[mr * S::MLD + d];
          for (int w = 1; w < kWarps; ++w) acc = __fadd_rn(acc, merge[(w * kMergeRows + mr) * S::MLD + d]);
          const size_t cell = (size_t(row0 + r) * a.n_heads + size_t(g * G + qi % G)) * a.max_splits + split;
          a.part_acc[cell * HD + dp * HP + d] = acc;
          if (dp == 0 && d == 0) {
            float M = -INFINITY, L = 0.0f;
            for (int w = 0; w < kWarps; ++w) M = fmaxf(M, sML[(w * kM + m) * 2]);
            for (int w = 0; w < kWarps; ++w) {
              const float mw = sML[(w * kM + m) * 2];
              if (mw != -INFINITY) L = __fadd_rn(L, __fmul_rn(sML[(w * kM + m) * 2 + 1], expf(__fsub_rn(mw, M))));
            }
            a.part_ml[cell * 2] = M;
            a.part_ml[cell * 2 + 1] = L;
          }
        }
        __syncthreads();  // the merge buffer is rewritten next round
      }
    }
    __syncthreads();  // the next chunk rewrites sML and the merge buffer
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

template <int HD>
void configure_hd() {
  configure_one<HD, false>();
  configure_one<HD, true>();
}

template <int HD>
void launch_hd(const AttentionParams& a, dim3 grid, cudaStream_t stream) {
  if (a.tc_lean)
    launch_kernel(attention_tc_kernel<HD, true>, grid, kThreads, Smem<HD, true>::bytes, stream, a);
  else
    launch_kernel(attention_tc_kernel<HD, false>, grid, kThreads, Smem<HD, false>::bytes, stream, a);
}

}  // namespace

bool attention_tc_supports(int head_dim, KvType kv) {
  return kv == KvType::BF16 && (head_dim == 64 || head_dim == 128);
}

void configure_attention_tc(int head_dim) {
  if (head_dim == 64) configure_hd<64>();
  if (head_dim == 128) configure_hd<128>();
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
  if (a.head_dim == 64) launch_hd<64>(a, grid, stream);
  else launch_hd<128>(a, grid, stream);
  STRATA_CUDA_CHECK_LAUNCH();
  launch_combine(a, stream);
}

}  // namespace cuda
}  // namespace strata
