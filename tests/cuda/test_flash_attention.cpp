// The tensor-core prompt attention (launch_flash_attention) against the fp32 attention kernel
// (launch_attention) on random q / K / V in a paged arena with fragmented block tables: prompt tiles from position 0 and after a cached prefix, decode-like
// single-row tiles of several slots, head_dim 64 and 128, GQA groups 1 / 4 / 8 / 12. bf16 inputs, so the
// bound is 2e-2 of the largest reference value; the bf16 copy must be the fp32 output rounded. Also prints the
// speed of the 8B shape at 4096 rows (the lead reads it; speed is not asserted).
#include <catch2/catch.hpp>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "cuda/kernels/kernels.hpp"
#include "tests/cuda/cuda_test_buffers.hpp"
#include "engine/core/types.hpp"

using namespace strata;
using namespace strata::cuda;

namespace {

using cuda_test::bf16_rn;
using cuda_test::bf16_rem;
using cuda_test::Dev;

struct Segment {
  int slot, first_pos, count;
};

struct Shape {
  int head_dim, n_heads, n_kv_heads;
  int slots, context;
};

struct Result {
  float max_ref = 0.0f, max_err = 0.0f;
  size_t out16_mismatches = 0;
  size_t bf16_arena_mismatches = 0;  // the same window on a bf16 arena of the K/V values rounded: bit for bit
  bool pad_untouched = true;
  float flash_ms = 0.0f, ref_ms = 0.0f;
};

// Runs both kernels over `segs` (rows in order; each segment cut into tiles of <= 16 rows from its start).
Result run_case(const Shape& sh, const std::vector<Segment>& segs, unsigned seed, int timing_iters = 0) {
  const int hd = sh.head_dim, q_dim = sh.n_heads * hd, kv_dim = sh.n_kv_heads * hd;
  const int stride = q_dim + 2 * kv_dim;
  std::vector<int> pos, slot, tile_first, tile_rows;
  for (const Segment& s : segs) {
    REQUIRE(s.first_pos + s.count <= sh.context);
    for (int i = 0; i < s.count; i += kAttnQueryTile) {
      tile_first.push_back(int(pos.size()) + i);
      tile_rows.push_back(std::min(kAttnQueryTile, s.count - i));
    }
    for (int i = 0; i < s.count; ++i) {
      pos.push_back(s.first_pos + i);
      slot.push_back(s.slot);
    }
  }
  const int rows = int(pos.size()), n_tiles = int(tile_first.size());
  const int pad_rows = 16;  // past the window: must stay untouched

  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uq(-4.0f, 4.0f), ukv(-1.0f, 1.0f);
  std::vector<float> qkv(size_t(rows) * stride);
  for (float& x : qkv) x = uq(rng);
  // A paged arena of two layers: the kernels read layer 1, so layer_offset is exercised. Blocks of 16 positions
  // handed out interleaved across slots and in reverse, so every slot's table is fragmented and a K/V tile of
  // either kernel spans blocks that are far apart and out of order.
  const int bs = 16, per_slot = (sh.context + bs - 1) / bs, blocks = sh.slots * per_slot;
  std::vector<int32_t> table(static_cast<size_t>(blocks));
  for (int s = 0; s < sh.slots; ++s)
    for (int j = 0; j < per_slot; ++j) table[size_t(s) * per_slot + j] = blocks - 1 - (j * sh.slots + s);
  const size_t layer = size_t(blocks) * bs * kv_dim, arena = 2 * layer;
  std::vector<float> kh(arena), vh(arena);
  for (float& x : kh) x = ukv(rng);
  for (float& x : vh) x = ukv(rng);

  Dev<float> d_qkv(qkv.size()), d_k(arena), d_v(arena);
  d_qkv.put(qkv);
  d_k.put(kh);
  d_v.put(vh);
  Dev<uint16_t> d_k16(arena), d_v16(arena);
  {
    std::vector<uint16_t> k16(arena), v16(arena);
    for (size_t i = 0; i < arena; ++i) {
      k16[i] = bf16_rn(kh[i]);
      v16[i] = bf16_rn(vh[i]);
    }
    d_k16.put(k16);
    d_v16.put(v16);
  }
  Dev<int32_t> d_table(table.size());
  d_table.put(table);
  Dev<int> d_pos(rows), d_slot(rows), d_tf(n_tiles), d_tr(n_tiles), d_nt(1);
  d_pos.put(pos);
  d_slot.put(slot);
  d_tf.put(tile_first);
  d_tr.put(tile_rows);
  d_nt.put({n_tiles});

  int max_pos = 0;
  for (int p : pos) max_pos = std::max(max_pos, p);
  const int max_splits = (sh.context + kAttnSplit - 1) / kAttnSplit;
  Dev<float> part_acc(size_t(rows) * sh.n_heads * max_splits * hd), part_ml(size_t(rows) * sh.n_heads * max_splits * 2);
  const size_t out_n = size_t(rows + pad_rows) * q_dim;
  Dev<float> ref(out_n), got(out_n);
  // The bf16 copy in the split GEMM's form (Bf16Out): the window's rows rounded, then their remainders.
  const size_t out16_n = out_n + size_t(rows) * q_dim;
  Dev<uint16_t> got16(out16_n);
  const std::vector<float> nan_fill(out_n, NAN);
  ref.put(nan_fill);
  got.put(nan_fill);
  got16.put(std::vector<uint16_t>(out16_n, 0x7fc1));

  AttentionParams ap;
  ap.qkv = d_qkv.p;
  ap.qkv_stride = stride;
  ap.kv.k = d_k.p;
  ap.kv.v = d_v.p;
  ap.kv.block_table = d_table.p;
  ap.kv.table_stride = per_slot;
  ap.kv.block_size = bs;
  ap.kv.layer_offset = layer;
  ap.kv.kv_dim = kv_dim;
  ap.n_heads = sh.n_heads;
  ap.n_kv_heads = sh.n_kv_heads;
  ap.head_dim = hd;
  ap.scale = 1.0f / std::sqrt(float(hd));
  ap.pos = d_pos.p;
  ap.slot = d_slot.p;
  ap.tile_first = d_tf.p;
  ap.tile_rows = d_tr.p;
  ap.n_tiles = d_nt.p;
  ap.max_tiles = n_tiles + 3;  // a graph's grid covers more tiles than the window has: those blocks exit
  ap.max_splits = max_splits;
  ap.grid_splits = max_pos / kAttnSplit + 1;
  ap.rows = rows;
  ap.part_acc = part_acc.p;
  ap.part_ml = part_ml.p;

  configure_attention(hd);
  configure_flash_attention(hd);
  Result res;
  cudaEvent_t e0, e1;
  CU(cudaEventCreate(&e0));
  CU(cudaEventCreate(&e1));

  AttentionParams rp = ap;
  rp.out = ref.p;
  CU(cudaEventRecord(e0));
  launch_attention(rp, nullptr);
  CU(cudaEventRecord(e1));
  CU(cudaDeviceSynchronize());
  CU(cudaEventElapsedTime(&res.ref_ms, e0, e1));

  AttentionParams fp = ap;
  fp.part_acc = nullptr;  // the flash kernel needs no split partials
  fp.part_ml = nullptr;
  fp.out = got.p;
  fp.out16 = Bf16Out{got16.p, true};
  launch_flash_attention(fp, nullptr);
  CU(cudaDeviceSynchronize());
  if (timing_iters > 0) {
    CU(cudaEventRecord(e0));
    for (int i = 0; i < timing_iters; ++i) launch_flash_attention(fp, nullptr);
    CU(cudaEventRecord(e1));
    CU(cudaEventSynchronize(e1));
    CU(cudaEventElapsedTime(&res.flash_ms, e0, e1));
    res.flash_ms /= float(timing_iters);
  }
  CU(cudaGetLastError());
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);

  // The kernel rounds fp32 K/V to bf16 (nearest even) before any math, so an arena that stores those values
  // gives the same bits.
  Dev<float> got_b(out_n);
  got_b.put(nan_fill);
  AttentionParams bp = fp;
  bp.kv.k = d_k16.p;
  bp.kv.v = d_v16.p;
  bp.kv.type = KvType::BF16;
  bp.out = got_b.p;
  bp.out16 = Bf16Out{};
  launch_flash_attention(bp, nullptr);
  CU(cudaDeviceSynchronize());
  const auto gb = got_b.get();

  const auto r = ref.get(), g = got.get();
  const auto g16 = got16.get();
  const size_t n = size_t(rows) * q_dim;
  for (size_t i = 0; i < n; ++i) {
    res.max_ref = std::max(res.max_ref, std::fabs(r[i]));
    const float d = std::fabs(g[i] - r[i]);
    if (!(d <= res.max_err)) res.max_err = std::isnan(d) ? INFINITY : std::max(res.max_err, d);
    if (g16[i] != bf16_rn(g[i]) || g16[n + i] != bf16_rem(g[i])) ++res.out16_mismatches;
    if (std::memcmp(&g[i], &gb[i], 4) != 0) ++res.bf16_arena_mismatches;
  }
  for (size_t i = n; i < out_n; ++i)
    if (!std::isnan(g[i])) res.pad_untouched = false;
  for (size_t i = 2 * n; i < out16_n; ++i)
    if (g16[i] != 0x7fc1) res.pad_untouched = false;
  return res;
}

void check(const Result& r) {
  INFO("max |ref| " << r.max_ref << ", max |flash - ref| " << r.max_err);
  CHECK(r.max_ref > 0.0f);
  CHECK(std::isfinite(r.max_err));
  CHECK(r.max_err <= 2e-2f * r.max_ref);
  CHECK(r.out16_mismatches == 0);
  CHECK(r.bf16_arena_mismatches == 0);
  CHECK(r.pad_untouched);
}

}  // namespace

TEST_CASE("flash attention refuses head dims it has no kernel for, naming the field", "[host]") {
  AttentionParams p;
  p.rows = 4;
  p.n_heads = 8;
  p.n_kv_heads = 2;
  p.head_dim = 96;
  try {
    launch_flash_attention(p, nullptr);
    FAIL("no error for head_dim 96");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("head_dim 96") != std::string::npos);
  }
  p.head_dim = 128;
  p.n_kv_heads = 3;
  CHECK_THROWS_AS(launch_flash_attention(p, nullptr), Error);
  CHECK_FALSE(flash_attention_supports(80));
  CHECK(flash_attention_supports(64));
  CHECK(flash_attention_supports(128));
}

TEST_CASE("flash attention matches the fp32 attention kernel on prompt tiles") {
  int devices = 0;
  REQUIRE(cudaGetDeviceCount(&devices) == cudaSuccess);
  REQUIRE(devices > 0);
  SECTION("hd 128, 32 q / 8 kv heads, prompts of 1..300 rows from position 0") {
    for (int n : {1, 15, 16, 17, 64, 65, 300}) {
      INFO("rows " << n);
      check(run_case({128, 32, 8, 2, 512}, {{1, 0, n}}, 10u + unsigned(n)));
    }
  }
  SECTION("hd 64, 8 q / 8 kv heads (group 1), after a cached prefix of 200") {
    check(run_case({64, 8, 8, 2, 1024}, {{0, 200, 300}}, 2));
  }
  SECTION("hd 128, 16 q / 2 kv heads (group 8), prefix 77, 150 rows") {
    check(run_case({128, 16, 2, 1, 512}, {{0, 77, 150}}, 3));
  }
  SECTION("hd 64, 24 q / 2 kv heads (group 12: three blocks per kv head)") {
    check(run_case({64, 24, 2, 1, 512}, {{0, 5, 100}}, 4));
  }
  SECTION("hd 64 and 128, group 4: two slots' prompts in one window, unaligned offsets") {
    check(run_case({64, 16, 4, 3, 1024}, {{2, 0, 37}, {0, 130, 200}, {1, 999, 25}}, 5));
    check(run_case({128, 16, 4, 3, 1024}, {{2, 0, 37}, {0, 130, 200}, {1, 999, 25}}, 6));
  }
}

TEST_CASE("flash attention matches the fp32 attention kernel on single-row tiles of several slots") {
  int devices = 0;
  REQUIRE(cudaGetDeviceCount(&devices) == cudaSuccess);
  REQUIRE(devices > 0);
  const std::vector<Segment> decode = {{0, 0, 1}, {1, 1, 1}, {2, 63, 1}, {3, 64, 1}, {4, 500, 1}, {5, 1023, 1}};
  check(run_case({64, 32, 4, 6, 1024}, decode, 7));
  check(run_case({128, 32, 8, 6, 1024}, decode, 8));
  check(run_case({128, 8, 8, 6, 1024}, decode, 9));
}

TEST_CASE("flash attention speed: 4096 prompt rows, hd 128, 32 q / 8 kv heads (printed, not asserted)") {
  int devices = 0;
  REQUIRE(cudaGetDeviceCount(&devices) == cudaSuccess);
  REQUIRE(devices > 0);
  const int rows = 4096, hd = 128, heads = 32;
  const Result r = run_case({hd, heads, 8, 1, rows}, {{0, 0, rows}}, 11, 20);
  check(r);
  const double flop = 4.0 * double(rows) * double(rows) / 2.0 * hd * heads;
  std::printf("flash attention 4096 x hd128 x 32/8: %.3f ms, %.1f TFLOP/s (fp32 attention kernel: %.3f ms, %.1f TFLOP/s)\n",
              double(r.flash_ms), flop / (double(r.flash_ms) * 1e9), double(r.ref_ms),
              flop / (double(r.ref_ms) * 1e9));
  CHECK(r.flash_ms > 0.0f);
}
