// launch_cluster_chain (cluster_chain.hpp): a slot's greedy chain of decode steps in one cluster of blocks.
// Each block keeps the row's residual stream in shared memory and computes every norm itself; a matmul's
// output rows are spread over all warps of the cluster (a warp sums up to kRows rows at once, every lane a
// 16-byte piece of each in flight) and meet in device memory behind a cluster barrier, after which every block
// reads the whole row back. Per layer: q/k/v | attention (row_attn::item on each (head, split), four items a
// block at once, the last split of a head merging) | o + residual | gate/up + SwiGLU | down + residual, a
// barrier after each; per picking row the LM head, each block's best logit, a barrier, and every block takes
// the best of the blocks' (argmax_token's rule: largest value, lowest id, NaN never wins). Reads of what other
// blocks wrote go through the L2 (ld.global.cg), since the L1 is not coherent between blocks.
#include <cooperative_groups.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <string>

#include "cuda/cuda_check.hpp"
#include "cuda/env.hpp"
#include "cuda/kernels/attention_row.cuh"
#include "cuda/kernels/cluster_chain.hpp"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/launch.cuh"

namespace strata {
namespace cuda {
namespace {

namespace cg = cooperative_groups;

constexpr int kWarps = 16;
constexpr int kThreads = kWarps * 32;
constexpr int kGroups = kThreads / row_attn::kThreads;  // attention items a block runs side by side
constexpr int kRows = 8;                                // rows a warp sums at once
constexpr int kMaxIn = 8192;                            // floats of a matmul's input row in shared memory
static_assert(kThreads % row_attn::kThreads == 0, "whole attention groups");

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

// s[i] = row i (of kRows; rows[i] null: 0) . in, over k (a multiple of 8) values, in every lane.
__device__ __forceinline__ void warp_dots(const __nv_bfloat16* const (&rows)[kRows], int k, const float* in,
                                          float (&s)[kRows]) {
  const int lane = threadIdx.x & 31;
  const float4* in4 = reinterpret_cast<const float4*>(in);
#pragma unroll
  for (int i = 0; i < kRows; ++i) s[i] = 0.0f;
  for (int c = lane; c < k / 8; c += 32) {
    uint4 w[kRows];
#pragma unroll
    for (int i = 0; i < kRows; ++i) w[i] = rows[i] ? load_stream(rows[i] + size_t(c) * 8) : make_uint4(0, 0, 0, 0);
    const float4 a = in4[2 * c], b = in4[2 * c + 1];
#pragma unroll
    for (int i = 0; i < kRows; ++i) s[i] = dot8(w[i], a, b, s[i]);
  }
#pragma unroll
  for (int i = 0; i < kRows; ++i) s[i] = warp_sum(s[i]);
}

// The cluster's warps split n outputs into even ranges; each warp walks its range kRows at a time, calling
// row(j) for the weight row of output j (pair: a second row per output, for SwiGLU's up rows, null when
// unused) and out(j, s, s2) with the sums, from lane 0.
template <class RowOf, class Out>
__device__ __forceinline__ void cluster_matvec(int n, int k, const float* in, int rank, int blocks, RowOf row_of,
                                               bool pair, Out out) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int gw = warp * blocks + rank, nw = kWarps * blocks;  // neighbouring ranges on different blocks
  const int lo = int((long long)n * gw / nw), hi = int((long long)n * (gw + 1) / nw);
  constexpr int kHalf = kRows / 2;
  const int per = pair ? kHalf : kRows;
  for (int j0 = lo; j0 < hi; j0 += per) {
    const __nv_bfloat16* rows[kRows];
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
      const int j = j0 + (pair ? i % kHalf : i);
      const bool second = pair && i >= kHalf;
      rows[i] = (pair || i < per) && j < hi ? row_of(j, second) : nullptr;
    }
    float s[kRows];
    warp_dots(rows, k, in, s);
    if (lane == 0)
      for (int i = 0; i < per && j0 + i < hi; ++i) out(j0 + i, s[i], pair ? s[i + kHalf] : 0.0f);
  }
}

// Every thread gets the block's sum of v (fixed order: warp butterflies, then the warps in order).
__device__ __forceinline__ float block_sum_all(float v, float* red) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  v = warp_sum(v);
  if (lane == 0) red[warp] = v;
  __syncthreads();
  float t = lane < kWarps ? red[lane] : 0.0f;
  t = warp_sum(t);
  __syncthreads();  // red is free again
  return t;
}

// out = norm * (x / rms(x)) over n values, by the whole block; ends with a block barrier.
__device__ __forceinline__ void rmsnorm_block(const float* x, const float* norm, int n, float eps, float* out,
                                              float* red) {
  float ss = 0.0f;
  for (int i = threadIdx.x; i < n; i += kThreads) ss = fmaf(x[i], x[i], ss);
  const float inv = rms_inv(block_sum_all(ss, red), n, eps);
  for (int i = threadIdx.x; i < n; i += kThreads) out[i] = __fmul_rn(norm[i], __fmul_rn(x[i], inv));
  __syncthreads();
}

// dst[0 .. n) = src (device memory another block wrote, read through the L2); ends with a block barrier.
__device__ __forceinline__ void gather(float* dst, const float* src, int n) {
  for (int i = threadIdx.x; i < n; i += kThreads) dst[i] = __ldcg(src + i);
  __syncthreads();
}

// Measurement (ChainParams::stamps): block 0's thread 0 notes the time at the start of each row and after each
// of its barriers.
__device__ __forceinline__ void stamp(unsigned long long* stamps, int row, int at, int rank) {
  if (stamps && rank == 0 && threadIdx.x == 0) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    stamps[row * kChainStamps + at] = t;
  }
}

// Asks the L2 for a warp's share of a matrix's rows (the layer's weights do not depend on the row), so the
// phases that read them later find them there.
__device__ __forceinline__ void prefetch_rows(const void* w, int n, int k, int rank, int blocks) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int gw = warp * blocks + rank, nw = kWarps * blocks;
  const size_t lo = size_t(n) * size_t(gw) / size_t(nw), hi = size_t(n) * size_t(gw + 1) / size_t(nw);
  const char* b = static_cast<const char*>(w) + lo * size_t(k) * 2;
  const size_t bytes = (hi - lo) * size_t(k) * 2;
  for (size_t o = size_t(lane) * 128; o < bytes; o += 32 * 128) asm volatile("prefetch.global.L2 [%0];" ::"l"(b + o));
}

__device__ __forceinline__ bool better(float v, int i, float bv, int bi) {
  return v > bv || (v == bv && i < bi);
}

__global__ void __launch_bounds__(kThreads, 1) cluster_chain_kernel(ChainParams p) {
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = int(cluster.block_rank()), blocks = int(cluster.num_blocks());
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  extern __shared__ __align__(16) char smem[];
  char* scratch = smem;  // kGroups attention items' scratch, then x and the matmul input
  float* xs = reinterpret_cast<float*>(smem + kGroups * row_attn::kScratchBytes);
  const int H = p.hidden, hd = p.head_dim;
  const int q_dim = p.n_heads * hd, kv_dim = p.n_kv_heads * hd;
  float* in = xs + ((H + 3) & ~3);
  __shared__ float red[32];
  __shared__ float best_v[kWarps];
  __shared__ int best_i[kWarps];
  __shared__ int row_pos, row_slot, token;
  if (tid == 0) row_slot = p.slot;

  const __nv_bfloat16* embed = static_cast<const __nv_bfloat16*>(p.embed);
  const __nv_bfloat16* output = static_cast<const __nv_bfloat16*>(p.output);
  const int total = p.n_first + p.steps - 1;
  const int grp = tid / row_attn::kThreads, gtid = tid % row_attn::kThreads;
  auto group_sync = [grp] { asm volatile("bar.sync %0, %1;" ::"r"(1 + grp), "r"(row_attn::kThreads) : "memory"); };

  QkvRopeParams qp;
  qp.n_heads = p.n_heads;
  qp.n_kv_heads = p.n_kv_heads;
  qp.head_dim = hd;
  qp.eps = p.eps;
  qp.cos = p.cos;
  qp.sin = p.sin;
  AttentionParams ap;
  ap.qkv = p.qkv;
  ap.qkv_stride = q_dim + 2 * kv_dim;
  ap.n_heads = p.n_heads;
  ap.n_kv_heads = p.n_kv_heads;
  ap.head_dim = hd;
  ap.scale = 1.0f / sqrtf(float(hd));
  ap.pos = &row_pos;
  ap.slot = &row_slot;
  ap.max_splits = p.max_splits;
  ap.rows = 1;
  ap.part_acc = p.part_acc;
  ap.part_ml = p.part_ml;
  ap.out = p.att;

  for (int r = 0; r < total; ++r) {
    if (tid == 0) {
      row_pos = p.pos0 + r;
      if (r < p.n_first) token = p.first_tokens[r];  // else: the previous row's pick
    }
    __syncthreads();
    stamp(p.stamps, r, 0, rank);
    const int pos = row_pos;
    const __nv_bfloat16* e = embed + size_t(token) * size_t(H);
    for (int i = tid; i < H; i += kThreads) xs[i] = __bfloat162float(e[i]);
    if (p.prefetch) {
      const int qkv_rows = q_dim + 2 * kv_dim;
      for (int l = 0; l < p.n_layers; ++l) {
        const ChainLayer& L = p.layers[l];
        prefetch_rows(L.wqkv, qkv_rows, H, rank, blocks);
        prefetch_rows(L.wo, H, q_dim, rank, blocks);
        prefetch_rows(L.wgu, 2 * p.ff, H, rank, blocks);
        prefetch_rows(L.wdown, H, p.ff, rank, blocks);
      }
      if (r >= p.n_first - 1) prefetch_rows(p.output, p.vocab, H, rank, blocks);
    }
    __syncthreads();

    for (int l = 0; l < p.n_layers; ++l) {
      const ChainLayer L = p.layers[l];
      KvLayout kv = p.kv;
      kv.layer_offset = size_t(l) * p.kv_layer_stride;
      // q | k | v
      rmsnorm_block(xs, L.attn_norm, H, p.eps, in, red);
      const __nv_bfloat16* wqkv = static_cast<const __nv_bfloat16*>(L.wqkv);
      cluster_matvec(
          q_dim + 2 * kv_dim, H, in, rank, blocks,
          [&](int j, bool) { return wqkv + size_t(j) * size_t(H); }, false,
          [&](int j, float s, float) { p.qkv[j] = s; });
      cluster.sync();
      if (l == p.n_layers - 1) stamp(p.stamps, r, 1, rank);
      // Attention: items (head, split) over the cluster's groups.
      qp.bias = L.bqkv;
      qp.q_norm = L.q_norm;
      qp.k_norm = L.k_norm;
      qp.kv = kv;
      ap.kv = kv;
      const int n_splits = pos / kAttnSplit + 1, items = p.n_heads * n_splits;
      for (int it = grp * blocks + rank; it < items; it += kGroups * blocks)
        row_attn::item<__nv_bfloat16>(p.qkv, qp, ap, p.counters, it % p.n_heads, it / p.n_heads, gtid,
                          row_attn::carve(scratch + grp * row_attn::kScratchBytes), group_sync, [] {});
      cluster.sync();
      if (l == p.n_layers - 1) stamp(p.stamps, r, 2, rank);
      // o + residual
      gather(in, p.att, q_dim);
      const __nv_bfloat16* wo = static_cast<const __nv_bfloat16*>(L.wo);
      cluster_matvec(
          H, q_dim, in, rank, blocks, [&](int j, bool) { return wo + size_t(j) * size_t(q_dim); }, false,
          [&](int j, float s, float) { p.x[j] = __fadd_rn(xs[j], L.bo ? __fadd_rn(s, L.bo[j]) : s); });
      cluster.sync();
      if (l == p.n_layers - 1) stamp(p.stamps, r, 3, rank);
      gather(xs, p.x, H);
      // gate/up + SwiGLU
      rmsnorm_block(xs, L.mlp_norm, H, p.eps, in, red);
      const __nv_bfloat16* wgu = static_cast<const __nv_bfloat16*>(L.wgu);
      const int FF = p.ff;
      cluster_matvec(
          FF, H, in, rank, blocks,
          [&](int j, bool up) { return wgu + (size_t(j) + (up ? size_t(FF) : 0)) * size_t(H); }, true,
          [&](int j, float g, float u) { p.act[j] = __fmul_rn(__fdiv_rn(g, __fadd_rn(1.0f, expf(-g))), u); });
      cluster.sync();
      if (l == p.n_layers - 1) stamp(p.stamps, r, 4, rank);
      // down + residual
      gather(in, p.act, FF);
      const __nv_bfloat16* wdown = static_cast<const __nv_bfloat16*>(L.wdown);
      cluster_matvec(
          H, FF, in, rank, blocks, [&](int j, bool) { return wdown + size_t(j) * size_t(FF); }, false,
          [&](int j, float s, float) { p.x[j] = __fadd_rn(xs[j], s); });
      cluster.sync();
      if (l == p.n_layers - 1) stamp(p.stamps, r, 5, rank);
      gather(xs, p.x, H);
    }
    if (r < p.n_first - 1) continue;  // a catch-up row: no pick

    // The LM head's best row: each warp's, then the block's, then the cluster's.
    rmsnorm_block(xs, p.final_norm, H, p.eps, in, red);
    float bv = -INFINITY;
    int bi = 0x7fffffff;
    cluster_matvec(
        p.vocab, H, in, rank, blocks, [&](int j, bool) { return output + size_t(j) * size_t(H); }, false,
        [&](int j, float s, float) {
          if (better(s, j, bv, bi)) bv = s, bi = j;
        });
    if (lane == 0) best_v[warp] = bv, best_i[warp] = bi;
    __syncthreads();
    if (tid == 0) {
      for (int w = 1; w < kWarps; ++w)
        if (better(best_v[w], best_i[w], bv, bi)) bv = best_v[w], bi = best_i[w];
      p.best_val[rank] = bv;
      p.best_idx[rank] = bi;
    }
    cluster.sync();
    stamp(p.stamps, r, 6, rank);
    if (tid == 0) {
      bv = -INFINITY;
      bi = 0x7fffffff;
      for (int b = 0; b < blocks; ++b) {
        const float v = __ldcg(p.best_val + b);
        const int i = __ldcg(p.best_idx + b);
        if (better(v, i, bv, bi)) bv = v, bi = i;
      }
      token = bi == 0x7fffffff ? 0 : bi;  // no value above -inf: token 0, as argmax_token
      if (rank == 0) p.picks[r - (p.n_first - 1)] = token;
    }
    // The next row starts with a block barrier; the next write of best_* comes after several cluster
    // barriers, which every block reaches only after reading them here.
  }
}

size_t smem_bytes(int hidden, int in_floats) {
  return size_t(kGroups) * row_attn::kScratchBytes + (size_t((hidden + 3) & ~3) + size_t(in_floats)) * 4;
}

void configure(int blocks, size_t smem) {
  STRATA_CUDA_CHECK(cudaFuncSetAttribute(cluster_chain_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  if (blocks > 8)
    STRATA_CUDA_CHECK(cudaFuncSetAttribute(cluster_chain_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
}

cudaLaunchConfig_t config(int blocks, size_t smem, cudaStream_t stream, cudaLaunchAttribute* attr) {
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = unsigned(blocks);
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(unsigned(blocks));
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cfg;
}

}  // namespace

bool cluster_chain_supports(int hidden, int q_dim, int ff, int n_heads, int n_kv_heads, int head_dim) {
  return attention_row_supports(n_heads, n_kv_heads, head_dim) && hidden > 0 && hidden % 8 == 0 && q_dim % 8 == 0 &&
         ff > 0 && ff % 8 == 0 && hidden <= kMaxIn && q_dim <= kMaxIn && ff <= kMaxIn;
}

int cluster_chain_blocks() {
  static const int blocks = [] {
    // The largest shared memory a supported shape asks for, so the answer holds for every one.
    const size_t smem = smem_bytes(kMaxIn, kMaxIn);
    // STRATA_CLUSTER_CHAIN_BLOCKS=8 tries the portable size only (measurement).
    const int most = env_int("STRATA_CLUSTER_CHAIN_BLOCKS", 8, 16, 16);
    for (int b : {16, 8}) {
      if (b > most) continue;
      try {
        configure(b, smem);
        cudaLaunchAttribute attr[1];
        const cudaLaunchConfig_t cfg = config(b, smem, nullptr, attr);
        int n = 0;
        if (cudaOccupancyMaxActiveClusters(&n, cluster_chain_kernel, &cfg) == cudaSuccess && n > 0) return b;
      } catch (const Error&) {
      }
      (void)cudaGetLastError();
    }
    return 0;
  }();
  return blocks;
}

void launch_cluster_chain(const ChainParams& p, cudaStream_t stream) {
  const int q_dim = p.n_heads * p.head_dim;
  if (!cluster_chain_supports(p.hidden, q_dim, p.ff, p.n_heads, p.n_kv_heads, p.head_dim))
    throw Error("cuda cluster chain: unsupported shape (hidden " + std::to_string(p.hidden) + ", ff " +
                std::to_string(p.ff) + ", " + std::to_string(p.n_heads) + " heads over " +
                std::to_string(p.n_kv_heads) + " of head_dim " + std::to_string(p.head_dim) + ")");
  if (p.n_first < 1 || p.n_first > kChainMaxFirst || p.steps < 1 || p.steps > kChainMaxSteps)
    throw Error("cuda cluster chain: " + std::to_string(p.n_first) + " first rows and " + std::to_string(p.steps) +
                " steps (1.." + std::to_string(kChainMaxFirst) + " and 1.." + std::to_string(kChainMaxSteps) + ")");
  if (p.kv.type != KvType::BF16) throw Error("cuda cluster chain: a bf16 KV arena only");
  const int blocks = cluster_chain_blocks();
  if (blocks == 0) throw Error("cuda cluster chain: this device runs no cluster of 8 or 16 blocks");
  const size_t smem = smem_bytes(p.hidden, std::max({p.hidden, q_dim, p.ff}));
  cudaLaunchAttribute attr[1];
  const cudaLaunchConfig_t cfg = config(blocks, smem, stream, attr);
  STRATA_CUDA_CHECK(cudaLaunchKernelEx(&cfg, cluster_chain_kernel, p));
  STRATA_CUDA_CHECK_LAUNCH();
}

}  // namespace cuda
}  // namespace strata
