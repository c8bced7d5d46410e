// Host-side pieces of the CUDA backend that need no GPU (tagged [host]; `test_cuda "[host]"` runs them on any
// machine): how a window becomes graph metadata — attention query tiles, output rows, the shape a graph is
// captured for — and the shape checks kernels make before launching.
#include <catch2/catch.hpp>

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
