// The attention kernel of launch_attention (attention.cu) for windows of more than kAttnStagedMaxRows rows
// (decode batches): the same inputs, outputs and arithmetic as attention.cu's staged kernel, bit for bit, with
// K/V streamed through a pipeline so that many blocks share an SM. A block of attention_partial_ring takes one
// query tile, one split of kAttnSplit positions and one kv head, and does the chunks of that kv head's q heads
// that its y index names: a chunk is as many of the group's heads as fit in kAttnQueryTile query vectors (rows
// x heads). The grid has one block per kv head for windows whose tiles are (almost surely) single rows
// (max_tiles >= rows), so no block exits idle, and one per q head otherwise; the block loops over its chunks.
//
// K and V stream through shared memory in tiles of kTile positions: a ring of `ring` tile buffers, cp.async
// with ring - 1 tiles in flight while the block computes on the oldest. The launcher picks the ring from the
// grid size: a whole split (8 tiles) when every block has an SM of its own, else as many buffers as fit when
// kMinBlocks blocks share an SM (hd 128: 3, 68 KB a block; hd 64: 6; hd 256: 2, and two blocks an SM). The
// sequence of tiles is the split's K tiles, then its V tiles (once per P.V pass; more than one pass only for
// head_dim > 128 with more than 8 query vectors). The block-table lookups of the split's positions are done
// once (one offset per position in shared memory). Per K tile: every score of the tile, four lanes per
// (position, group of up to 8 query vectors), lane c holding the dot product's partial sum over dimensions
// d = c mod 4, q read from a component-major copy so one 16-byte load feeds four vectors. After the last K
// tile: the split's softmax (a warp per query vector, four positions per lane, max and sum by warp
// butterflies). Per V tile: P.V, a thread per (dimension quad d4, position class c = j mod 4, set of up to 8
// query vectors), accumulators kept in registers across the V tiles, the four classes added by two butterflies
// after the last tile.
//
// The orders are attention.cu's: a score is four partial dot products over dimensions d = c, c + 4, c + 8, ...
// (in order), then ((c0 + c1) + (c2 + c3)), times the scale; the split's max is exact; its sum is, per lane
// (lane = position mod 32), the lane's positions in order, then a butterfly over the lanes; P.V is, per
// dimension, four partial sums over the positions j = c, c + 4, ... (in order, tile after tile), then
// ((c0 + c1) + (c2 + c3)). A row's positions past its own are never read. So a row gets the same bits from
// this kernel and from the staged one, and neither depends on the window's other rows.
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
constexpr int kMinBlocks = 3;          // blocks per SM the register budget allows (__launch_bounds__)
constexpr int kS = kAttnSplit;         // positions of one split
constexpr int kTile = 32;              // positions of one staged K or V tile
constexpr int kSplitTiles = kS / kTile;
constexpr int kMaxRing = 2 * kSplitTiles;  // a whole split's K and V in flight
constexpr int kMaxQ = kAttnQueryTile;  // query vectors (rows x heads) of one chunk
constexpr int kMaxHeadDim = 256;
constexpr int kPvQ = 8;                // P.V: query vectors per thread in one pass
static_assert(kS == 4 * 32, "the softmax holds four positions per lane");
static_assert(kS % kTile == 0 && kTile % 4 == 0, "tiles start on position classes j mod 4 = 0");
static_assert(2 * 4 * kTile == kThreads, "scores: two groups of kTile positions x 4 partial sums fill the block");
static_assert(kMaxQ <= 2 * 8, "scores: two groups of at most 8 query vectors cover a chunk");
static_assert(kMaxQ % 8 == 0, "score groups of 8 vectors stay inside the q planes");

// Shared memory in float4 units: q [4][qcs floats] (component plane c holds q[qi][4 d4 + c] at d4 * kMaxQ +
// qi), P [kMaxQ][kS] floats, the split's row offsets [kS] (int64), then the ring of tile buffers, each kTile
// rows of max(ks4, vs4) float4. Rows are head_dim rounded up to 4 floats; the padding of q and K is zero.
// A bf16 arena's ring holds the tiles as stored (kTile rows of head_dim bf16, packed) and one more buffer of
// the fp32 layout, the work tile, takes the tile being computed on, widened.
struct Layout {
  int hd4 = 0;   // float4 per head row
  int ks4 = 0;   // K row stride: odd, so 8 lanes reading 8 consecutive rows hit 8 distinct banks
  int vs4 = 0;   // V row stride: 2 mod 8, so lanes (position mod 4) x (2 adjacent float4) hit 8 distinct groups
  int slot4 = 0; // one fp32 tile buffer
  int raw4 = 0;  // one ring buffer: slot4, or a packed bf16 tile
  int qcs = 0;   // floats per q plane: kMaxQ * hd4 + 4 (the 4: the planes' 16-byte loads hit distinct banks)
  int p_off = 0, off_off = 0, work_off = 0, ring_off = 0, total = 0;
};

__host__ __device__ inline Layout make_layout(int hd, int ring, bool bf16) {
  Layout L;
  L.hd4 = (hd + 3) / 4;
  L.ks4 = L.hd4 | 1;
  L.vs4 = L.hd4 + ((2 - L.hd4) & 7);
  L.slot4 = kTile * (L.ks4 > L.vs4 ? L.ks4 : L.vs4);
  L.raw4 = bf16 ? kTile * ((hd + 7) / 8) : L.slot4;
  L.qcs = kMaxQ * L.hd4 + 4;
  L.p_off = L.qcs;  // 4 planes of qcs floats
  L.off_off = L.p_off + kMaxQ * kS / 4;
  L.work_off = L.off_off + kS / 2;
  L.ring_off = L.work_off + (bf16 ? L.slot4 : 0);
  L.total = L.ring_off + ring * L.raw4;
  return L;
}

size_t smem_bytes(int hd, int ring, bool bf16) { return sizeof(float4) * size_t(make_layout(hd, ring, bf16).total); }

struct DeviceLimits {
  int optin = 0;     // dynamic shared memory one block may opt in to
  int per_sm = 0;    // shared memory of one SM
  int reserved = 0;  // shared memory the system reserves per block
  int sms = 0;
};

const DeviceLimits& device_limits() {
  static const DeviceLimits v = [] {
    DeviceLimits d;
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return d;
    if (cudaDeviceGetAttribute(&d.optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess) d.optin = 0;
    if (cudaDeviceGetAttribute(&d.per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev) != cudaSuccess)
      d.per_sm = 0;
    if (cudaDeviceGetAttribute(&d.reserved, cudaDevAttrReservedSharedMemoryPerBlock, dev) != cudaSuccess)
      d.reserved = 0;
    if (cudaDeviceGetAttribute(&d.sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) d.sms = 0;
    return d;
  }();
  return v;
}

// The largest useful ring for head_dim that one block can hold (at least 2).
int ring_max(int hd, bool bf16) {
  const Layout L0 = make_layout(hd, 0, bf16);
  int r = kMaxRing;
  const int optin = device_limits().optin;
  if (optin > 0) {
    const long long fit = (static_cast<long long>(optin) - 16LL * L0.total) / (16LL * L0.raw4);
    r = int(std::min<long long>(r, fit));
  }
  return std::max(r, 2);
}

// The ring for a grid of `blocks`: as large as the shared memory of the blocks that share an SM allows, for at
// most kMinBlocks blocks per SM (what the registers allow). Small grids get the whole split in flight.
int pick_ring(int hd, long long blocks, bool bf16) {
  const DeviceLimits& d = device_limits();
  const int rmax = ring_max(hd, bf16);
  if (d.sms <= 0 || d.per_sm <= 0) return rmax;
  const long long per_sm = std::min<long long>(kMinBlocks, std::max<long long>(1, (blocks + d.sms - 1) / d.sms));
  const long long budget = d.per_sm / per_sm - d.reserved;
  const Layout L0 = make_layout(hd, 0, bf16);
  const long long r = (budget - 16LL * L0.total) / (16LL * L0.raw4);
  return int(std::min<long long>(rmax, std::max<long long>(2, r)));
}

// Waits until at most n of this thread's committed groups are pending (n < kMaxRing - 1).
__device__ __forceinline__ void cp_async_wait_n(int n) {
  static_assert(kMaxRing - 2 == 6, "one case per ring size");
  switch (n) {
    case 6: cp_async_wait<6>(); break;
    case 5: cp_async_wait<5>(); break;
    case 4: cp_async_wait<4>(); break;
    case 3: cp_async_wait<3>(); break;
    case 2: cp_async_wait<2>(); break;
    case 1: cp_async_wait<1>(); break;
    default: cp_async_wait<0>(); break;
  }
}

// The scores of K tile t (positions t kTile + jl of the split) for query vectors q0 .. q0 + QB - 1, q0 = grp QB:
// lane c of each four sums dimensions d = c mod 4 (in order), two butterflies add the four partials as
// ((c0 + c1) + (c2 + c3)). Lanes of positions past the split's last read the last loaded row (never stored).
// Only positions a vector may read are written.
template <int QB>
__device__ __forceinline__ void score_tile(const float* sQ, const float4* buf, float* sP, const Layout& L, int Q,
                                           int nh, int t, int nsp, int lim, float scale) {
  // lanes: (group, position in tile jl, partial sum c), c fastest
  const int c = threadIdx.x & 3, jl = (threadIdx.x >> 2) & (kTile - 1), grp = threadIdx.x / (4 * kTile);
  const int q0 = grp * QB;
  if (q0 >= Q) return;  // a whole group: four whole warps
  const int j = t * kTile + jl;
  const int jr = min(j, nsp - 1) - t * kTile;
  const float* kr = reinterpret_cast<const float*>(buf + jr * L.ks4) + c;
  const float* qr = sQ + c * L.qcs + q0;
  float acc[QB];
#pragma unroll
  for (int b = 0; b < QB; ++b) acc[b] = 0.0f;
#pragma unroll(QB >= 8 ? 2 : 4)
  for (int d4 = 0; d4 < L.hd4; ++d4) {
    const float k = kr[4 * d4];
    const float* qd = qr + d4 * kMaxQ;
    float q[QB];
    if constexpr (QB == 1) {
      q[0] = qd[0];
    } else if constexpr (QB == 2) {
      const float2 v = *reinterpret_cast<const float2*>(qd);
      q[0] = v.x;
      q[1] = v.y;
    } else {
#pragma unroll
      for (int b4 = 0; b4 < QB / 4; ++b4) {
        const float4 v = reinterpret_cast<const float4*>(qd)[b4];
        q[4 * b4] = v.x;
        q[4 * b4 + 1] = v.y;
        q[4 * b4 + 2] = v.z;
        q[4 * b4 + 3] = v.w;
      }
    }
#pragma unroll
    for (int b = 0; b < QB; ++b) acc[b] = __fmaf_rn(q[b], k, acc[b]);
  }
#pragma unroll
  for (int b = 0; b < QB; ++b) {
    float s = __fadd_rn(acc[b], __shfl_xor_sync(kFull, acc[b], 1));  // c0 + c1 (c2 + c3 on lanes 2, 3)
    s = __fadd_rn(s, __shfl_xor_sync(kFull, s, 2));
    const int qi = q0 + b;
    // lim + row: positions of the split the vector's row may read (its own is s_begin + lim + row - 1)
    if (c == 0 && qi < Q && j < lim + qi / nh) sP[qi * kS + j] = __fmul_rn(s, scale);
  }
}

template <bool kVec, bool kBf16>
__global__ void __launch_bounds__(kThreads, kMinBlocks) attention_partial_ring(AttentionParams a, int ring) {
  static_assert(kVec || !kBf16, "a bf16 arena is read with 16-byte copies");
  pdl_wait();
  pdl_launch_dependents();
  extern __shared__ float4 smem4[];
  const int tile = blockIdx.z;
  // Tile 0 exists in every window: its metadata is read together with the tile count. The position and slot
  // of row `guess` come in the same round trip: the tile's first row when tile t starts at row t (decode
  // windows), so such a tile waits for one dependent round trip at most.
  // (Volatile loads: the compiler would otherwise move them behind the exit test.)
  const int guess = min(tile, a.rows - 1);
  const int n_tiles = load_now(a.n_tiles), first0 = load_now(a.tile_first), rows0 = load_now(a.tile_rows);
  const int pos_g = load_now(a.pos + guess), slot_g = load_now(a.slot + guess);
  if (tile >= n_tiles) return;
  const int row0 = tile == 0 ? first0 : a.tile_first[tile];
  const int nq = tile == 0 ? rows0 : a.tile_rows[tile];
  const int G = a.n_heads / a.n_kv_heads;
  const int Y = gridDim.y / a.n_kv_heads;  // blocks per kv head
  const int g = blockIdx.y / Y, yy = blockIdx.y - g * Y;
  const int hc = max(1, min(G, kMaxQ / nq));  // heads per chunk for this tile
  const int nchunks = (G + hc - 1) / hc;
  if (yy >= nchunks) return;
  const int p0 = row0 == guess ? pos_g : a.pos[row0];
  const int slot = row0 == guess ? slot_g : a.slot[row0];
  const int plast = p0 + nq - 1;
  const int split = blockIdx.x, s_begin = split * kS;
  if (s_begin > plast) return;
  const int nsp = min(kS, plast + 1 - s_begin);  // positions of the split any row of the tile reads
  const int lim = p0 + 1 - s_begin;               // row r reads positions j < lim + r of the split (capped at kS)
  const int hd = a.head_dim;
  const Layout L = make_layout(hd, ring, kBf16);
  float* sQ = reinterpret_cast<float*>(smem4);
  float* sP = reinterpret_cast<float*>(smem4 + L.p_off);
  long long* sOff = reinterpret_cast<long long*>(smem4 + L.off_off);
  float4* sRing = smem4 + L.ring_off;
  float4* sWork = smem4 + L.work_off;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;

  // q of a chunk, component-major (4-byte copies); the padding past head_dim is zero.
  auto issue_q = [&](int h0, int nh, int Q) {
    const int hdp = 4 * L.hd4;
    for (int i = tid; i < Q * hdp; i += kThreads) {
      const int qi = i / hdp, d = i - qi * hdp, r = qi / nh, hh = qi - r * nh;
      float* f = sQ + (d & 3) * L.qcs + (d >> 2) * kMaxQ + qi;
      if (d < hd) cp_async4(f, a.qkv + size_t(row0 + r) * a.qkv_stride + size_t(h0 + hh) * hd + d);
      else *f = 0.0f;
    }
  };
  issue_q(g * G + yy * hc, min(hc, G - yy * hc), nq * min(hc, G - yy * hc));  // before the table lookups

  // The split's rows: one block-table lookup per position, shared by every K and V tile and every chunk.
  if (tid < nsp) sOff[tid] = static_cast<long long>(kv_offset(a.kv, slot, s_begin + tid)) + static_cast<long long>(g) * hd;
  static_assert(kS <= kThreads, "one position per thread");

  // Tile copies: piece (row r, unit d) of a tile, units of 16 bytes (kVec) or 4; thread tid starts at piece tid.
  // A bf16 tile is copied as stored: 16-byte units of 8 values, rows packed.
  auto copy_tile = [&](float4* dst, int stride4, const void* base, int t) {
    const int cu = kBf16 ? hd / 8 : kVec ? L.hd4 : 4 * L.hd4, csr = kThreads / cu, csd = kThreads - csr * cu;
    const int j0 = t * kTile, nrows = min(kTile, nsp - j0);
    int r = tid / cu, d = tid - r * cu;
    while (r < nrows) {
      if (kBf16) {
        cp_async16(dst + r * cu + d, static_cast<const __nv_bfloat16*>(base) + sOff[j0 + r] + 8 * d);
      } else if (kVec) {
        cp_async16(dst + r * stride4 + d, static_cast<const float*>(base) + sOff[j0 + r] + 4 * d);
      } else {
        float* f = reinterpret_cast<float*>(dst + r * stride4) + d;
        if (d < hd) cp_async4(f, static_cast<const float*>(base) + sOff[j0 + r] + d);
        else *f = 0.0f;
      }
      r += csr;
      d += csd;
      if (d >= cu) {
        d -= cu;
        ++r;
      }
    }
  };

  // P.V roles: (vector set, d4, position class c), c fastest.
  const int pairs = 4 * L.hd4, nsets_max = kThreads / pairs;

  for (int ch = yy; ch < nchunks; ch += Y) {
    const int hl = ch * hc, h0 = g * G + hl, nh = min(hc, G - hl), Q = nq * nh;
    if (ch != yy) issue_q(h0, nh, Q);
    __syncthreads();  // sOff (and the zero padding of q) visible to every thread

    const int nt = (nsp + kTile - 1) / kTile;
    const int nsets = min(nsets_max, (Q + kPvQ - 1) / kPvQ);
    const int per_pass = nsets * kPvQ;
    const int passes = (Q + per_pass - 1) / per_pass;
    const int nseq = nt * (1 + passes);  // K tiles, then V tiles once per pass
    // Tile i of the sequence into buffer i mod ring, one commit group per tile (empty past the end); q
    // copies ride in group 0.
    auto issue = [&](int i) {
      if (i < nseq) {
        float4* dst = sRing + (i % ring) * L.raw4;
        if (i < nt) copy_tile(dst, L.ks4, a.kv.k, i);
        else copy_tile(dst, L.vs4, a.kv.v, (i - nt) % nt);
      }
      cp_async_commit();
    };
    for (int i = 0; i < ring - 1; ++i) issue(i);

    // Step i: wait for tile i (its group and every older one), then start tile i + ring - 1 in the buffer
    // that tile i - 1 used (the barrier: everyone is done with it).
    // A bf16 tile is then widened into the work tile, rows of `stride4` (the barrier at the next step keeps it
    // until every thread is done with it).
    auto step = [&](int i, int stride4) -> const float4* {
      cp_async_wait_n(ring - 2);
      __syncthreads();
      issue(i + ring - 1);
      const float4* raw = sRing + (i % ring) * L.raw4;
      if (!kBf16) return raw;
      const int cu = hd / 8, nrows = min(kTile, nsp - (i % nt) * kTile);
      for (int p = tid; p < nrows * cu; p += kThreads) {
        const int r = p / cu, u = p - r * cu;
        widen_bf16x8(*reinterpret_cast<const uint4*>(raw + p), sWork + r * stride4 + 2 * u);
      }
      __syncthreads();
      return sWork;
    };

    for (int t = 0; t < nt; ++t) {
      const float4* buf = step(t, L.ks4);
      if (Q <= 1) score_tile<1>(sQ, buf, sP, L, Q, nh, t, nsp, lim, a.scale);
      else if (Q <= 2) score_tile<2>(sQ, buf, sP, L, Q, nh, t, nsp, lim, a.scale);
      else if (Q <= 4) score_tile<4>(sQ, buf, sP, L, Q, nh, t, nsp, lim, a.scale);
      else score_tile<8>(sQ, buf, sP, L, Q, nh, t, nsp, lim, a.scale);
    }
    __syncthreads();  // every score written

    // The split's softmax, a warp per query vector; lane holds positions lane + 32k. The first V tiles are in
    // flight meanwhile; the next step's barrier publishes P.
    for (int qi = warp; qi < Q; qi += kWarps) {
      const int r = qi / nh, hh = qi - r * nh;
      const int n = min(kS, lim + r);
      if (n <= 0) continue;  // the row's position is before this split: nothing to compute or write
      split_softmax(sP + qi * kS, n, lane, a.part_ml, (size_t(row0 + r) * a.n_heads + h0 + hh) * a.max_splits + split);
    }

    for (int pass = 0; pass < passes; ++pass) {
      const int pset = tid / pairs, ppr = tid - pset * pairs, pd4 = ppr >> 2, pc = ppr & 3;
      const int qbase = pass * per_pass + pset;  // this thread's vectors: qbase + nsets u, u < kPvQ
      // nv(u): positions vector u may read (0: none, or no such vector), a byte each (<= kS) of nvp.
      float4 acc[kPvQ];
      unsigned nvp[kPvQ / 4] = {};
      int nvmax = 0;
#pragma unroll
      for (int u = 0; u < kPvQ; ++u) {
        const int qi = qbase + nsets * u;
        const int n = pset < nsets && qi < Q ? max(0, min(kS, lim + qi / nh)) : 0;
        nvp[u / 4] |= unsigned(n) << (8 * (u % 4));
        nvmax = max(nvmax, n);
        acc[u] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      }
      auto nv = [&](int u) { return int((nvp[u / 4] >> (8 * (u % 4))) & 0xffu); };
      const float* pr = sP + qbase * kS;
      for (int t = 0; t < nt; ++t) {
        const float4* buf = step(nt * (1 + pass) + t, L.vs4);
        // P.V over tile t: positions j = c mod 4 of the tile, in order, for each of the thread's vectors.
        const int j0 = t * kTile, jend = min(j0 + kTile, nvmax);
        const float4* vcol = buf + pd4;
#pragma unroll 1
        for (int j = j0 + pc; j < jend; j += 4) {
          const float4 vv = vcol[(j - j0) * L.vs4];
#pragma unroll
          for (int u = 0; u < kPvQ; ++u) {
            if (j < nv(u)) {
              const float p = pr[u * nsets * kS + j];
              acc[u].x = __fmaf_rn(p, vv.x, acc[u].x);
              acc[u].y = __fmaf_rn(p, vv.y, acc[u].y);
              acc[u].z = __fmaf_rn(p, vv.z, acc[u].z);
              acc[u].w = __fmaf_rn(p, vv.w, acc[u].w);
            }
          }
        }
      }
      // Add the four position classes (adjacent lanes) and store.
#pragma unroll
      for (int u = 0; u < kPvQ; ++u) {
        if (!__any_sync(kFull, nv(u) > 0)) continue;  // warp-uniform
        const float4 o = add_position_classes(acc[u]);
        if (pc == 0 && nv(u) > 0) {
          const int qi = qbase + nsets * u, r = qi / nh, hh = qi - r * nh;
          const size_t cell = (size_t(row0 + r) * a.n_heads + h0 + hh) * a.max_splits + split;
          store_pv<kVec>(a.part_acc + cell * hd + 4 * pd4, o, pd4, hd);
        }
      }
    }
    __syncthreads();  // the next chunk overwrites q, P and the ring
  }
}

}  // namespace

void configure_attention_ring() {
  // The attribute is only a cap: set it for the largest head_dim, so configuring one head_dim never
  // breaks another.
  size_t bytes = 0;
  for (int hd = 4; hd <= kMaxHeadDim; hd += 4)
    bytes = std::max({bytes, smem_bytes(hd, ring_max(hd, false), false), smem_bytes(hd, ring_max(hd, true), true)});
  const int optin = device_limits().optin;
  if (optin > 0) bytes = std::min(bytes, size_t(optin));
  const cudaFuncAttribute attr = cudaFuncAttributeMaxDynamicSharedMemorySize;
  STRATA_CUDA_CHECK(cudaFuncSetAttribute(attention_partial_ring<true, false>, attr, int(bytes)));
  STRATA_CUDA_CHECK(cudaFuncSetAttribute(attention_partial_ring<false, false>, attr, int(bytes)));
  STRATA_CUDA_CHECK(cudaFuncSetAttribute(attention_partial_ring<true, true>, attr, int(bytes)));
}

void launch_attention_partial_ring(const AttentionParams& a, cudaStream_t stream) {
  // Blocks per kv head: one chunk each for multi-row tiles (a 16-row tile has a chunk per q head); when the
  // grid has a tile per row (decode windows) the tiles are single rows, whose group takes ceil(G / kMaxQ)
  // chunks; a multi-row tile among them has its remaining chunks done in turn by the same blocks.
  const int G = a.n_heads / a.n_kv_heads;
  const int Y = a.max_tiles >= a.rows ? (G + kMaxQ - 1) / kMaxQ : G;
  const dim3 grid(a.grid_splits, a.n_kv_heads * Y, a.max_tiles);
  const bool bf16 = a.kv.type == KvType::BF16;
  const int ring = pick_ring(a.head_dim, static_cast<long long>(grid.x) * grid.y * grid.z, bf16);
  const size_t smem = smem_bytes(a.head_dim, ring, bf16);
  // 16-byte K/V copies and stores when every row the kernel touches starts on 16 bytes; else 4-byte ones (the
  // same arithmetic).
  const bool vec = a.head_dim % 4 == 0 && a.kv.kv_dim % 4 == 0 && a.kv.layer_offset % 4 == 0 && aligned16(a.kv.k) &&
                   aligned16(a.kv.v) && aligned16(a.part_acc);
  if (bf16) {
    check_bf16_arena(a, vec);
    launch_kernel(attention_partial_ring<true, true>, grid, kThreads, smem, stream, a, ring);
  } else if (vec) {
    launch_kernel(attention_partial_ring<true, false>, grid, kThreads, smem, stream, a, ring);
  } else {
    launch_kernel(attention_partial_ring<false, false>, grid, kThreads, smem, stream, a, ring);
  }
  STRATA_CUDA_CHECK_LAUNCH();
}

}  // namespace cuda
}  // namespace strata
