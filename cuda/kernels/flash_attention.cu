// Tensor-core attention for prompt windows (launch_flash_attention in kernels.hpp), FlashAttention-2 style
// with mma.sync.m16n8k16 bf16 x bf16 -> fp32.
//
// A block takes TPB consecutive query tiles (each up to kAttnQueryTile rows of one slot at consecutive
// positions) and WARPS query heads of one KV head's GQA group: one warp per (tile, head), 8 warps at most,
// each holding its tile's 16 query rows as bf16 A fragments (rows past tile_rows are zero and never
// written). The block walks the slot's positions [0, last position of its tiles] in K/V tiles of kKvTile
// positions: the arena rows (fp32 or bf16, addressed only through kv_row, kv_access.cuh) are copied by
// cp.async into a staging buffer while the previous tile's math runs, then rounded once to bf16 into shared
// memory that all the block's warps read. Tiles of another slot than the block's first run in a round of their own.
// Per K/V tile each warp computes S = Q K^T with mma (K fragments by ldmatrix), masks positions past each
// row's own position, updates the online softmax in fp32 registers (exp2, log2(e) folded into the scale),
// and accumulates O += P V with P rounded to bf16 straight from the S accumulators (the C fragments of two
// n8 blocks are the A fragment of one k16 step) and V fragments by ldmatrix.trans.
//
// Measured on the H200 (tests/cuda/test_flash_attention.cpp): 4096 rows, head_dim 128, 32 q / 8 kv heads,
// 0.85 ms = 161 TFLOP/s (the fp32 attention.cu kernel: 20.8 ms). Shared-memory traffic (staging, the bf16
// rounding pass and every warp's ldmatrix of the whole K/V tile) is the limit; a third staging buffer did
// not help. Next steps: two m16 tiles per warp (halves ldmatrix traffic), or wgmma with the group's heads
// stacked as M = 64.
//
// Numbers: q, k, v and p are rounded to bf16, sums are fp32. This is the tolerance path (windows of
// gemm_min_rows rows or more, whose matmuls already run in cuBLAS); decode and verify windows keep
// attention.cu, whose bits do not depend on the window.
#include <cuda_bf16.h>

#include <cstdint>
#include <string>

#include "cuda/cuda_check.hpp"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/kernels.hpp"
#include "cuda/kernels/kv_access.cuh"
#include "cuda/kernels/mma_tile.cuh"

namespace strata {
namespace cuda {
namespace {

constexpr int kKvTile = 64;  // positions per K/V tile in shared memory
constexpr int kPad = 8;      // bf16 padding per shared row: rows stay 16-byte aligned, ldmatrix is conflict-free
constexpr float kLog2e = 1.4426950408889634f;

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);  // lo in the low 16 bits: the lower-indexed element
  return *reinterpret_cast<uint32_t*>(&v);
}

// 16 bytes global -> shared without registers; zero-filled (nothing read) when !full.
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool full) {
  const uint32_t d = static_cast<uint32_t>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(full ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

// KvT: the arena's element type, float or __nv_bfloat16 (then the staging copies hold bf16 and the rounding
// pass is a copy: the same operands either way).
template <int HD, int WARPS, int TPB, class KvT>
__global__ void __launch_bounds__(WARPS * TPB * 32) flash_attention_kernel(AttentionParams a, int chunks) {
  static_assert(HD % 32 == 0, "two k16 steps per ldmatrix.x4 and two n8 blocks per V load");
  constexpr bool kBf16 = sizeof(KvT) == 2;
  constexpr int KS = HD / 16;      // k16 steps of Q K^T
  constexpr int NB = HD / 8;       // n8 blocks of O
  constexpr int LD = HD + kPad;    // shared row stride in bf16
  constexpr int V4 = HD / 4;       // groups of 4 values per K/V row (the rounding pass)
  constexpr int E16 = 16 / int(sizeof(KvT));  // values per 16-byte copy
  constexpr int U16 = HD / E16;    // 16-byte copies per K/V row
  constexpr int THREADS = WARPS * TPB * 32;
  static_assert((kKvTile * V4) % THREADS == 0, "every thread rounds the same number of groups");
  static_assert((kKvTile * U16) % THREADS == 0, "every thread copies the same number of 16-byte pieces");
  constexpr int LOADS = kKvTile * V4 / THREADS;
  constexpr int COPIES = kKvTile * U16 / THREADS;

  extern __shared__ __align__(16) unsigned char flash_smem[];
  KvT* kst = reinterpret_cast<KvT*>(flash_smem);  // [kKvTile][HD] staging of the next tile (cp.async)
  KvT* vst = kst + kKvTile * HD;
  // [kKvTile][LD] bf16, mma operands, after staging sized for fp32 (flash_attention_smem_bytes)
  __nv_bfloat16* ks = reinterpret_cast<__nv_bfloat16*>(flash_smem + 2 * sizeof(float) * kKvTile * HD);
  __nv_bfloat16* vs = ks + kKvTile * LD;

  // Block b takes tiles [b * TPB, b * TPB + TPB), the window's last (longest) tiles first; warp w takes tile
  // w / WARPS of them and head w % WARPS of the chunk.
  const int tile0 = (int(gridDim.x) - 1 - int(blockIdx.x)) * TPB;
  const int n_tiles = *a.n_tiles;
  if (tile0 >= n_tiles) return;
  const int group = a.n_heads / a.n_kv_heads;
  const int g = blockIdx.y / chunks, chunk = blockIdx.y % chunks;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int gid = lane >> 2, tig = lane & 3;  // fragment row (and row + 8) and column pair
  const int wt = warp / WARPS;
  const int h = g * group + chunk * WARPS + warp % WARPS;
  const int tile = min(tile0 + wt, n_tiles - 1);
  const int row0 = a.tile_first[tile], nq = a.tile_rows[tile];
  const int p0 = a.pos[row0], plast = p0 + nq - 1;
  const int q_dim = a.n_heads * HD;
  const size_t head_off = size_t(g) * HD;

  // The block's tiles share K/V tiles when they are of one slot (a prompt); otherwise it runs one round per
  // slot among them, each round streaming that slot's positions for the tiles of that slot.
  unsigned done = 0;
  for (int t = 0; t < TPB; ++t)
    if (tile0 + t >= n_tiles) done |= 1u << t;
  while (done != (1u << TPB) - 1) {
  const int first = __ffs(int(~done)) - 1;
  const int slot = a.slot[a.tile_first[tile0 + first]];
  unsigned act = 0;
  int kv_last = 0;
  for (int t = first; t < TPB; ++t) {
    if (done & (1u << t)) continue;
    const int r = a.tile_first[tile0 + t];
    if (a.slot[r] == slot) {
      act |= 1u << t;
      kv_last = max(kv_last, a.pos[r] + a.tile_rows[tile0 + t] - 1);
    }
  }
  done |= act;
  const bool mine = (act >> wt) & 1u;  // warp-uniform: this warp's tile is in this round

  // Q as A fragments: k16 step s holds rows gid / gid + 8, dims 16s + 2tig (+1) and 16s + 8 + 2tig (+1).
  const bool ok_lo = gid < nq, ok_hi = gid + 8 < nq;
  uint32_t qf[KS][4];
  if (mine) {
    const float* q_lo = a.qkv + size_t(row0 + gid) * a.qkv_stride + size_t(h) * HD;
    const float* q_hi = a.qkv + size_t(row0 + gid + 8) * a.qkv_stride + size_t(h) * HD;
    const float2 zero = make_float2(0.0f, 0.0f);
#pragma unroll
    for (int s = 0; s < KS; ++s) {
      const int d = 16 * s + 2 * tig;
      const float2 x0 = ok_lo ? *reinterpret_cast<const float2*>(q_lo + d) : zero;
      const float2 x1 = ok_hi ? *reinterpret_cast<const float2*>(q_hi + d) : zero;
      const float2 x2 = ok_lo ? *reinterpret_cast<const float2*>(q_lo + d + 8) : zero;
      const float2 x3 = ok_hi ? *reinterpret_cast<const float2*>(q_hi + d + 8) : zero;
      qf[s][0] = pack_bf16(x0.x, x0.y);
      qf[s][1] = pack_bf16(x1.x, x1.y);
      qf[s][2] = pack_bf16(x2.x, x2.y);
      qf[s][3] = pack_bf16(x3.x, x3.y);
    }
  }
  // Rows past tile_rows take the tile's last position: they stay finite and are never written.
  const int rp_lo = p0 + min(gid, nq - 1), rp_hi = p0 + min(gid + 8, nq - 1);
  const float sl2 = a.scale * kLog2e;

  float o[NB][4];
#pragma unroll
  for (int n = 0; n < NB; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float m_lo = -INFINITY, m_hi = -INFINITY, l_lo = 0.0f, l_hi = 0.0f;

  // Tile t0's rows into the staging buffers, asynchronously; positions past the tile's last are zeros.
  auto stage = [&](int t0) {
#pragma unroll 2
    for (int it = 0; it < COPIES; ++it) {
      const int i = it * THREADS + int(threadIdx.x);
      const int j = i / U16, c = (i % U16) * E16;
      const bool in = t0 + j <= kv_last;
      const int p = in ? t0 + j : 0;
      cp_async16(kst + j * HD + c, kv_row<KvT>(a.kv.k, a.kv, slot, p) + head_off + c, in);
      cp_async16(vst + j * HD + c, kv_row<KvT>(a.kv.v, a.kv, slot, p) + head_off + c, in);
    }
    cp_async_commit();
  };
  stage(0);
  for (int t0 = 0; t0 <= kv_last; t0 += kKvTile) {
    cp_async_wait_all();
    __syncthreads();  // tile t0 is staged, and every warp is done with the previous tile's bf16 operands
#pragma unroll 4
    for (int it = 0; it < LOADS; ++it) {
      const int i = it * THREADS + int(threadIdx.x);
      const int j = i / V4, c = (i % V4) * 4;
      if constexpr (kBf16) {
        *reinterpret_cast<uint2*>(ks + j * LD + c) = *reinterpret_cast<const uint2*>(kst + j * HD + c);
        *reinterpret_cast<uint2*>(vs + j * LD + c) = *reinterpret_cast<const uint2*>(vst + j * HD + c);
      } else {
        const float4 kx = *reinterpret_cast<const float4*>(kst + j * HD + c);
        const float4 vx = *reinterpret_cast<const float4*>(vst + j * HD + c);
        *reinterpret_cast<uint2*>(ks + j * LD + c) = make_uint2(pack_bf16(kx.x, kx.y), pack_bf16(kx.z, kx.w));
        *reinterpret_cast<uint2*>(vs + j * LD + c) = make_uint2(pack_bf16(vx.x, vx.y), pack_bf16(vx.z, vx.w));
      }
    }
    __syncthreads();  // bf16 tile ready; the staging buffers are free for the next tile, loaded during the math
    if (t0 + kKvTile <= kv_last) stage(t0 + kKvTile);
    if (!mine || t0 > plast) continue;  // warp-uniform; the warp still loads and syncs with the block

    // S = Q K^T: n8 block n is positions t0 + 8n .. + 7. Matrix i of the x4 load: positions 8n + (lane & 7),
    // dims 16s + 8i: b0b1 / b2b3 of step s, then of step s + 1.
    float sc[kKvTile / 8][4];
#pragma unroll
    for (int n = 0; n < kKvTile / 8; ++n) sc[n][0] = sc[n][1] = sc[n][2] = sc[n][3] = 0.0f;
#pragma unroll
    for (int s = 0; s < KS; s += 2) {
#pragma unroll
      for (int n = 0; n < kKvTile / 8; ++n) {
        uint32_t b[4];
        ldsm_x4(b, ks + (8 * n + (lane & 7)) * LD + 16 * s + 8 * (lane >> 3));
        mma_bf16(sc[n], qf[s], b[0], b[1]);
        mma_bf16(sc[n], qf[s + 1], b[2], b[3]);
      }
    }

    // Online softmax in the log2 domain. C fragment: sc[n][e] is row gid, sc[n][2 + e] row gid + 8, both at
    // position t0 + 8n + 2tig + e.
    const bool need_mask = t0 + kKvTile - 1 > p0;  // some position of this tile is past some row's own
    float mx_lo = -INFINITY, mx_hi = -INFINITY;
#pragma unroll
    for (int n = 0; n < kKvTile / 8; ++n) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int c = t0 + 8 * n + 2 * tig + e;
        float v0 = sc[n][e] * sl2, v1 = sc[n][2 + e] * sl2;
        if (need_mask) {
          v0 = c <= rp_lo ? v0 : -INFINITY;
          v1 = c <= rp_hi ? v1 : -INFINITY;
        }
        sc[n][e] = v0;
        sc[n][2 + e] = v1;
        mx_lo = fmaxf(mx_lo, v0);
        mx_hi = fmaxf(mx_hi, v1);
      }
    }
    // Finite: position 0 is in every row's first tile, and the running max never decreases.
    const float mn_lo = fmaxf(m_lo, quad_max(mx_lo)), mn_hi = fmaxf(m_hi, quad_max(mx_hi));
    const float corr_lo = exp2f(m_lo - mn_lo), corr_hi = exp2f(m_hi - mn_hi);  // 0 on the first tile
    m_lo = mn_lo;
    m_hi = mn_hi;
    float sum_lo = 0.0f, sum_hi = 0.0f;
#pragma unroll
    for (int n = 0; n < kKvTile / 8; ++n) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float e0 = exp2f(sc[n][e] - mn_lo), e1 = exp2f(sc[n][2 + e] - mn_hi);
        sc[n][e] = e0;
        sc[n][2 + e] = e1;
        sum_lo += e0;
        sum_hi += e1;
      }
    }
    l_lo = l_lo * corr_lo + sum_lo;  // per-lane partial sums; the quad's lanes are added at the end
    l_hi = l_hi * corr_hi + sum_hi;
#pragma unroll
    for (int n = 0; n < NB; ++n) {
      o[n][0] *= corr_lo;
      o[n][1] *= corr_lo;
      o[n][2] *= corr_hi;
      o[n][3] *= corr_hi;
    }

    // O += P V. k16 step k covers positions 16k .. 16k + 15 = S blocks 2k and 2k + 1. V fragments by
    // ldmatrix.trans: matrix i holds positions 16k + 8(i & 1) + (lane & 7), dims 8(n + (i >> 1)).
#pragma unroll
    for (int k = 0; k < kKvTile / 16; ++k) {
      uint32_t pa[4];
      pa[0] = pack_bf16(sc[2 * k][0], sc[2 * k][1]);
      pa[1] = pack_bf16(sc[2 * k][2], sc[2 * k][3]);
      pa[2] = pack_bf16(sc[2 * k + 1][0], sc[2 * k + 1][1]);
      pa[3] = pack_bf16(sc[2 * k + 1][2], sc[2 * k + 1][3]);
      const int mi = lane >> 3;
      const __nv_bfloat16* vrow = vs + (16 * k + 8 * (mi & 1) + (lane & 7)) * LD + 8 * (mi >> 1);
#pragma unroll
      for (int n = 0; n < NB; n += 2) {
        uint32_t b[4];
        ldsm_x4_trans(b, vrow + 8 * n);
        mma_bf16(o[n], pa, b[0], b[1]);
        mma_bf16(o[n + 1], pa, b[2], b[3]);
      }
    }
  }

  if (!mine) continue;
  const float inv_lo = 1.0f / quad_sum(l_lo), inv_hi = 1.0f / quad_sum(l_hi);
  __nv_bfloat16* out16 = static_cast<__nv_bfloat16*>(a.out16.p);
  const size_t rem = a.out16.split ? size_t(a.rows) * q_dim : 0;
  const size_t base_lo = size_t(row0 + gid) * q_dim + size_t(h) * HD + 2 * tig;
  const size_t base_hi = size_t(row0 + gid + 8) * q_dim + size_t(h) * HD + 2 * tig;
#pragma unroll
  for (int n = 0; n < NB; ++n) {
    if (ok_lo) {
      const float2 v = make_float2(o[n][0] * inv_lo, o[n][1] * inv_lo);
      *reinterpret_cast<float2*>(a.out + base_lo + 8 * n) = v;
      if (out16) store_bf16x2_split(out16 + base_lo + 8 * n, rem, v.x, v.y);
    }
    if (ok_hi) {
      const float2 v = make_float2(o[n][2] * inv_hi, o[n][3] * inv_hi);
      *reinterpret_cast<float2*>(a.out + base_hi + 8 * n) = v;
      if (out16) store_bf16x2_split(out16 + base_hi + 8 * n, rem, v.x, v.y);
    }
  }
  }
}

// Query tiles per block (sharing each K/V tile): 8 warps per block at most.
template <int WARPS>
constexpr int kTilesPerBlock = WARPS >= 8 ? 1 : (WARPS >= 4 ? 2 : 4);

// The most warps (query heads per block) that divide the GQA group, up to 8.
int flash_warps(int group) {
  for (int w : {8, 4, 2}) {
    if (group % w == 0) return w;
  }
  return 1;
}

template <int HD, int WARPS>
void launch_for(const AttentionParams& p, int chunks, cudaStream_t stream) {
  constexpr int TPB = kTilesPerBlock<WARPS>;
  const dim3 grid(unsigned((p.max_tiles + TPB - 1) / TPB), unsigned(p.n_kv_heads * chunks));
  const size_t smem = flash_attention_smem_bytes(HD);
  if (p.kv.type == KvType::BF16)
    flash_attention_kernel<HD, WARPS, TPB, __nv_bfloat16><<<grid, WARPS * TPB * 32, smem, stream>>>(p, chunks);
  else
    flash_attention_kernel<HD, WARPS, TPB, float><<<grid, WARPS * TPB * 32, smem, stream>>>(p, chunks);
  STRATA_CUDA_CHECK_LAUNCH();
}

template <int HD>
void launch_hd(const AttentionParams& p, int warps, int chunks, cudaStream_t stream) {
  switch (warps) {
    case 8: launch_for<HD, 8>(p, chunks, stream); break;
    case 4: launch_for<HD, 4>(p, chunks, stream); break;
    case 2: launch_for<HD, 2>(p, chunks, stream); break;
    default: launch_for<HD, 1>(p, chunks, stream); break;
  }
}

template <int HD>
void configure_hd() {
  const int smem = int(flash_attention_smem_bytes(HD));
  if (smem <= 48 * 1024) return;
  const cudaFuncAttribute attr = cudaFuncAttributeMaxDynamicSharedMemorySize;
  auto both = [&](auto f32, auto b16) {
    STRATA_CUDA_CHECK(cudaFuncSetAttribute(f32, attr, smem));
    STRATA_CUDA_CHECK(cudaFuncSetAttribute(b16, attr, smem));
  };
  both(flash_attention_kernel<HD, 8, kTilesPerBlock<8>, float>, flash_attention_kernel<HD, 8, kTilesPerBlock<8>, __nv_bfloat16>);
  both(flash_attention_kernel<HD, 4, kTilesPerBlock<4>, float>, flash_attention_kernel<HD, 4, kTilesPerBlock<4>, __nv_bfloat16>);
  both(flash_attention_kernel<HD, 2, kTilesPerBlock<2>, float>, flash_attention_kernel<HD, 2, kTilesPerBlock<2>, __nv_bfloat16>);
  both(flash_attention_kernel<HD, 1, kTilesPerBlock<1>, float>, flash_attention_kernel<HD, 1, kTilesPerBlock<1>, __nv_bfloat16>);
}

[[noreturn]] void bad(const std::string& what) { throw Error("cuda flash attention: " + what); }

}  // namespace

size_t flash_attention_smem_bytes(int head_dim) {
  return 2 * size_t(kKvTile) * size_t(head_dim) * sizeof(float) +
         2 * size_t(kKvTile) * size_t(head_dim + kPad) * sizeof(__nv_bfloat16);
}

bool flash_attention_supports(int head_dim) { return head_dim == 64 || head_dim == 128; }

void configure_flash_attention(int head_dim) {
  if (head_dim == 64) configure_hd<64>();
  if (head_dim == 128) configure_hd<128>();
}

void launch_flash_attention(const AttentionParams& p, cudaStream_t stream) {
  if (p.rows <= 0) return;
  if (!flash_attention_supports(p.head_dim))
    bad("head_dim " + std::to_string(p.head_dim) + " unsupported (64 or 128)");
  if (p.n_kv_heads <= 0 || p.n_heads <= 0 || p.n_heads % p.n_kv_heads != 0)
    bad("n_heads " + std::to_string(p.n_heads) + " is not a multiple of n_kv_heads " + std::to_string(p.n_kv_heads));
  if (p.kv.kv_dim != p.n_kv_heads * p.head_dim)
    bad("kv.kv_dim " + std::to_string(p.kv.kv_dim) + " != n_kv_heads * head_dim");
  // 16-byte K/V loads and 8-byte q / out loads and stores.
  if (p.kv.layer_offset % 8 != 0 || reinterpret_cast<uintptr_t>(p.kv.k) % 16 != 0 ||
      reinterpret_cast<uintptr_t>(p.kv.v) % 16 != 0)
    bad("kv arena (k, v, layer_offset) must be aligned to 16 bytes");
  if (p.qkv_stride % 2 != 0 || reinterpret_cast<uintptr_t>(p.qkv) % 8 != 0)
    bad("qkv_stride " + std::to_string(p.qkv_stride) + " (or qkv) is not aligned to 2 floats");
  if (!p.qkv || !p.out || !p.pos || !p.slot || !p.tile_first || !p.tile_rows || !p.n_tiles)
    bad("qkv, out, pos, slot, tile_first, tile_rows and n_tiles must be set");
  if (reinterpret_cast<uintptr_t>(p.out) % 8 != 0 || reinterpret_cast<uintptr_t>(p.out16.p) % 4 != 0)
    bad("out / out16 misaligned");
  if (p.max_tiles <= 0) return;
  const int group = p.n_heads / p.n_kv_heads;
  const int warps = flash_warps(group);
  const int chunks = group / warps;
  if (p.head_dim == 64)
    launch_hd<64>(p, warps, chunks, stream);
  else
    launch_hd<128>(p, warps, chunks, stream);
}

}  // namespace cuda
}  // namespace strata
