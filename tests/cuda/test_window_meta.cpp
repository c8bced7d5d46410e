// Host-side pieces of the CUDA backend that need no GPU (tagged [host]; `test_cuda "[host]"` runs them on any
// machine): how a window becomes graph metadata — attention query tiles, output rows, the shape a graph is
// captured for — and the shape checks kernels make before launching.
#include <catch2/catch.hpp>

#include <cstring>

#include "cuda/kernels/kernels.hpp"
#include "cuda/window_meta.hpp"
#include "tests/cuda/cuda_test_util.hpp"

using namespace strata;
using namespace strata::cuda;
using strata::cuda_test::row;
using Catch::Matchers::Contains;

namespace {

Window slot_chunk(SlotId s, int first, int count) {
  Window w;
  for (int i = 0; i < count; ++i) w.rows.push_back(row(s, 100 + i, first + i, false, false));
  return w;
}

std::vector<int> words(const WindowMeta& m, int offset, int n) {
  return std::vector<int>(m.words.begin() + offset, m.words.begin() + offset + n);
}

}  // namespace

TEST_CASE("a prompt chunk is cut into query tiles of at most 16 consecutive rows", "[host]") {
  Window w = slot_chunk(2, 7, 20);
  w.rows.back().want_pick = true;
  const WindowMeta m = build_window_meta(w, 0, 20, 32);
  const MetaLayout L(m.shape);
  CHECK(m.shape.rows == 20);
  CHECK(m.shape.out_rows == 1);
  CHECK(m.out_rows == std::vector<int>{19});
  CHECK(m.words[size_t(L.n_tiles)] == 2);
  CHECK(words(m, L.tile_first, 2) == std::vector<int>{0, 16});
  CHECK(words(m, L.tile_rows, 2) == std::vector<int>{16, 4});
  CHECK(m.shape.tiles_cap == 2);
  CHECK(words(m, L.pos, 3) == std::vector<int>{7, 8, 9});
  CHECK(words(m, L.slot, 2) == std::vector<int>{2, 2});
  CHECK(words(m, L.tokens, 2) == std::vector<int>{100, 101});
  CHECK(int(m.words.size()) == L.words);
  // Pick settings are the backend's to fill: nothing is sampled on the device unless it writes them.
  CHECK(words(m, L.pick_specs, kPickWords) == std::vector<int>(size_t(kPickWords), 0));
  CHECK(L.words == L.pick_specs + kPickWords);
}

TEST_CASE("rows of different slots, or interleaved rows of one slot, never share a query tile", "[host]") {
  Window w;
  w.rows.push_back(row(3, 1, 0));
  w.rows.push_back(row(1, 1, 0));
  w.rows.push_back(row(3, 1, 1));
  w.rows.push_back(row(1, 1, 1));
  w.rows.push_back(row(1, 1, 2));
  const WindowMeta m = build_window_meta(w, 0, 5, 32);
  const MetaLayout L(m.shape);
  CHECK(m.words[size_t(L.n_tiles)] == 4);
  CHECK(words(m, L.tile_first, 4) == std::vector<int>{0, 1, 2, 3});
  CHECK(words(m, L.tile_rows, 4) == std::vector<int>{1, 1, 1, 2});
  CHECK(m.shape.tiles_cap == 4);
  CHECK(m.shape.out_rows == 5);
}

TEST_CASE("a segment's metadata indexes its own rows, and its split cap covers its largest position", "[host]") {
  Window w = slot_chunk(0, 290, 12);
  for (Row& r : w.rows) r.want_logits = true;
  const WindowMeta m = build_window_meta(w, 4, 10, 32);
  CHECK(m.shape.rows == 6);
  CHECK(m.out_rows == std::vector<int>{0, 1, 2, 3, 4, 5});
  const MetaLayout L(m.shape);
  CHECK(m.words[size_t(L.pos)] == 294);
  // Position 299 needs splits 0, 1, 2 of kAttnSplit = 128 positions: the cap rounds 3 up to 4...
  CHECK(m.shape.splits_cap == 4);
  // ...but never past the workspace's split count.
  CHECK(build_window_meta(w, 4, 10, 3).shape.splits_cap == 3);
}

TEST_CASE("window shapes that differ in any field are different graphs", "[host]") {
  WindowShape a{1, 1, 1, 1}, b{1, 1, 1, 2}, c{2, 1, 1, 1};
  CHECK(a < b);
  CHECK(!(b < a));
  CHECK(a < c);
  CHECK(!(a < a));
}

TEST_CASE("the skinny matmul refuses an inner dimension its 16-byte loads cannot cover", "[host]") {
  CHECK_THROWS_WITH(launch_matvec(nullptr, WType::BF16, 8, 12, nullptr, 1, nullptr, nullptr),
                    Contains("inner dimension 12 is not a multiple of 8"));
  CHECK_THROWS_WITH(launch_matvec(nullptr, WType::F32, 8, 6, nullptr, 1, nullptr, nullptr),
                    Contains("not a multiple of 4"));
}

TEST_CASE("the skinny matmul refuses a fold it cannot do", "[host]") {
  float one = 1.0f;
  MatvecFold resid;
  resid.ss_out = &one;
  CHECK_THROWS_WITH(launch_matvec(nullptr, WType::F32, 8, 16, nullptr, 1, nullptr, nullptr, resid),
                    Contains("needs bf16 weights"));
  CHECK_THROWS_WITH(launch_matvec_swiglu(nullptr, WType::BF16, 8, 16, nullptr, 1, nullptr, nullptr, resid),
                    Contains("no residual epilogue"));
  MatvecFold half = resid;
  half.xn_out = &one;  // without next_norm
  CHECK_THROWS_WITH(launch_matvec(nullptr, WType::BF16, 8, 16, nullptr, 1, nullptr, nullptr, half),
                    Contains("xn_out and next_norm go together"));
  MatvecFold stray;
  stray.next_norm = &one;
  stray.xn_out = &one;  // without the residual epilogue
  CHECK_THROWS_WITH(launch_matvec(nullptr, WType::BF16, 8, 16, nullptr, 1, nullptr, nullptr, stray),
                    Contains("xn_out belongs to the residual epilogue"));
  resid.ss_in = &one;
  CHECK_THROWS_WITH(launch_matvec(nullptr, WType::BF16, 8, 16, nullptr, 1, nullptr, nullptr, resid),
                    Contains("a folded norm and a residual epilogue in one launch"));
}

TEST_CASE("the fused GEMV refuses an inner dimension it cannot stage and a norm before a residual add", "[host]") {
  GemvParams p;
  p.n = 8;
  p.k = 12;
  CHECK_THROWS_WITH(launch_gemv(p, nullptr), Contains("inner dimension 12 is not a multiple of 8"));
  p.k = 1 << 20;
  CHECK_THROWS_WITH(launch_gemv(p, nullptr), Contains("too long"));
  CHECK_FALSE(gemv_supports(1 << 20));
  CHECK(gemv_supports(14336));
  p.k = 64;
  float norm = 1.0f;
  p.norm = &norm;
  p.ep = GemvEpilogue::Residual;
  CHECK_THROWS_WITH(launch_gemv(p, nullptr), Contains("residual epilogue takes no input norm"));
}

TEST_CASE("a device pick's spec words carry the settings sample.cu reads", "[host]") {
  SamplingParams p;
  p.temperature = 0.7f;
  p.top_k = 0;
  p.top_p = 0.9f;
  p.min_p = 0.05f;
  p.seed = 0x0123456789abcdefull;
  int32_t w[kPickWords] = {};
  write_pick_spec(w, 2, p, 1234);
  float t, tp, mp;
  std::memcpy(&t, &w[2], 4);
  std::memcpy(&tp, &w[3], 4);
  std::memcpy(&mp, &w[4], 4);
  CHECK(w[0] == 2);
  CHECK(w[1] == 0);
  CHECK(t == 0.7f);
  CHECK(tp == 0.9f);
  CHECK(mp == 0.05f);
  CHECK((uint64_t(uint32_t(w[6])) << 32 | uint32_t(w[5])) == p.seed);
  CHECK(w[7] == 1234);
}

TEST_CASE("row buckets: powers of two to 16, then steps of about 1.5x", "[host]") {
  std::vector<int> got;
  for (int n : {1, 2, 3, 5, 9, 16, 17, 25, 33, 49, 64, 65, 97, 129, 4096}) got.push_back(bucket_rows(n));
  CHECK(got == std::vector<int>{1, 2, 4, 8, 16, 16, 24, 32, 48, 64, 64, 96, 128, 192, 4096});
  for (int n = 1; n <= 5000; ++n) {
    const int b = bucket_rows(n);
    REQUIRE(b >= n);
    REQUIRE(bucket_rows(b) == b);            // a bucket is its own bucket
    if (n > 16) REQUIRE(2 * b <= 3 * n);  // padding is at most a third of the bucket
  }
}

TEST_CASE("a padded window keeps its real rows and fills the bucket with scratch-slot rows", "[host]") {
  // 37 decode rows of 37 slots, every one asking for a pick: 48 rows and 48 output rows.
  Window w;
  for (int s = 0; s < 37; ++s) w.rows.push_back(row(s, 10 + s, 5 + s, true, false));
  const SlotId scratch = 40;
  const WindowMeta m = build_window_meta(w, 0, 37, 8, scratch, 64);
  CHECK(m.shape.rows == 48);
  CHECK(m.shape.out_rows == 48);
  CHECK(m.out_rows.size() == 37);  // what the host reads back
  const MetaLayout L(m.shape);
  for (int i = 0; i < 37; ++i) {
    REQUIRE(m.words[size_t(L.slot + i)] == i);
    REQUIRE(m.words[size_t(L.pos + i)] == 5 + i);
  }
  for (int i = 37; i < 48; ++i) {
    REQUIRE(m.words[size_t(L.slot + i)] == scratch);
    REQUIRE(m.words[size_t(L.pos + i)] == i - 37);
    REQUIRE(m.words[size_t(L.tokens + i)] == 0);
  }
  // Padded output rows point at a real row; the tiles: 37 single-row ones, then one tile of the 11 padding rows.
  for (int i = 37; i < 48; ++i) REQUIRE(m.words[size_t(L.out_rows + i)] == 36);
  CHECK(m.words[size_t(L.n_tiles)] == 38);
  CHECK(m.words[size_t(L.tile_first + 37)] == 37);
  CHECK(m.words[size_t(L.tile_rows + 37)] == 11);
  CHECK(m.shape.tiles_cap == 48);  // min(rows, next power of two of 38)
  // The span caps the padding positions (a scratch slot with a short context) and starts a new tile each time.
  const WindowMeta short_ctx = build_window_meta(w, 0, 37, 8, scratch, 4);
  const MetaLayout S(short_ctx.shape);
  CHECK(short_ctx.words[size_t(S.pos + 41)] == 0);
  CHECK(short_ctx.words[size_t(S.n_tiles)] == 37 + 3);
  // Without a scratch slot nothing is padded.
  CHECK(build_window_meta(w, 0, 37, 8).shape.rows == 37);
}

TEST_CASE("a window carrying prompt chunks pads more than one output to kDecodeRowsMax", "[host]") {
  // d decode rows of d slots, then a 256-row prompt chunk of slot 100 whose last row picks.
  const SlotId scratch = 200;
  auto mixed = [&](int d) {
    Window w;
    for (int s = 0; s < d; ++s) w.rows.push_back(row(s, 10 + s, 300 + s, true, false));
    for (int p = 0; p < 256; ++p) w.rows.push_back(row(100, 7, p, p == 255, false));
    return build_window_meta(w, 0, int(w.rows.size()), 8, scratch, 16, 128);
  };
  for (int d : {1, 3, 15, 17, 30, 47, 64, 100, 127}) {
    const WindowMeta m = mixed(d);
    INFO(d);
    CHECK(m.shape.rows == bucket_rows(d + 256));
    CHECK(m.shape.out_rows == kDecodeRowsMax);  // one graph for every such count
    CHECK(m.out_rows.size() == size_t(d + 1));
    const MetaLayout L(m.shape);
    for (int i = d + 1; i < kDecodeRowsMax; ++i) REQUIRE(m.words[size_t(L.out_rows + i)] == d + 255);
  }
  // A prompt chunk alone computes its one output row (or none), and decode windows keep their buckets.
  Window chunk = slot_chunk(100, 0, 256);
  CHECK(build_window_meta(chunk, 0, 256, 8, scratch, 16, 128).shape.out_rows == 0);
  chunk.rows.back().want_pick = true;
  CHECK(build_window_meta(chunk, 0, 256, 8, scratch, 16, 128).shape.out_rows == 1);
  Window dec;
  for (int s = 0; s < 37; ++s) dec.rows.push_back(row(s, 10 + s, 5 + s, true, false));
  CHECK(build_window_meta(dec, 0, 37, 8, scratch, 64, 128).shape.out_rows == 48);
  // Never past what the workspace holds (64 output rows here).
  Window w = dec;
  for (int p = 0; p < 256; ++p) w.rows.push_back(row(100, 7, p, p == 255, false));
  CHECK(build_window_meta(w, 0, int(w.rows.size()), 8, scratch, 16, 64).shape.out_rows == 64);
}

TEST_CASE("short tiles: a window off flash attention cuts its tiles for the tensor-core kernel, others keep 16", "[host]") {
  // A mixed window: 12 decode rows of slots 10..21, then a 40-row prompt chunk of slot 2.
  Window w;
  for (int s = 0; s < 12; ++s) w.rows.push_back(row(10 + s, 1, 300, true, false));
  for (int i = 0; i < 40; ++i) w.rows.push_back(row(2, 100 + i, i, i == 39, false));
  const int T = int(w.rows.size());
  // 12 + 3 tiles (16, 16, 8 rows): 52 rows < 4 x 16, so no flash, and short tiles of 4 rows apply.
  const WindowMeta plain = build_window_meta(w, 0, T, 32);
  CHECK(plain.words[size_t(MetaLayout(plain.shape).n_tiles)] == 15);
  const WindowMeta m = build_window_meta(w, 0, T, 32, kNoSlot, 16, 0, 4, 17);
  const MetaLayout L(m.shape);
  REQUIRE(m.words[size_t(L.n_tiles)] == 12 + 10);
  CHECK(m.shape.tiles_cap == 32);
  CHECK(!takes_flash_tiles(m.shape.rows, m.shape.tiles_cap));
  std::vector<int> first, rows;
  for (int s = 0; s < 12; ++s) first.push_back(s), rows.push_back(1);
  for (int t = 0; t < 10; ++t) first.push_back(12 + 4 * t), rows.push_back(4);
  CHECK(words(m, L.tile_first, 22) == first);
  CHECK(words(m, L.tile_rows, 22) == rows);
  // Every row is in exactly one tile, in order: the rows themselves are unchanged.
  CHECK(words(m, L.pos, T) == words(plain, MetaLayout(plain.shape).pos, T));
  // Below the minimum row count (the fixed-order kernels' windows) tiles stay at 16 rows.
  CHECK(build_window_meta(w, 0, T, 32, kNoSlot, 16, 0, 4, 64).words[size_t(L.n_tiles)] == 15);
  // A prompt chunk alone takes flash attention (64 rows in 4 tiles): its tiles stay at 16 rows.
  const Window p = slot_chunk(2, 0, 64);
  const WindowMeta pm = build_window_meta(p, 0, 64, 32, kNoSlot, 16, 0, 4, 17);
  CHECK(pm.words[size_t(MetaLayout(pm.shape).n_tiles)] == 4);
  CHECK(takes_flash_tiles(pm.shape.rows, pm.shape.tiles_cap));
}

TEST_CASE("flash long tiles: a mixed window's prompt tiles go to a second list, its short tiles stay", "[host]") {
  // 12 decode rows of slots 10..21, a 40-row prompt chunk of slot 2 (tiles of 16, 16, 8 rows), a 3-row chunk
  // of slot 3 (one tile no longer than the short tiles' 4 rows), padded to 64 rows from scratch slot 50.
  Window w;
  for (int s = 0; s < 12; ++s) w.rows.push_back(row(10 + s, 1, 300, true, false));
  for (int i = 0; i < 40; ++i) w.rows.push_back(row(2, 100 + i, i, i == 39, false));
  for (int i = 0; i < 3; ++i) w.rows.push_back(row(3, 200 + i, 20 + i, i == 2, false));
  const int T = int(w.rows.size());
  const WindowMeta cut = build_window_meta(w, 0, T, 32, 50, 16, 64, 4, 17);
  const WindowMeta m = build_window_meta(w, 0, T, 32, 50, 16, 64, 4, 17, true);
  REQUIRE(m.shape.rows == 64);
  REQUIRE(!takes_flash_tiles(cut.shape.rows, cut.shape.tiles_cap));
  // Its short list alone (16 tiles' grid) would pass for a prompt window: the long list decides.
  CHECK(takes_flash_tiles(m.shape.rows, m.shape.tiles_cap));
  CHECK(!takes_flash(m.shape));
  const MetaLayout L(m.shape), C(cut.shape);
  // Cut: 12 + 10 + 1 tiles and the 9 padding rows cut into 4 + 4 + 1; no second list.
  CHECK(cut.words[size_t(C.n_tiles)] == 12 + 10 + 1 + 3);
  CHECK(cut.shape.flash_tiles_cap == 0);
  CHECK(cut.words[size_t(C.n_flash_tiles)] == 0);
  // With flash: the short list keeps the 12 decode rows and the 3-row tile; the prompt's three tiles and the
  // padding tile (9 rows) are the long list, whole.
  REQUIRE(m.words[size_t(L.n_tiles)] == 13);
  CHECK(m.shape.tiles_cap == 16);
  std::vector<int> first, rows;
  for (int s = 0; s < 12; ++s) first.push_back(s), rows.push_back(1);
  first.push_back(52), rows.push_back(3);
  CHECK(words(m, L.tile_first, 13) == first);
  CHECK(words(m, L.tile_rows, 13) == rows);
  REQUIRE(m.words[size_t(L.n_flash_tiles)] == 4);
  CHECK(m.shape.flash_tiles_cap == 4);
  CHECK(words(m, L.flash_tile_first, 4) == std::vector<int>({12, 28, 44, 55}));
  CHECK(words(m, L.flash_tile_rows, 4) == std::vector<int>({16, 16, 8, 9}));
  // The rows and what they produce are unchanged; the pick specs follow both lists.
  CHECK(words(m, L.pos, 64) == words(cut, C.pos, 64));
  CHECK(words(m, L.out_rows, m.shape.out_rows) == words(cut, C.out_rows, cut.shape.out_rows));
  CHECK(L.pick_specs == L.flash_tile_rows + 4);
  CHECK(L.words == L.pick_specs + kPickWords * m.shape.out_rows);
  // The shapes differ, so the two never share a graph.
  CHECK((cut.shape < m.shape || m.shape < cut.shape));
  // A window that takes flash attention whole, and one below the short tiles' minimum, have no second list.
  const Window p = slot_chunk(2, 0, 64);
  CHECK(build_window_meta(p, 0, 64, 32, kNoSlot, 16, 0, 4, 17, true).shape.flash_tiles_cap == 0);
  CHECK(build_window_meta(w, 0, T, 32, 50, 16, 64, 4, 128, true).shape.flash_tiles_cap == 0);
  // Only long tiles: the short list is empty and its grid one tile wide.
  Window only;
  for (int s = 0; s < 9; ++s)
    for (int i = 0; i < 5; ++i) only.rows.push_back(row(s, 1, 10 + i, i == 4, false));
  const WindowMeta o = build_window_meta(only, 0, 45, 32, kNoSlot, 16, 0, 4, 17, true);
  CHECK(!takes_flash(o.shape));
  CHECK(o.words[size_t(MetaLayout(o.shape).n_tiles)] == 0);
  CHECK(o.shape.tiles_cap == 1);
  CHECK(o.shape.flash_tiles_cap == 16);
  CHECK(o.words[size_t(MetaLayout(o.shape).n_flash_tiles)] == 9);
}

TEST_CASE("no window's metadata outgrows meta_words_max, with or without either tile option", "[host]") {
  // Decode rows of d slots, then prompt chunks of c rows each for k slots, for many (d, c, k): the device
  // block and its pinned mirror are sized by meta_words_max.
  for (int d : {0, 1, 5, 16, 100, 128})
    for (int c : {1, 3, 5, 16, 17, 40, 129})
      for (int k : {0, 1, 3})
        for (int opt = 0; opt < 3; ++opt) {
          Window w;
          for (int s = 0; s < d; ++s) w.rows.push_back(row(s, 1, 50 + s, true, false));
          for (int j = 0; j < k; ++j)
            for (int i = 0; i < c; ++i) w.rows.push_back(row(200 + j, 2, i, i + 1 == c, false));
          const int T = int(w.rows.size());
          if (T == 0) continue;
          const WindowMeta m = build_window_meta(w, 0, T, 32, 400, 16, 256, opt > 0 ? 4 : 0, 17, opt == 2);
          INFO("d " << d << " c " << c << " k " << k << " opt " << opt);
          REQUIRE(m.words.size() == size_t(MetaLayout(m.shape).words));
          REQUIRE(m.words.size() <= meta_words_max(size_t(m.shape.rows), size_t(m.shape.out_rows)));
          REQUIRE(m.shape.flash_tiles_cap <= m.shape.rows);
        }
}
