// Attention for every row of a window, decode rows and prompt-chunk rows alike (launch_attention in
// kernels.hpp). Windows of more than kAttnStagedMaxRows rows at large head dims take attention_batch.cu's
// pipelined form of the same kernel instead (launch_attention says when). A block of attention_partial takes one query tile (up to kAttnQueryTile rows of one slot at
// consecutive positions), one split of kAttnSplit positions and a chunk of the q heads of one kv head: as many
// of the group's heads as fit in kAttnQueryTile query vectors (rows x heads), so a decode row's whole GQA
// group shares one load of the split's K/V, and a 16-row verify tile takes one head per block. The split's K
// and V rows are copied into shared memory once (cp.async, K and V in flight together; for head_dim > 128 V
// goes into K's buffer once the scores are done), then three phases with a block barrier between them: every
// score of the split (a thread per position, q broadcast from shared memory), the split's softmax (a warp per
// query vector, four positions per lane, max and sum by warp butterflies), and P.V (four lanes per four
// dimensions, each lane a quarter of the positions). A split is an exact softmax over its positions (no online
// rescaling inside it); the second kernel, attention_combine, merges a row's
// splits (a warp per row and head).
//
// Why the result of a row never depends on the window: split boundaries sit at fixed multiples of kAttnSplit
// and a row only ever reads positions <= its own (causal). Each number a row computes has an order fixed by
// head_dim and positions alone: a score is four partial dot products over dimensions d = c, c + 4, c + 8, ...
// (in order), then ((c0 + c1) + (c2 + c3)), times the scale; the split's max is exact; its sum is, per lane
// (lane = position mod 32), the lane's positions in order, then a butterfly over the lanes; P.V is, per
// dimension, four partial sums over the positions j = c, c + 4, ... (in order), then ((c0 + c1) + (c2 + c3)).
// A row's positions past its own are never read (not even multiplied by zero), and a split past the row's
// position is never computed for it. The combine's weights, sums and merge run in split order (the sum of
// weights: per lane the splits s = lane, lane + 32, ..., then a butterfly), over the splits the row's position
// needs. Which other rows or heads share a block, how many rows the window has and how many splits the grid
// covers change which threads compute a number and which blocks load a K/V row, not any number a row
// computes, so a verify window of T rows gives the bits of T single-row windows. fp32 throughout, expf.
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "cuda/cuda_check.hpp"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/attention_common.cuh"
#include "cuda/kernels/kernels.hpp"
#include "cuda/kernels/kv_access.cuh"
#include "cuda/kernels/launch.cuh"

namespace strata {
namespace cuda {
namespace {

using namespace attn;

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kS = kAttnSplit;         // positions of one block
constexpr int kMaxQ = kAttnQueryTile;  // query vectors (rows x heads) of one block
constexpr int kMaxHeadDim = 256;
constexpr int kParts = 4;              // P.V partial sums (positions mod 4)
static_assert(kS == 4 * 32, "the softmax holds four positions per lane");
static_assert(kWarps == 2 * (kS / 32), "warps 0-3 copy the split's K rows, warps 4-7 its V rows, 32 each");
static_assert(kMaxQ % 4 == 0, "score groups of 2 or 4 query vectors must stay inside the q buffer");

constexpr int kCombineWarps = 4;  // heads per combine block
constexpr int kCombineBatch = 8;  // splits whose partials are loaded together

// Shared memory in float4 units: q [kMaxQ][hd4], K [kS][ks4], V [kS][vs4] (or V in K's buffer), P [kMaxQ][kS].
// Rows are head_dim rounded up to 4 floats; the padding of q and K is zero.
struct Layout {
  int hd4 = 0;  // float4 per head row
  int ks4 = 0;  // K row stride: odd, so 8 lanes reading 8 consecutive rows hit 8 distinct 16-byte bank groups
  int vs4 = 0;  // V row stride: 2 mod 8, so lanes (position mod 4) x (2 adjacent float4) hit 8 distinct groups
  int k_off = 0, v_off = 0, p_off = 0, total = 0;
};

__host__ __device__ inline Layout make_layout(int hd, bool alias) {
  Layout L;
  L.hd4 = (hd + 3) / 4;
  L.ks4 = L.hd4 | 1;
  L.vs4 = L.hd4 + ((2 - L.hd4) & 7);
  L.k_off = kMaxQ * L.hd4;
  L.v_off = alias ? L.k_off : L.k_off + kS * L.ks4;
  L.p_off = alias ? L.k_off + kS * (L.ks4 > L.vs4 ? L.ks4 : L.vs4) : L.v_off + kS * L.vs4;
  L.total = L.p_off + kMaxQ * kS / 4;
  return L;
}

size_t layout_bytes(int hd, bool alias) { return sizeof(float4) * size_t(make_layout(hd, alias).total); }

int smem_optin() {
  static const int v = [] {
    int dev = 0, bytes = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess)
      bytes = 0;
    return bytes;
  }();
  return v;
}

// V gets its own buffer (loaded together with K) unless head_dim > 128 or the device cannot hold both; then
// V is loaded into K's buffer after the scores. Only the load schedule differs, never the arithmetic.
bool alias_kv(int hd) {
  if (hd > 128) return true;
  const int optin = smem_optin();
  return optin > 0 && layout_bytes(hd, false) > size_t(optin);
}


// Element offset from the arena's base (kv.k or kv.v alike) of the head row of position s_begin + j0 + lane,
// for the lanes below the warp's row count (others 0): the window's metadata and block tables only, which the
// host wrote before the graph ran, so a block looks its rows up before pdl_wait(), while the previous kernel
// finishes.
__device__ __forceinline__ long long row_offset(const AttentionParams& a, int slot, int s_begin, int j0, int nsp,
                                                size_t head_off, int lane) {
  return lane < min(32, nsp - j0) ? static_cast<long long>(kv_offset(a.kv, slot, s_begin + j0 + lane) + head_off) : 0;
}

// One warp copies the head rows of positions s_begin + j0 .. + 31 (those below s_begin + nsp) of K or V into
// rows j0 .. of dst. Each lane holds its own position's row offset (row_offset), the warp copies whole rows
// with consecutive lanes on consecutive 16-byte pieces. Scalar path (kVec false): 4-byte copies, zero padding.
template <bool kVec>
__device__ __forceinline__ void copy_rows(float4* dst, int stride4, const void* base, const AttentionParams& a,
                                          long long off, int j0, int nsp, int hd4, int lane) {
  const int nrows = min(32, nsp - j0);
  if (nrows <= 0) return;  // warp-uniform
  const float* mine = static_cast<const float*>(base) + off;
  const unsigned long long mine_u = reinterpret_cast<unsigned long long>(mine);
  if (kVec) {
    for (int i = 0; i < hd4; ++i) {  // 32 * hd4 pieces: the same trip count on every lane (warp-wide shuffle)
      const int c = lane + 32 * i, r = c / hd4, d4 = c - r * hd4;
      const float* src = reinterpret_cast<const float*>(__shfl_sync(kFull, mine_u, r));
      if (r < nrows) cp_async16(dst + size_t(j0 + r) * stride4 + d4, src + 4 * d4);
    }
  } else {
    const int hdp = 4 * hd4, hd = a.head_dim;
    for (int i = 0; i < hdp; ++i) {
      const int c = lane + 32 * i, r = c / hdp, d = c - r * hdp;
      const float* src = reinterpret_cast<const float*>(__shfl_sync(kFull, mine_u, r));
      float* f = reinterpret_cast<float*>(dst + size_t(j0 + r) * stride4) + d;
      if (r < nrows) {
        if (d < hd) cp_async4(f, src + d);
        else *f = 0.0f;
      }
    }
  }
}

// The same rows from a bf16 arena (head_dim a multiple of 8): 16-byte loads of 8 values through registers,
// widened (exactly) into the fp32 rows the phases below read. Synchronous: the rows are in shared memory when
// it returns, so the cp.async waits that follow have nothing of it to wait for.
__device__ __forceinline__ void copy_rows_bf16(float4* dst, int stride4, const void* base, long long off, int j0,
                                               int nsp, int hd, int lane) {
  const int nrows = min(32, nsp - j0);
  if (nrows <= 0) return;  // warp-uniform
  const __nv_bfloat16* mine = static_cast<const __nv_bfloat16*>(base) + off;
  const unsigned long long mine_u = reinterpret_cast<unsigned long long>(mine);
  const int hd8 = hd / 8;
  constexpr int kBatch = 8;  // loads in flight per lane before the first store
  for (int i0 = 0; i0 < hd8; i0 += kBatch) {  // 32 * hd8 pieces of 8 values
    uint4 w[kBatch];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int c = lane + 32 * (i0 + b), r = c / hd8, u = c - r * hd8;
      const uint4* src = reinterpret_cast<const uint4*>(__shfl_sync(kFull, mine_u, min(r, 31)));
      w[b] = i0 + b < hd8 && r < nrows ? __ldg(src + u) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int c = lane + 32 * (i0 + b), r = c / hd8, u = c - r * hd8;
      if (i0 + b < hd8 && r < nrows) {
        widen_bf16x8(w[b], dst + size_t(j0 + r) * stride4 + 2 * u);
      }
    }
  }
}

// Scores of query vectors q0 .. q0 + QB - 1 at position j (a thread per (group, position)), the K row read
// once per group. Only positions a vector may read are written.
template <int QB>
__device__ __forceinline__ void scores(const float4* sQ, const float4* sK, float* sP, const Layout& L, int Q, int nh,
                                       int nsp, int lim, float scale, int tid) {
  const int groups = (Q + QB - 1) / QB;
  for (int it = tid; it < groups * kS; it += kThreads) {
    const int j = it % kS, q0 = (it / kS) * QB;
    if (j >= nsp) continue;
    float4 acc[QB];
#pragma unroll
    for (int b = 0; b < QB; ++b) acc[b] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    const float4* kr = sK + j * L.ks4;
    const float4* qr = sQ + q0 * L.hd4;
#pragma unroll 4
    for (int d4 = 0; d4 < L.hd4; ++d4) {
      const float4 k = kr[d4];
#pragma unroll
      for (int b = 0; b < QB; ++b) {
        const float4 q = qr[b * L.hd4 + d4];
        acc[b].x = __fmaf_rn(q.x, k.x, acc[b].x);
        acc[b].y = __fmaf_rn(q.y, k.y, acc[b].y);
        acc[b].z = __fmaf_rn(q.z, k.z, acc[b].z);
        acc[b].w = __fmaf_rn(q.w, k.w, acc[b].w);
      }
    }
#pragma unroll
    for (int b = 0; b < QB; ++b) {
      const int qi = q0 + b;
      // lim + row: positions of the split the vector's row may read (its own is s_begin + lim + row - 1)
      if (qi < Q && j < lim + qi / nh) {
        const float dot = __fadd_rn(__fadd_rn(acc[b].x, acc[b].y), __fadd_rn(acc[b].z, acc[b].w));
        sP[qi * kS + j] = __fmul_rn(dot, scale);
      }
    }
  }
}

template <bool kVec, bool kBf16>
__global__ void __launch_bounds__(kThreads, 2) attention_partial(AttentionParams a, int alias) {
  static_assert(kVec || !kBf16, "a bf16 arena is read with 16-byte loads");
  pdl_launch_dependents();
  extern __shared__ float4 smem4[];
  const int tile = blockIdx.z;
  // The window's metadata and block tables come from the host before the graph runs, so everything up to
  // the K/V rows' offsets is looked up before pdl_wait(), while the previous kernel finishes; q and the K/V
  // rows themselves (this window's are the previous kernel's output) are read after it.
  // Tile 0 and row 0 exist in every window: their metadata is read together with the tile count, so a
  // one-tile window (decode) waits for one round trip here instead of three dependent ones.
  // (Volatile loads: the compiler would otherwise move the four row-0 loads behind the exit test.)
  const int n_tiles = load_now(a.n_tiles), first0 = load_now(a.tile_first), rows0 = load_now(a.tile_rows);
  const int pos0 = load_now(a.pos), slot0 = load_now(a.slot);
  if (tile >= n_tiles) return;
  const int row0 = tile == 0 ? first0 : a.tile_first[tile];
  const int nq = tile == 0 ? rows0 : a.tile_rows[tile];
  const int G = a.n_heads / a.n_kv_heads;
  const int h0 = blockIdx.y, g = h0 / G, hl = h0 - g * G;
  const int hc = max(1, min(G, kMaxQ / nq));  // heads per block for this tile
  if (hl % hc != 0) return;                  // the chunk's first head's block does the chunk
  const int nh = min(hc, G - hl), Q = nq * nh;  // query vector qi = r * nh + hh: row row0 + r, head h0 + hh
  const int split = blockIdx.x, s_begin = split * kS;
  const int hd = a.head_dim;
  const Layout L = make_layout(hd, alias != 0);
  float4* sQ = smem4;
  float4* sK = smem4 + L.k_off;
  float4* sV = smem4 + L.v_off;
  float* sP = reinterpret_cast<float*>(smem4 + L.p_off);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;

  const int p0 = row0 == 0 ? pos0 : a.pos[row0];
  const int slot = row0 == 0 ? slot0 : a.slot[row0];
  const int plast = p0 + nq - 1;
  if (s_begin > plast) return;
  const int nsp = min(kS, plast + 1 - s_begin);  // positions of the split any row of the tile reads
  const int lim = p0 + 1 - s_begin;               // row r reads positions j < lim + r of the split (capped at kS)
  const size_t head_off = size_t(g) * hd;
  // Warps w and w + 4 copy the same 32 positions (K and V rows; with alias, warp w both).
  const long long off = row_offset(a, slot, s_begin, 32 * (warp & 3), nsp, head_off, lane);
  pdl_wait();  // q and this window's K/V rows are the previous kernel's output

  if (kVec) {
    for (int i = tid; i < Q * L.hd4; i += kThreads) {
      const int qi = i / L.hd4, d4 = i - qi * L.hd4, r = qi / nh, hh = qi - r * nh;
      cp_async16(sQ + i, a.qkv + size_t(row0 + r) * a.qkv_stride + size_t(h0 + hh) * hd + 4 * d4);
    }
  } else {
    const int hdp = 4 * L.hd4;
    for (int i = tid; i < Q * hdp; i += kThreads) {
      const int qi = i / hdp, d = i - qi * hdp, r = qi / nh, hh = qi - r * nh;
      float* f = reinterpret_cast<float*>(sQ) + i;
      if (d < hd) cp_async4(f, a.qkv + size_t(row0 + r) * a.qkv_stride + size_t(h0 + hh) * hd + d);
      else *f = 0.0f;
    }
  }
  cp_async_commit();
  auto rows = [&](float4* dst, int stride4, const void* base, int j0) {
    if (kBf16) copy_rows_bf16(dst, stride4, base, off, j0, nsp, hd, lane);
    else copy_rows<kVec>(dst, stride4, base, a, off, j0, nsp, L.hd4, lane);
  };
  if (warp < 4) rows(sK, L.ks4, a.kv.k, 32 * warp);
  else if (!alias) rows(sV, L.vs4, a.kv.v, 32 * (warp - 4));
  cp_async_commit();
  if (warp < 4 || alias) cp_async_wait<0>();
  else cp_async_wait<1>();  // V warps: their own q copies are done; their V rows may still be in flight
  __syncthreads();

  // Phase 1: scores.
  if (Q <= 4) scores<2>(sQ, sK, sP, L, Q, nh, nsp, lim, a.scale, tid);
  else scores<4>(sQ, sK, sP, L, Q, nh, nsp, lim, a.scale, tid);
  __syncthreads();
  if (alias) {  // V into K's buffer, in flight during the softmax
    if (warp < 4) rows(sV, L.vs4, a.kv.v, 32 * warp);
    cp_async_commit();
  }

  // Phase 2: the split's softmax, a warp per query vector; lane holds positions lane + 32k.
  for (int qi = warp; qi < Q; qi += kWarps) {
    const int r = qi / nh, hh = qi - r * nh;
    const int nv = min(kS, lim + r);
    if (nv <= 0) continue;  // the row's position is before this split: nothing to compute or write
    split_softmax(sP + qi * kS, nv, lane, a.part_ml, (size_t(row0 + r) * a.n_heads + h0 + hh) * a.max_splits + split);
  }
  cp_async_wait<0>();
  __syncthreads();

  // Phase 3: P.V. Item (qi, d4, c): dimensions 4 d4 .. 4 d4 + 3 of vector qi over positions j = c mod 4; the
  // four c of an item sit in adjacent lanes and are added by two butterflies.
  const int nitems = Q * L.hd4 * kParts;
  for (int base = 0; base < nitems; base += kThreads) {  // the same trip count on every thread (shuffles)
    const int it = base + tid, c = it & (kParts - 1), rest = it / kParts;
    const int qi = rest / L.hd4, d4 = rest - qi * L.hd4;
    const int r = qi / nh;
    const int nv = it < nitems ? min(kS, lim + r) : 0;
    float4 o = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    const float* pr = sP + qi * kS;
#pragma unroll 4
    for (int j = c; j < nv; j += kParts) {
      const float p = pr[j];
      const float4 v = sV[j * L.vs4 + d4];
      o.x = __fmaf_rn(p, v.x, o.x);
      o.y = __fmaf_rn(p, v.y, o.y);
      o.z = __fmaf_rn(p, v.z, o.z);
      o.w = __fmaf_rn(p, v.w, o.w);
    }
    o = add_position_classes(o);
    if (c == 0 && nv > 0) {
      const int hh = qi - r * nh;
      const size_t cell = (size_t(row0 + r) * a.n_heads + h0 + hh) * a.max_splits + split;
      store_pv<kVec>(a.part_acc + cell * hd + 4 * d4, o, d4, hd);
    }
  }
}

// Merges a row's splits: weights w_s = exp(m_s - M) against the largest split max M, L = sum l_s w_s, out =
// (sum acc_s w_s) / L. A warp per (row, head); lane l holds dimensions l, l + 32, ... (kDims of them). The
// partials are read kCombineBatch splits at a time, all loads of a batch before its FMAs, and the first batch
// together with the position and the first 32 (m, l) (entries past the row's splits are in bounds and
// ignored), so a row of up to kCombineBatch splits waits for one round trip.
template <int kDims>
__global__ void __launch_bounds__(kCombineWarps * 32) attention_combine(AttentionParams a) {
  pdl_wait();
  pdl_launch_dependents();
  const int lane = threadIdx.x & 31;
  const int r = blockIdx.x, h = blockIdx.y * kCombineWarps + (threadIdx.x >> 5);
  if (h >= a.n_heads) return;  // no block barrier below
  const int hd = a.head_dim;
  const size_t cell0 = (size_t(r) * a.n_heads + h) * a.max_splits;
  const float* acc = a.part_acc + cell0 * hd;
  const float* ml = a.part_ml + cell0 * 2;  // (m, l) of split s at 2 s

  float v[kCombineBatch][kDims];
  const int nfirst = min(kCombineBatch, a.max_splits);
#pragma unroll
  for (int k = 0; k < kCombineBatch; ++k)
#pragma unroll
    for (int e = 0; e < kDims; ++e) {
      const int d = lane + 32 * e;
      v[k][e] = k < nfirst && d < hd ? acc[size_t(k) * hd + d] : 0.0f;
    }
  const float m0 = lane < a.max_splits ? ml[2 * lane] : -INFINITY;
  const float l0 = lane < a.max_splits ? ml[2 * lane + 1] : 0.0f;
  const int ns = a.pos[r] / kS + 1;

  float M = lane < ns ? m0 : -INFINITY;
  for (int sp = lane + 32; sp < ns; sp += 32) M = fmaxf(M, ml[2 * sp]);
#pragma unroll
  for (int o = 16; o >= 1; o /= 2) M = fmaxf(M, __shfl_xor_sync(kFull, M, o));
  float Lsum = 0.0f, wc = 0.0f;  // wc: the weight of split (lane + 32 * chunk)
  if (lane < ns) {
    wc = expf(m0 - M);
    Lsum = __fmaf_rn(l0, wc, Lsum);
  }
  for (int sp = lane + 32; sp < ns; sp += 32) Lsum = __fmaf_rn(ml[2 * sp + 1], expf(ml[2 * sp] - M), Lsum);
#pragma unroll
  for (int o = 16; o >= 1; o /= 2) Lsum = __fadd_rn(Lsum, __shfl_xor_sync(kFull, Lsum, o));

  float out[kDims];
#pragma unroll
  for (int e = 0; e < kDims; ++e) out[e] = 0.0f;
  static_assert(32 % kCombineBatch == 0, "a batch never straddles 32 splits");
  for (int sp0 = 0; sp0 < ns; sp0 += kCombineBatch) {  // warp-uniform
    if (sp0 > 0) {
      if ((sp0 & 31) == 0) {
        const int s2 = sp0 + lane;
        wc = s2 < ns ? expf(ml[2 * s2] - M) : 0.0f;
      }
#pragma unroll
      for (int k = 0; k < kCombineBatch; ++k)
#pragma unroll
        for (int e = 0; e < kDims; ++e) {
          const int d = lane + 32 * e, sp = sp0 + k;
          v[k][e] = sp < ns && d < hd ? acc[size_t(sp) * hd + d] : 0.0f;
        }
    }
#pragma unroll
    for (int k = 0; k < kCombineBatch; ++k) {
      if (sp0 + k < ns) {  // warp-uniform
        const float w = __shfl_sync(kFull, wc, (sp0 + k) & 31);
#pragma unroll
        for (int e = 0; e < kDims; ++e) out[e] = __fmaf_rn(v[k][e], w, out[e]);
      }
    }
  }

  __nv_bfloat16* out16 = static_cast<__nv_bfloat16*>(a.out16.p);
  const size_t rem = a.out16.split ? size_t(a.rows) * a.n_heads * hd : 0;
  const size_t o0 = size_t(r) * a.n_heads * hd + size_t(h) * hd;
#pragma unroll
  for (int e = 0; e < kDims; ++e) {
    const int d = lane + 32 * e;
    if (d < hd) {
      const float o = __fdiv_rn(out[e], Lsum);
      a.out[o0 + d] = o;
      if (out16) store_bf16_split(out16 + o0 + d, rem, o);
    }
  }
}

}  // namespace

size_t attention_smem_bytes(int hd) { return layout_bytes(hd, alias_kv(hd)); }

void configure_attention(int head_dim) {
  // The attribute is only a cap: set it for the largest head_dim, so configuring one head_dim never
  // breaks another.
  size_t bytes = layout_bytes(kMaxHeadDim, true);
  for (int hd = 4; hd <= kMaxHeadDim; hd += 4) bytes = std::max(bytes, attention_smem_bytes(hd));
  const int optin = smem_optin();
  if (optin > 0) bytes = std::min(bytes, size_t(optin));
  const cudaFuncAttribute attr = cudaFuncAttributeMaxDynamicSharedMemorySize;
  STRATA_CUDA_CHECK(cudaFuncSetAttribute(attention_partial<true, false>, attr, int(bytes)));
  STRATA_CUDA_CHECK(cudaFuncSetAttribute(attention_partial<false, false>, attr, int(bytes)));
  STRATA_CUDA_CHECK(cudaFuncSetAttribute(attention_partial<true, true>, attr, int(bytes)));
  configure_attention_ring();
  configure_attention_tc(head_dim);
}


void attn::check_bf16_arena(const AttentionParams& a, bool vec) {
  if (!vec || a.head_dim % 8 != 0 || a.kv.kv_dim % 8 != 0 || a.kv.layer_offset % 8 != 0)
    throw Error("cuda attention: a bf16 KV arena needs head_dim and kv_dim multiples of 8 and 16-byte aligned "
                "rows (head_dim " + std::to_string(a.head_dim) + ")");
}


void launch_attention(const AttentionParams& a, cudaStream_t stream) {
  if (a.rows <= 0) return;
  if (a.head_dim <= 0 || a.head_dim > kMaxHeadDim || a.n_kv_heads <= 0 || a.n_heads % a.n_kv_heads != 0)
    throw Error("cuda attention: head_dim " + std::to_string(a.head_dim) + " (max " + std::to_string(kMaxHeadDim) +
                ") or heads " + std::to_string(a.n_heads) + "/" + std::to_string(a.n_kv_heads) + " unsupported");
  // Few rows (decode of a few slots, verify windows): every block stages its whole split, which has the fewest
  // dependent round trips. Many rows, when a staged block is too large for two to share an SM (head_dim 128+):
  // the ring-pipelined kernel (attention_batch.cu). On the H200 that is 154 against 210 us per layer for 128
  // decode rows at head_dim 128, while at head_dim 64 (two staged blocks an SM) the staged kernel is faster.
  // Both compute the same bits, so the choice cannot change a row's result.
  const bool alias = alias_kv(a.head_dim);
  const size_t smem = layout_bytes(a.head_dim, alias);
  if (a.rows > kAttnStagedMaxRows && 2 * smem > size_t(smem_optin())) {
    launch_attention_partial_ring(a, stream);
    launch_combine(a, stream);
    return;
  }
  // 16-byte copies and stores when every row the kernel touches starts on 16 bytes; else 4-byte ones (the
  // same arithmetic).
  const bool vec = a.head_dim % 4 == 0 && a.qkv_stride % 4 == 0 && a.kv.kv_dim % 4 == 0 && a.kv.layer_offset % 4 == 0 &&
                   aligned16(a.qkv) && aligned16(a.kv.k) && aligned16(a.kv.v) && aligned16(a.part_acc);
  const dim3 grid(a.grid_splits, a.n_heads, a.max_tiles);
  if (a.kv.type == KvType::BF16) {
    check_bf16_arena(a, vec);
    launch_kernel(attention_partial<true, true>, grid, kThreads, smem, stream, a, int(alias));
  } else if (vec) {
    launch_kernel(attention_partial<true, false>, grid, kThreads, smem, stream, a, int(alias));
  } else {
    launch_kernel(attention_partial<false, false>, grid, kThreads, smem, stream, a, int(alias));
  }
  STRATA_CUDA_CHECK_LAUNCH();
  launch_combine(a, stream);
}

void attn::launch_combine(const AttentionParams& a, cudaStream_t stream) {
  const dim3 cgrid(a.rows, (a.n_heads + kCombineWarps - 1) / kCombineWarps);
  const int cthreads = kCombineWarps * 32;
  if (a.head_dim <= 32) launch_kernel(attention_combine<1>, cgrid, cthreads, 0, stream, a);
  else if (a.head_dim <= 64) launch_kernel(attention_combine<2>, cgrid, cthreads, 0, stream, a);
  else if (a.head_dim <= 128) launch_kernel(attention_combine<4>, cgrid, cthreads, 0, stream, a);
  else launch_kernel(attention_combine<kMaxHeadDim / 32>, cgrid, cthreads, 0, stream, a);
  STRATA_CUDA_CHECK_LAUNCH();
}

}  // namespace cuda
}  // namespace strata
