// The seeded sample on the device, for rows whose top_k is in [1, kDeviceTopKMax] and whose logits no
// processor rewrites (the host decides, see cuda_backend.cpp). It reproduces engine/sampling's
// sampling_candidates + draw_candidate + philox_uniform step for step:
// - candidates: the top_k finite logits in the order (value descending, lower id first), found as top_k
//   rounds of "the best item strictly after the previous one in that order" — the same set and order the
//   host's nth_element + sort yields, whatever the reduction order;
// - weights exp((z - z_max) / T) in double, their total and the kept mass added in id order as the host's
//   ChunkedSum adds them, top_p over their running sum in rank order, min_p against the top weight,
//   normalization over the kept ones, the cumulative walk to u — one thread, in the host's order;
// - u from Philox4x32-10 keyed by the seed, counter = the row's position.
// The only possible difference is the last bit of a double exp (CUDA's versus the C library's), which moves a
// draw only when u falls within ~1e-16 of a candidate boundary.
//
// Mode 2 (no top_k, or top_k >= vocab: the OpenAI default) over the whole vocabulary, the same steps:
// - z_max and the whole-vocabulary sums (total, the kept mass) in the host's chunks of kSamplerSumChunk ids
//   and its lane order (chunked_sum.hpp), a warp per chunk, the chunk sums then in order by one thread; the
//   min_p count is order-free;
// - the kDeviceSampleRanks best candidates found by a radix select on the logits' order-preserving bits
//   (four 8-bit passes), gathered with their ties and put in rank order by a bitonic sort in shared memory;
// - the top_p walk and the draw over those ranks in order as the host walks them: their weights and
//   probabilities computed side by side, one thread adding them up; a draw past them (a flat distribution)
//   goes on as the host's does (sampler.hpp): the rest of the kept set in id order, a warp per chunk summing
//   its part, one thread finding the chunk, then walking it. Only a top_p
//   cut past the ordered ranks, more ties at the threshold than the gather holds, or a non-finite logit
//   answers -1 for the host to draw the row.

#include <cfloat>
#include <cstdint>

#include "cuda/cuda_check.hpp"
#include "cuda/kernels/rank_select.cuh"
#include "cuda/kernels/kernels.hpp"
#include "cuda/kernels/launch.cuh"
#include "engine/sampling/chunked_sum.hpp"

namespace strata {
namespace cuda {
namespace {

constexpr int kThreads = 1024;


__device__ double philox_uniform_dev(uint64_t seed, uint64_t position) {
  uint32_t c0 = uint32_t(position), c1 = uint32_t(position >> 32), c2 = 0u, c3 = 0u;
  uint32_t k0 = uint32_t(seed), k1 = uint32_t(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const uint32_t hi0 = __umulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
    const uint32_t hi1 = __umulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
    const uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
    c0 = n0, c1 = n1, c2 = n2, c3 = n3;
  }
  const uint64_t bits = (uint64_t(c1) << 32 | c0) >> 11;
  return double(bits) * (1.0 / 9007199254740992.0);
}

constexpr int kGather = 2 * kDeviceSampleRanks;  // candidates at or above the select's threshold, ties included

// Ascending in this key is descending in the logit (finite floats).
__device__ __forceinline__ uint32_t desc_key(float v) {
  const uint32_t u = __float_as_uint(v);
  const uint32_t up = (u & 0x80000000u) ? ~u : (u | 0x80000000u);  // ascending with v
  return ~up;
}

struct FullShared {
  unsigned hist[256];
  double chunk[kDeviceSumChunks];
  float gz[kGather];
  int gi[kGather];
  float red_f[kThreads / 32];
  int red_i[kThreads / 32];
  int n_gather, n_minp, bad;
  uint32_t prefix;
  int need;
  int last_id;     // the kept set's last candidate (-1: every token, -2: w >= min_p), for the masked sum
  float last_z;
  double kept_total, cum;  // the walk's state past the ordered ranks
  int pick, last_rest;
  // The ranked candidates' weights, then their probabilities; past the ranks, those of the chunk the draw
  // falls in (-1: not in the rest).
  double walk[kSamplerSumChunk];
};

// Mode 2 for one row (the whole block). Writes picks[row] (a token, or -1 for the host).
__device__ void sample_full(const float* __restrict__ z, int vocab, float temperature, float top_p, float min_p,
                            uint64_t seed, uint32_t pos, int* pick_out, FullShared& sh) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  // z_max, and whether every logit is finite (the host's candidate list is then every id, in id order).
  float m = -INFINITY;
  int bad = 0;
  for (int i = tid; i < vocab; i += kThreads) {
    const float v = z[i];
    if (!isfinite(v)) bad = 1;
    else m = fmaxf(m, v);
  }
#pragma unroll
  for (int o = 16; o >= 1; o /= 2) {
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    bad |= __shfl_xor_sync(0xffffffffu, bad, o);
  }
  if (lane == 0) sh.red_f[warp] = m, sh.red_i[warp] = bad;
  if (tid == 0) sh.bad = 0, sh.n_minp = 0, sh.n_gather = 0;
  __syncthreads();
  float z_max = -INFINITY;
  for (int w = 0; w < kThreads / 32; ++w) z_max = fmaxf(z_max, sh.red_f[w]), bad |= sh.red_i[w];
  if (bad || vocab > kDeviceSampleMaxVocab) {
    if (tid == 0) *pick_out = -1;
    return;
  }
  const double inv_t = 1.0 / double(temperature);
  const double zm = double(z_max);
  const int n_chunks = (vocab + kSamplerSumChunk - 1) / kSamplerSumChunk;

  // Chunk sums of the weights (the host's ChunkedSum, a warp per chunk) and the min_p count.
  int minp_count = 0;
  warp_chunk_sums(vocab, sh.chunk, [&](int i) {
    const double w = exp((double(z[i]) - zm) * inv_t);
    minp_count += w >= double(min_p);
    return w;
  });
  if (min_p > 0.0f && minp_count > 0) atomicAdd(&sh.n_minp, minp_count);

  // Radix select: the key of the kDeviceSampleRanks-th best candidate (all of them when the vocabulary is
  // smaller).
  const int want = min(kDeviceSampleRanks, vocab);
  uint32_t prefix = 0, mask = 0;
  int need = want;
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int b = tid; b < 256; b += kThreads) sh.hist[b] = 0;
    __syncthreads();
    // Most keys share their top bits: lanes with the same bin add once, as a group.
    for (int base = 0; base < vocab; base += kThreads) {
      const int i = base + tid;
      const uint32_t k = i < vocab ? desc_key(z[i]) : 0u;
      const bool in = i < vocab && (k & mask) == prefix;
      const unsigned active = __ballot_sync(0xffffffffu, in);
      if (in) {
        const unsigned bin = (k >> shift) & 255u;
        const unsigned peers = __match_any_sync(active, bin);
        if (lane == __ffs(peers) - 1) atomicAdd(&sh.hist[bin], unsigned(__popc(peers)));
      }
    }
    __syncthreads();
    if (tid == 0) {
      int cum = 0, digit = 255;
      for (int b = 0; b < 256; ++b) {
        if (cum + int(sh.hist[b]) >= need) {
          digit = b;
          break;
        }
        cum += int(sh.hist[b]);
      }
      sh.prefix = prefix | (uint32_t(digit) << shift);
      sh.need = need - cum;
    }
    __syncthreads();
    prefix = sh.prefix;
    need = sh.need;
    mask |= 255u << shift;
  }
  // Every candidate at or above the threshold, ties at it included (more than kGather: the host draws).
  for (int i = tid; i < vocab; i += kThreads) {
    if (desc_key(z[i]) <= prefix) {
      const int at = atomicAdd(&sh.n_gather, 1);
      if (at < kGather) sh.gz[at] = z[i], sh.gi[at] = i;
    }
  }
  __syncthreads();
  const int gathered = sh.n_gather;
  if (gathered > kGather) {
    if (tid == 0) *pick_out = -1;
    return;
  }
  for (int i = gathered + tid; i < kGather; i += kThreads) sh.gz[i] = -INFINITY, sh.gi[i] = 0x7fffffff;
  __syncthreads();
  // Bitonic sort into rank order: value descending, lower id first (the padding last).
  for (int size = 2; size <= kGather; size *= 2) {
    for (int stride = size / 2; stride > 0; stride /= 2) {
      for (int t = tid; t < kGather / 2; t += kThreads) {
        const int lo = 2 * t - (t & (stride - 1)), hi = lo + stride;
        const bool up = (lo & size) == 0;  // this run sorts in rank order
        const float za = sh.gz[lo], zb = sh.gz[hi];
        const int ia = sh.gi[lo], ib = sh.gi[hi];
        if (ranks_before(zb, ib, za, ia) == up) {
          sh.gz[lo] = zb, sh.gi[lo] = ib;
          sh.gz[hi] = za, sh.gi[hi] = ia;
        }
      }
      __syncthreads();
    }
  }
  const int ranked = min(gathered, want);  // ranks [0, ranked) are the vocabulary's best, in order
  // Their weights side by side (each exactly the host's), so the walks below are one thread's adds only.
  for (int i = tid; i < ranked; i += kThreads) sh.walk[i] = exp((double(sh.gz[i]) - zm) * inv_t);
  __syncthreads();

  // The kept set, as the host decides it: min_p (a prefix of the ranking: w >= min_p), then top_p's walk.
  if (tid == 0) {
    double total = 0.0;
    for (int c = 0; c < n_chunks; ++c) total += sh.chunk[c];
    long keep = vocab;
    bool by_minp = false;
    if (min_p > 0.0f) {
      keep = sh.n_minp > 1 ? sh.n_minp : 1;
      by_minp = true;
    }
    bool host = false;
    if (top_p < 1.0f) {
      const double target = double(top_p) * total;
      double cum = 0.0;
      bool cut = false;
      for (int i = 0; i < keep && i < ranked; ++i) {
        cum += sh.walk[i];
        if (cum >= target) {
          keep = i + 1;
          cut = true;
          break;
        }
      }
      if (!cut && keep > ranked) host = true;  // the cut lies past the ordered ranks
      if (cut) by_minp = false;
    }
    sh.chunk[0] = total;  // chunk sums are no longer needed; total rides in slot 0
    sh.need = host ? -1 : int(keep);
    if (keep == vocab) sh.last_id = -1;
    else if (keep <= ranked) sh.last_id = sh.gi[keep - 1], sh.last_z = sh.gz[keep - 1];
    else sh.last_id = by_minp ? -2 : -1;  // min_p alone kept more than the ordered ranks
  }
  __syncthreads();
  const long keep = sh.need;
  if (keep < 0) {
    if (tid == 0) *pick_out = -1;
    return;
  }
  const double total = sh.chunk[0];
  __syncthreads();
  // The kept mass: the host's chunked sum over ids, the tokens outside the kept set adding nothing.
  const int last_id = sh.last_id;
  const float last_z = sh.last_z;
  if (last_id != -1) {
    warp_chunk_sums(vocab, sh.chunk, [&](int i) {
      const float v = z[i];
      const double w = exp((double(v) - zm) * inv_t);
      const bool kept = last_id == -2 ? w >= double(min_p) : !ranks_before(last_z, last_id, v, i);
      return kept ? w : 0.0;
    });
  }
  __syncthreads();
  const double u = philox_uniform_dev(seed, uint64_t(pos));
  if (tid == 0) {
    double kept_total = total;
    if (last_id != -1) {
      kept_total = 0.0;
      for (int c = 0; c < n_chunks; ++c) kept_total += sh.chunk[c];
    }
    sh.kept_total = kept_total;
  }
  __syncthreads();
  // The ranked candidates' probabilities side by side, then the draw's walk over them by one thread.
  const int walked = keep < long(ranked) ? int(keep) : ranked;
  for (int i = tid; i < walked; i += kThreads) sh.walk[i] /= sh.kept_total;
  __syncthreads();
  if (tid == 0) {
    double cum = 0.0;
    int pick = -1;
    for (int i = 0; i < walked; ++i) {
      cum += sh.walk[i];
      if (u < cum) {
        pick = sh.gi[i];
        break;
      }
    }
    if (pick < 0 && keep <= ranked) pick = sh.gi[keep - 1];  // u within rounding of 1
    sh.pick = pick;  // -1: the rest of the kept set, in id order
    sh.cum = cum;
    sh.last_rest = -1;
  }
  __syncthreads();
  if (sh.pick >= 0) {
    if (tid == 0) *pick_out = sh.pick;
    return;
  }
  // Past the ordered ranks (keep > ranked, so the kept set is every token or min_p's): the host's walk over
  // the rest in id order (sampler.hpp). Each chunk's sum, a warp per chunk; the chunk u falls in, by one
  // thread over those sums; then that chunk's probabilities side by side and one thread's walk.
  const double kept_total = sh.kept_total;
  const float rank_z = sh.gz[ranked - 1];
  const int rank_i = sh.gi[ranked - 1];
  auto rest_prob = [&](int i) {  // the probability of id i when it is in the rest, else -1
    const float v = z[i];
    const double w = exp((double(v) - zm) * inv_t);
    const bool kept = last_id == -2 ? w >= double(min_p) : true;
    return kept && ranks_before(rank_z, rank_i, v, i) ? w / kept_total : -1.0;
  };
  int rest_last = -1;
  warp_chunk_sums(vocab, sh.chunk, [&](int i) {
    const double q = rest_prob(i);
    if (q < 0.0) return 0.0;
    rest_last = i;  // ids come in increasing order to each thread
    return q;
  });
  if (rest_last >= 0) atomicMax(&sh.last_rest, rest_last);
  __syncthreads();
  if (tid == 0) {
    double cum = sh.cum;
    int at = -1;
    for (int c = 0; c < n_chunks; ++c) {
      if (u < cum + sh.chunk[c]) {
        at = c;
        break;
      }
      cum += sh.chunk[c];
    }
    sh.cum = cum;
    sh.need = at;
  }
  __syncthreads();
  const int at = sh.need;
  if (at < 0) {  // u within rounding of 1: the rest's highest id
    if (tid == 0) *pick_out = sh.last_rest;
    return;
  }
  const int c0 = at * kSamplerSumChunk, c1 = min(vocab, c0 + kSamplerSumChunk);
  for (int i = c0 + tid; i < c1; i += kThreads) sh.walk[i - c0] = rest_prob(i);
  __syncthreads();
  if (tid != 0) return;
  double cum = sh.cum;
  int last = -1;
  for (int i = c0; i < c1; ++i) {
    const double q = sh.walk[i - c0];
    if (q < 0.0) continue;
    cum += q;
    last = i;
    if (u < cum) break;
  }
  *pick_out = last;
}

__global__ void __launch_bounds__(kThreads) sample_kernel(const float* __restrict__ logits, int vocab,
                                                          const int32_t* __restrict__ specs, int* __restrict__ picks) {
  pdl_wait();
  pdl_launch_dependents();
  const int32_t* spec = specs + size_t(blockIdx.x) * kPickWords;
  if (spec[0] != 1 && spec[0] != 2) return;  // greedy or host-picked row: the argmax (or the host) answers
  const int top_k = spec[1];
  const float temperature = __int_as_float(spec[2]);
  const float top_p = __int_as_float(spec[3]);
  const float min_p = __int_as_float(spec[4]);
  const uint64_t seed = uint64_t(uint32_t(spec[5])) | (uint64_t(uint32_t(spec[6])) << 32);
  const uint32_t pos = uint32_t(spec[7]);
  if (spec[0] == 2) {
    __shared__ FullShared full;
    sample_full(logits + size_t(blockIdx.x) * vocab, vocab, temperature, top_p, min_p, seed, pos, picks + blockIdx.x,
                full);
    return;
  }

  __shared__ float cand_v[kDeviceTopKMax];
  __shared__ int cand_i[kDeviceTopKMax];
  __shared__ float red_v[kThreads / 32];
  __shared__ int red_i[kThreads / 32];
  const float* z = logits + size_t(blockIdx.x) * vocab;
  float pv = INFINITY;
  int pi = -1;
  int n = 0;
  for (; n < top_k; ++n) {
    float bv;
    int bi;
    next_ranked<true>(z, vocab, pv, pi, red_v, red_i, bv, bi);
    if (bi == 0x7fffffff) break;  // no finite logit left
    if (threadIdx.x == 0) cand_v[n] = bv, cand_i[n] = bi;  // thread 0 draws below
    pv = bv;
    pi = bi;
  }
  if (threadIdx.x != 0) return;
  if (n == 0) return;  // nothing finite: the host rule is the argmax, already in picks
  double w[kDeviceTopKMax];
  const double inv_t = 1.0 / double(temperature);
  const double z_max = cand_v[0];
  for (int i = 0; i < n; ++i) w[i] = exp((double(cand_v[i]) - z_max) * inv_t);
  // The host's whole-set sums run over the candidates in id order (chunked_sum.hpp; n <= 64 is one chunk):
  // by_id[j] is the rank of the j-th candidate by id.
  int by_id[kDeviceTopKMax];
  for (int j = 0; j < n; ++j) {
    int at = j;
    while (at > 0 && cand_i[by_id[at - 1]] > cand_i[j]) {
      by_id[at] = by_id[at - 1];
      --at;
    }
    by_id[at] = j;
  }
  auto id_order_sum = [&](int keep_ranks) {  // the weights of ranks [0, keep_ranks), added in id order
    LaneSum s;
    for (int j = 0; j < n; ++j) s.add(j, by_id[j] < keep_ranks ? w[by_id[j]] : 0.0);
    return s.value();
  };
  const double total = id_order_sum(n);
  int keep = n;
  if (top_p < 1.0f) {
    const double target = double(top_p) * total;
    double cum = 0.0;
    for (int i = 0; i < n; ++i) {
      cum += w[i];
      if (cum >= target) {
        keep = i + 1;
        break;
      }
    }
  }
  if (min_p > 0.0f) {
    int m = 0;
    while (m < keep && w[m] >= double(min_p)) ++m;
    keep = m > 1 ? m : 1;
  }
  const double kept = keep == n ? total : id_order_sum(keep);
  const double u = philox_uniform_dev(seed, uint64_t(pos));
  double cum = 0.0;
  int pick = cand_i[keep - 1];  // u within rounding of 1
  for (int i = 0; i < keep; ++i) {
    cum += w[i] / kept;
    if (u < cum) {
      pick = cand_i[i];
      break;
    }
  }
  picks[blockIdx.x] = pick;
}

}  // namespace

void launch_sample(const float* logits, int rows, int vocab, const int32_t* specs, int* picks, cudaStream_t stream) {
  if (rows <= 0) return;
  launch_kernel(sample_kernel, rows, kThreads, 0, stream, logits, vocab, specs, picks);
  STRATA_CUDA_CHECK_LAUNCH();
}

}  // namespace cuda
}  // namespace strata
