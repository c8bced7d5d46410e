// The fused single-row matmul of the tolerance path (launch_gemv in kernels.hpp): a one-row window reads every
// weight once and does little else, so the kernel is built around the weight stream. Each warp owns a
// contiguous run of outputs (tasks) and streams their bf16 rows with 16-byte loads, two buffers of U loads a
// lane in flight; the fp32 activation row sits in shared memory, staged once per block (and RMS-normed there
// when the sub-layer starts with a norm, so the norm is no kernel of its own), in a layout that gives every
// lane its eight elements as two conflict-free 16-byte reads. The sub-layer's end rides in the epilogue: the
// residual add (o and down projections), or SwiGLU on the gate and up rows of one task. Both buffers' first
// weight loads go out before pdl_wait(): they do not depend on the previous kernel, so their fetch overlaps
// its tail. So do the epilogue's other reads that do not (the o / down residual values, written two kernels
// back or more; the RoPE epilogue's table entries and KV cells): at the end they would be a round trip on the
// critical path (H100: 1B +1.1 %, 8B +1.3 %, strata-tiny +2.6 % a token; docs/PERFORMANCE.md run 110).
//
// The QKV projection can carry the RoPE step too (the Rope epilogue): a task is then the pair of rows (i,
// i + head_dim / 2) of one head, which is what a rotation needs, and the step's arithmetic (qkv_rope.cuh's
// rotate_pair, store_kv) runs on the two sums, so q, k and v get the bits the separate step gives them and
// one kernel boundary a layer goes (H100: 1B +3.6 %, 8B +1.3 % at batch 1, though the 8B shape's pairs fill
// 96 blocks where its rows filled 128; docs/PERFORMANCE.md run 88).
//
// Windows of several rows (up to 8 a block, more as further row groups of blocks, grid y) share each weight
// load: the block stages every row it serves and applies each loaded piece to all of them. A matrix whose
// blocks leave SMs idle spreads the rows over more row groups instead (block_rows).
//
// Sums: a lane's FMAs over its chunks in k order, then a butterfly over the warp; the norm's sum of squares
// is fixed by k and the block size (16 warps whenever there is a norm). None of that depends on the row
// count, on which rows share a block or on the layout (a lane's chunks and their order are the same in both),
// so a row's result is the same in a window of any number of rows: verify windows of up to
// fused_gemv_rows rows on this kernel give each row its single-row bits (forward.cpp). They are not the
// skinny kernel's bits, so a window size range is on one kernel or the other, never both.
#include <cuda_bf16.h>

#include <algorithm>

#include "cuda/cuda_check.hpp"
#include "cuda/env.hpp"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/kernels.hpp"
#include "cuda/kernels/launch.cuh"
#include "cuda/kernels/qkv_rope.cuh"

namespace strata {
namespace cuda {
namespace {

// One block an SM: the grid is one wave, and each SM stages the activation row once. Against two blocks of 8
// warps an SM (the same warps and loads in flight) one block of 16 is 2 % faster at batch 1 (8B 233 against
// 229 tok/s, 1B 1,132 against 1,110; docs/PERFORMANCE.md run 45): half the staging reads of the previous
// kernel's output, which every block waits for. Two layouts of the same loads in flight an SM, W warps of L
// 16-byte weight loads a lane a buffer: 16 x 8, or 32 x 4 (twice the warps for the reduction and the
// epilogue, at most 64 registers a thread). A launch without the input norm takes 32 x 4 when that keeps at
// least as many SMs busy (run 46: 8B's o and down projections, +1.5 % at batch 1); with the norm (1B's q/k/v
// and gate/up would qualify) it measured no gain, so those keep 16 x 8. The choice is a function of the
// matrix's shape and the SM count, so results stay deterministic (a lane's chunks and their order do not
// depend on the layout).
constexpr int kBlocksPerSm = 1;
constexpr int kChunk = 256;         // elements of a weight row per warp load step (8 per lane)
constexpr size_t kSmemMax = 220 * 1024;  // the staged rows' limit (the SM's 227 KB, less the static scratch)
constexpr int kMaxRowsPerBlock = 8;      // rows a block stages and applies each weight load to
constexpr int kPreRes = 2;  // Residual with a settled y: tasks a warp whose residual values are read before the wait

// Float4 group g of the activation row lives at permuted(g): lane l's elements [8 l, 8 l + 8) of a chunk are
// groups 2 l and 2 l + 1, stored at l and 32 + l of the chunk's 64, so each of a warp's two reads covers 32
// consecutive float4s.
__device__ __forceinline__ int permuted(int g) { return (g & ~63) | ((g & 1) << 5) | ((g & 63) >> 1); }

// A 16-byte weight piece widened once (w[0..7] in element order), then applied to each row it serves: the
// widening is not redone per row.
__device__ __forceinline__ void widen8(const uint4& u, float (&w)[8]) {
  w[0] = bf16_lo(u.x), w[1] = bf16_hi(u.x), w[2] = bf16_lo(u.y), w[3] = bf16_hi(u.y);
  w[4] = bf16_lo(u.z), w[5] = bf16_hi(u.z), w[6] = bf16_lo(u.w), w[7] = bf16_hi(u.w);
}

__device__ __forceinline__ float dot8(const float (&w)[8], const float4& a, const float4& b, float acc) {
  acc = fmaf(w[0], a.x, acc);
  acc = fmaf(w[1], a.y, acc);
  acc = fmaf(w[2], a.z, acc);
  acc = fmaf(w[3], a.w, acc);
  acc = fmaf(w[4], b.x, acc);
  acc = fmaf(w[5], b.y, acc);
  acc = fmaf(w[6], b.z, acc);
  acc = fmaf(w[7], b.w, acc);
  return acc;
}

// What the Rope epilogue looks up for the pair task of window row rr: the rotation's cos and sin (rotated heads)
// and the pair's first KV cell (k and v heads).
struct RopeAt {
  float c = 1.0f, s = 0.0f;
  size_t cell = 0;
};
__device__ __forceinline__ RopeAt rope_at(const QkvRopeParams& q, int task, int rr) {
  const int half = q.head_dim / 2, h = task / half, i = task - h * half;
  const int pos = q.pos[rr];
  RopeAt r;
  if (h < q.n_heads + q.n_kv_heads) {
    const size_t t = size_t(pos) * size_t(half) + size_t(i);
    r.c = q.cos[t];
    r.s = q.sin[t];
  }
  if (h >= q.n_heads) r.cell = kv_head_at(q, h, q.slot[rr], pos) + size_t(i);
  return r;
}

// *out = the entry of `task` among a warp's first kPreRes tasks (t0 on) read before the wait, when `early` and it
// is one of them.
template <class T>
__device__ __forceinline__ bool early_entry(const T (&pre)[kPreRes], bool early, int task, int t0, T* out) {
  bool have = false;
#pragma unroll
  for (int i = 0; i < kPreRes; ++i)
    if (early && task == t0 + i) *out = pre[i], have = true;
  return have;
}

// NR weight rows per task: 1, or 2 for SwiGLU (gate row j and up row n + j). A block serves up to RT rows
// of the window, p.rows_per_block of them from row blockIdx.y * p.rows_per_block on. Activations and the
// residual row are read through the L2 (ld.global.cg): a block reads each value once, so the L1 has nothing
// to keep (the kernel was tested and timed so, docs/PERFORMANCE.md runs 65-66).
// With NORM the rows are staged as norm * x and each sum is scaled by its row's 1 / rms at the end, so one
// block barrier (the staging's) stands between the activations' arrival and the first FMA.
template <int NR, GemvEpilogue EP, bool NORM, int kWarps, int kLoads, int RT>
__global__ void __launch_bounds__(kWarps * 32, kBlocksPerSm) gemv_kernel(GemvParams p, int tasks_per_warp) {
  extern __shared__ float4 xs[];  // per row served, chunks * 64 float4s
  __shared__ float row_sums[RT][32];  // the norm's warp sums, per row
  __shared__ float pick_v[kWarps][RT];  // Store with picks: each warp's best output of each row
  __shared__ int pick_i[kWarps][RT];
  const int bx = blockIdx.x, by = blockIdx.y;
  constexpr int U = kLoads / NR;
  static_assert(kLoads % NR == 0, "a task's rows share the buffer's loads");
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int k = p.k;
  const int chunks = (k + kChunk - 1) / kChunk;
  const int steps = (chunks + U - 1) / U;
  const int t0 = (bx * kWarps + warp) * tasks_per_warp;
  const int t1 = min(p.n, t0 + tasks_per_warp);
  const int total = max(0, t1 - t0) * steps;
  const __nv_bfloat16* w = static_cast<const __nv_bfloat16*>(p.w);

  // Weight row r of a task: the task's row (and n further on for SwiGLU's up row), or for Rope the pair (i,
  // i + half) of head task / half.
  auto weight_row = [&](int task, int r) -> size_t {
    if (EP == GemvEpilogue::Rope) {
      const int half = p.rope.head_dim / 2, h = task / half;
      return size_t(h) * size_t(p.rope.head_dim) + size_t(task - h * half) + (r ? size_t(half) : 0);
    }
    return size_t(task) + (r ? size_t(p.n) : 0);
  };
  auto issue = [&](int s, uint4(&b)[NR][U]) {
    const int task = t0 + s / steps, st = s % steps;
#pragma unroll
    for (int r = 0; r < NR; ++r) {
      const __nv_bfloat16* row = w + weight_row(task, r) * size_t(k);
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int e = ((st * U + u) * 32 + lane) * 8;
        b[r][u] = e < k ? load_stream(row + e) : make_uint4(0, 0, 0, 0);
      }
    }
  };
  uint4 A[NR][U], B[NR][U];
  if (total > 0) issue(0, A);
  if (total > 1) issue(1, B);
  const int r0 = by * p.rows_per_block;
  const int nr = min(p.rows_per_block, p.rows - r0);
  // Residual with a settled y: lane r's residual values of row r for the warp's first kPreRes tasks, read now
  // rather than on the epilogue's critical path (the same values either way).
  float pre_res[kPreRes];
  const bool res_early = EP == GemvEpilogue::Residual && p.y_settled;
  if (res_early) {
#pragma unroll
    for (int i = 0; i < kPreRes; ++i)
      pre_res[i] = lane < nr && t0 + i < t1 ? __ldcg(p.y + size_t(r0 + lane) * size_t(p.n) + size_t(t0 + i)) : 0.0f;
  }
  // Rope: lane r's table entries and KV cell of row r for the warp's first kPreRes tasks, looked up now (the
  // positions, slots and block tables come from the host before the graph runs; the tables never change), so the
  // epilogue's stores wait on no lookup.
  RopeAt pre_rope[kPreRes];
  // One-row blocks of 16 warps (the decode steps; the others would spill).
  const bool rope_early = EP == GemvEpilogue::Rope && RT == 1 && kWarps == 16 && p.rope_early;
  if (rope_early) {
#pragma unroll
    for (int i = 0; i < kPreRes; ++i)
      if (lane < nr && t0 + i < t1) pre_rope[i] = rope_at(p.rope, t0 + i, r0 + lane);
  }
  pdl_wait();  // the activations are the previous kernel's output
  pdl_launch_dependents();
  if (bx * kWarps * tasks_per_warp >= p.n) return;  // no task in this block (the same for all its threads)

  // Stage the rows (zeros past k up to the last chunk), times the norm weights when asked, with each row's sum
  // of squares. The rows' loads, sums and reductions run side by side; each row's arithmetic is the one-row
  // kernel's (block_sum's tree, row by row).
  const int groups = chunks * (kChunk / 4), real = k / 4;
  const float4* x4[RT];
#pragma unroll
  for (int r = 0; r < RT; ++r) {
    const int xr = r < nr ? (p.x_rows ? p.x_rows[r0 + r] : r0 + r) : 0;
    x4[r] = reinterpret_cast<const float4*>(p.x + size_t(xr) * size_t(k));
  }
  float ss[RT];
#pragma unroll
  for (int r = 0; r < RT; ++r) ss[r] = 0.0f;
  const float4* n4 = reinterpret_cast<const float4*>(p.norm);
  for (int g = threadIdx.x; g < groups; g += blockDim.x) {
    float4 v[RT];
#pragma unroll
    for (int r = 0; r < RT; ++r)
      v[r] = r < nr && g < real ? __ldcg(x4[r] + g) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    const float4 nw = NORM && g < real ? n4[g] : make_float4(1.0f, 1.0f, 1.0f, 1.0f);
#pragma unroll
    for (int r = 0; r < RT; ++r) {
      if (r < nr) {
        if (NORM) {
          ss[r] = fmaf(v[r].x, v[r].x, ss[r]);
          ss[r] = fmaf(v[r].y, v[r].y, ss[r]);
          ss[r] = fmaf(v[r].z, v[r].z, ss[r]);
          ss[r] = fmaf(v[r].w, v[r].w, ss[r]);
        }
        xs[size_t(r) * groups + permuted(g)] =
            NORM ? make_float4(__fmul_rn(nw.x, v[r].x), __fmul_rn(nw.y, v[r].y), __fmul_rn(nw.z, v[r].z),
                               __fmul_rn(nw.w, v[r].w))
                 : v[r];
      }
    }
  }
  float inv_rms[RT];  // NORM: each row's 1 / rms, every warp (lane r uses row r's)
  if (NORM) {
#pragma unroll
    for (int r = 0; r < RT; ++r) ss[r] = warp_sum(ss[r]);
    if (lane == 0)
#pragma unroll
      for (int r = 0; r < RT; ++r) row_sums[r][warp] = ss[r];  // read after the staging barrier below
  }
  __syncthreads();
  if (NORM) {
#pragma unroll
    for (int r = 0; r < RT; ++r) {
      float t = lane < kWarps ? row_sums[r][lane] : 0.0f;
      t = warp_sum(t);
      inv_rms[r] = rms_inv(t, k, p.eps);
    }
  }

  float acc[NR][RT];
#pragma unroll
  for (int i = 0; i < NR; ++i)
#pragma unroll
    for (int r = 0; r < RT; ++r) acc[i][r] = 0.0f;
  // Rope: the pair (a at i, b at i + half) of head task / half for window row rr, as qkv_rope_block does it
  // (bias, rotation of q and k heads with the row position's table entries), then q back into the row's qkv
  // values and k or v into the row's KV cell.
  auto rope_pair = [&](int task, int rr, float a, float b) {
    const QkvRopeParams& q = p.rope;
    const int hd = q.head_dim, half = hd / 2, h = task / half, i = task - h * half;
    const size_t at = size_t(h) * size_t(hd) + size_t(i);
    RopeAt ra;
    if (!early_entry(pre_rope, rope_early, task, t0, &ra)) ra = rope_at(q, task, rr);
    if (q.bias) a = __fadd_rn(a, q.bias[at]), b = __fadd_rn(b, q.bias[at + half]);
    if (h < q.n_heads + q.n_kv_heads) rotate_pair(a, b, ra.c, ra.s, &a, &b);
    if (h < q.n_heads) {
      float* y = p.y + size_t(rr) * size_t(2 * p.n);
      y[at] = a;
      y[at + half] = b;
    } else {
      void* base = h < q.n_heads + q.n_kv_heads ? q.kv.k : q.kv.v;
      store_kv(q.kv, base, ra.cell, a);
      store_kv(q.kv, base, ra.cell + half, b);
    }
  };
  // Store with picks: lane r's best output of row r so far (pick_better's order).
  float best_v = -INFINITY;
  int best_i = 0x7fffffff;
  // A task's last chunk: every row's butterflies, then lane r finishes row r, so the rows' epilogue loads and
  // stores go out together.
  auto finish = [&](int task) {
    float mine[NR];
#pragma unroll
    for (int i = 0; i < NR; ++i) mine[i] = 0.0f;
    // Every row's butterflies without a branch between them (rows past nr sum zeros and are not stored), so
    // the rows' shuffles interleave instead of running one row after another.
#pragma unroll
    for (int r = 0; r < RT; ++r) {
#pragma unroll
      for (int i = 0; i < NR; ++i) {
        const float t = warp_sum(acc[i][r]);
        if (lane == r) mine[i] = NORM ? __fmul_rn(t, inv_rms[r]) : t;
        acc[i][r] = 0.0f;
      }
    }
    if (EP == GemvEpilogue::Rope) {
      if (lane < nr) rope_pair(task, r0 + lane, mine[0], mine[NR - 1]);
      return;
    }
    if (lane < nr) {
      float* y = p.y + size_t(r0 + lane) * size_t(p.n);
      if (EP == GemvEpilogue::Store) {
        y[task] = mine[0];
        if (pick_better(mine[0], task, best_v, best_i)) best_v = mine[0], best_i = task;
      } else if (EP == GemvEpilogue::Residual) {
        const float d = p.bias ? __fadd_rn(mine[0], p.bias[task]) : mine[0];
        float res = 0.0f;
        if (!early_entry(pre_res, res_early, task, t0, &res)) res = __ldcg(y + task);
        y[task] = __fadd_rn(res, d);
      } else {
        const float g = mine[0], u = mine[NR - 1];
        y[task] = __fmul_rn(__fdiv_rn(g, __fadd_rn(1.0f, expf(-g))), u);
      }
    }
  };
  auto consume = [&](int s, const uint4(&b)[NR][U]) {
    const int task = t0 + s / steps, st = s % steps;
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int c = st * U + u;
      if (c < chunks) {
        float wf[NR][8];
#pragma unroll
        for (int i = 0; i < NR; ++i) widen8(b[i][u], wf[i]);
#pragma unroll
        for (int r = 0; r < RT; ++r) {
          if (r < nr) {
            const float4* row = xs + size_t(r) * groups + c * 64;
            const float4 a0 = row[lane], a1 = row[32 + lane];
#pragma unroll
            for (int i = 0; i < NR; ++i) acc[i][r] = dot8(wf[i], a0, a1, acc[i][r]);
          }
        }
      }
    }
    if (st == steps - 1) finish(task);
  };
  // A buffer is refilled as soon as it has been consumed, so one is always in flight behind the other.
  for (int s = 0; s < total; s += 2) {
    consume(s, A);
    if (s + 2 < total) issue(s + 2, A);
    if (s + 1 < total) {
      consume(s + 1, B);
      if (s + 3 < total) issue(s + 3, B);
    }
  }
  if (EP == GemvEpilogue::Store && p.pick_value) {  // the block's best of each row, warps in order
    if (lane < RT) pick_v[warp][lane] = best_v, pick_i[warp][lane] = best_i;
    __syncthreads();
    if (warp == 0 && lane < nr) {
      float bv = -INFINITY;
      int bi = 0x7fffffff;
      for (int v = 0; v < kWarps; ++v)
        if (pick_better(pick_v[v][lane], pick_i[v][lane], bv, bi)) bv = pick_v[v][lane], bi = pick_i[v][lane];
      const size_t at = size_t(r0 + lane) * gridDim.x + bx;
      p.pick_value[at] = bv;
      p.pick_index[at] = bi;
    }
  }
}

size_t smem_for(int k) { return size_t((k + kChunk - 1) / kChunk) * kChunk * sizeof(float); }

// STRATA_GEMV_BLOCK_ROWS (1-8), read once, fixes the rows a block serves instead of block_rows' choice, for
// measurements; it changes no row's bits.
int forced_block_rows() {
  static const int v = env_int("STRATA_GEMV_BLOCK_ROWS", 1, kMaxRowsPerBlock, 0);
  return v;
}

// Tasks a warp and blocks of a layout of w warps a block: the tasks spread over every warp of one wave.
int plan_blocks(int n, int w, int* tpw) {
  const int warps = device_sm_count() * kBlocksPerSm * w;
  *tpw = (n + warps - 1) / warps;
  return (n + w * *tpw - 1) / (w * *tpw);
}

// Rows one block serves in a window of `rows` rows. When a row's blocks fill fewer SMs than there are, the
// rows spread over the idle ones (several row groups of fewer rows, which read the weights once each but run
// side by side) instead of every block carrying them all; otherwise one group carries up to 8 rows, so the
// weights are read once. Capped by what the shared memory holds.
int block_rows(int n, int k, int rows) {
  int want = forced_block_rows();
  if (want == 0) {
    int tpw = 0;
    const int groups = std::max(1, device_sm_count() * kBlocksPerSm / plan_blocks(n, 16, &tpw));
    want = (rows + groups - 1) / groups;
  }
  return std::max(1, std::min({rows, want, kMaxRowsPerBlock, int(kSmemMax / smem_for(k))}));
}

// A launch's layout: 32 x 4 for one-row blocks without the input norm where that fills as many SMs (it keeps a
// thread's registers under 64), else 16 x 8 (blocks of several rows take 16 x 8); its blocks a row group and
// tasks a warp.
struct Layout {
  bool wide;
  int blocks, tpw;
};
Layout layout_for(int n, int rows_per_block, bool norm) {
  int tpw_narrow = 0, tpw_wide = 0;
  const int narrow = plan_blocks(n, 16, &tpw_narrow), wide = plan_blocks(n, 32, &tpw_wide);
  if (rows_per_block == 1 && !norm && wide >= narrow) return {true, wide, tpw_wide};
  return {false, narrow, tpw_narrow};
}

template <int NR, GemvEpilogue EP, bool NORM, int RT>
void launch_rt(GemvParams p, cudaStream_t stream) {
  const size_t smem = smem_for(p.k) * size_t(p.rows_per_block);
  const int row_groups = (p.rows + p.rows_per_block - 1) / p.rows_per_block;
  const Layout L = layout_for(p.n, p.rows_per_block, NORM);
  if constexpr (RT == 1 && !NORM) {
    if (L.wide) {
      launch_kernel(gemv_kernel<NR, EP, NORM, 32, 4, RT>, dim3(L.blocks, row_groups), dim3(32 * 32), smem, stream, p,
                    L.tpw);
      STRATA_CUDA_CHECK_LAUNCH();
      return;
    }
  }
  launch_kernel(gemv_kernel<NR, EP, NORM, 16, 8, RT>, dim3(L.blocks, row_groups), dim3(16 * 32), smem, stream, p,
                L.tpw);
  STRATA_CUDA_CHECK_LAUNCH();
}

template <int NR, GemvEpilogue EP, bool NORM>
void launch_one(GemvParams p, cudaStream_t stream) {
  p.rows_per_block = block_rows(p.n, p.k, p.rows);
  if (p.rows_per_block == 1) return launch_rt<NR, EP, NORM, 1>(p, stream);
  if (p.rows_per_block == 2) return launch_rt<NR, EP, NORM, 2>(p, stream);
  if (p.rows_per_block <= 4) return launch_rt<NR, EP, NORM, 4>(p, stream);
  return launch_rt<NR, EP, NORM, kMaxRowsPerBlock>(p, stream);
}

template <int NR, GemvEpilogue EP, bool NORM>
void configure_one() {
  const cudaFuncAttribute attr = cudaFuncAttributeMaxDynamicSharedMemorySize;
  STRATA_CUDA_CHECK(cudaFuncSetAttribute(gemv_kernel<NR, EP, NORM, 16, 8, 1>, attr, int(kSmemMax)));
  if constexpr (!NORM) STRATA_CUDA_CHECK(cudaFuncSetAttribute(gemv_kernel<NR, EP, NORM, 32, 4, 1>, attr, int(kSmemMax)));
  STRATA_CUDA_CHECK(cudaFuncSetAttribute(gemv_kernel<NR, EP, NORM, 16, 8, 2>, attr, int(kSmemMax)));
  STRATA_CUDA_CHECK(cudaFuncSetAttribute(gemv_kernel<NR, EP, NORM, 16, 8, 4>, attr, int(kSmemMax)));
  STRATA_CUDA_CHECK(cudaFuncSetAttribute(gemv_kernel<NR, EP, NORM, 16, 8, kMaxRowsPerBlock>, attr, int(kSmemMax)));
}

}  // namespace

int device_sm_count() {
  static const int n = [] {
    int dev = 0, v = 0;
    STRATA_CUDA_CHECK(cudaGetDevice(&dev));
    STRATA_CUDA_CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev));
    return v;
  }();
  return n;
}

bool gemv_supports(int k) { return k > 0 && k % 8 == 0 && smem_for(k) <= kSmemMax; }

void configure_gemv() {
  configure_one<1, GemvEpilogue::Store, false>();
  configure_one<1, GemvEpilogue::Store, true>();
  configure_one<1, GemvEpilogue::Residual, false>();
  configure_one<2, GemvEpilogue::Swiglu, true>();
  configure_one<2, GemvEpilogue::Swiglu, false>();
  configure_one<2, GemvEpilogue::Rope, true>();
  configure_one<2, GemvEpilogue::Rope, false>();
}

int gemv_blocks(const GemvParams& p) {
  return layout_for(p.n, block_rows(p.n, p.k, p.rows), p.norm != nullptr).blocks;  // as launch_one, launch_rt
}

void launch_gemv(const GemvParams& p, cudaStream_t stream) {
  if (p.n <= 0 || p.rows <= 0) return;
  if ((p.pick_value || p.pick_index) && (p.ep != GemvEpilogue::Store || !p.pick_value || !p.pick_index))
    throw Error("gemv: picks come only from the Store epilogue, with both their value and index arrays");
  if (!gemv_supports(p.k)) throw Error("gemv: inner dimension " + std::to_string(p.k) + " is not a multiple of 8 "
                                       "or is too long for the staged activation row");
  const bool norm = p.norm != nullptr;
  switch (p.ep) {
    case GemvEpilogue::Store:
      norm ? launch_one<1, GemvEpilogue::Store, true>(p, stream) : launch_one<1, GemvEpilogue::Store, false>(p, stream);
      break;
    case GemvEpilogue::Residual:
      if (norm) throw Error("gemv: the residual epilogue takes no input norm");
      launch_one<1, GemvEpilogue::Residual, false>(p, stream);
      break;
    case GemvEpilogue::Swiglu:
      norm ? launch_one<2, GemvEpilogue::Swiglu, true>(p, stream)
           : launch_one<2, GemvEpilogue::Swiglu, false>(p, stream);
      break;
    case GemvEpilogue::Rope: {
      const QkvRopeParams& q = p.rope;
      check_qkv_rope(q);
      if (q.q_norm || q.k_norm || q.qkv_rem) throw Error("gemv: the Rope epilogue takes no q/k norm or remainder rows");
      if (2 * p.n != (q.n_heads + 2 * q.n_kv_heads) * q.head_dim)
        throw Error("gemv: the Rope epilogue's n must be half the q | k | v rows");
      norm ? launch_one<2, GemvEpilogue::Rope, true>(p, stream) : launch_one<2, GemvEpilogue::Rope, false>(p, stream);
      break;
    }
  }
}

}  // namespace cuda
}  // namespace strata
