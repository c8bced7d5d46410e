#include "cuda/window_meta.hpp"

#include <algorithm>
#include <cstring>
#include <tuple>

#include "cuda/kernels/kernels.hpp"

namespace strata {
namespace cuda {
namespace {

// Capacities round up to powers of two so a handful of graphs covers every window of a row count.
int pow2_at_least(int n) {
  int p = 1;
  while (p < n) p *= 2;
  return p;
}

}  // namespace

bool WindowShape::operator<(const WindowShape& o) const {
  return std::tie(rows, out_rows, tiles_cap, splits_cap, flash_tiles_cap, features) <
         std::tie(o.rows, o.out_rows, o.tiles_cap, o.splits_cap, o.flash_tiles_cap, o.features);
}

MetaLayout::MetaLayout(const WindowShape& s) {
  tokens = 0;
  pos = tokens + s.rows;
  slot = pos + s.rows;
  out_rows = slot + s.rows;
  n_tiles = out_rows + s.out_rows;
  tile_first = n_tiles + 1;
  tile_rows = tile_first + s.tiles_cap;
  n_flash_tiles = tile_rows + s.tiles_cap;
  flash_tile_first = n_flash_tiles + 1;
  flash_tile_rows = flash_tile_first + s.flash_tiles_cap;
  pick_specs = flash_tile_rows + s.flash_tiles_cap;
  words = pick_specs + kPickWords * s.out_rows;
}

void write_pick_spec(int32_t* w, int mode, const SamplingParams& p, int32_t pos) {
  auto bits = [](float f) {
    int32_t b;
    std::memcpy(&b, &f, 4);
    return b;
  };
  w[0] = mode;
  w[1] = p.top_k;
  w[2] = bits(p.temperature);
  w[3] = bits(p.top_p);
  w[4] = bits(p.min_p);
  w[5] = int32_t(uint32_t(p.seed));
  w[6] = int32_t(uint32_t(p.seed >> 32));
  w[7] = pos;
}

int bucket_rows(int n) {
  if (n <= 16) return pow2_at_least(std::max(n, 1));
  // Steps of about 1.5x: 24, 32, 48, 64, 96, 128, ... so padding costs at most a third of a window.
  int b = 16;
  while (b < n) b = (b & (b - 1)) == 0 ? b + b / 2 : (b / 3) * 4;
  return b;
}

WindowMeta build_window_meta(const Window& w, int first, int last, int max_splits, SlotId pad_slot, int pad_span,
                             int out_cap, int short_tiles, int short_tiles_min_rows, bool flash_long_tiles) {
  WindowMeta m;
  const int T = last - first;
  // Query tiles: runs of consecutive rows of one slot at consecutive positions, cut every kAttnQueryTile.
  std::vector<int> tile_first, tile_rows;
  int max_pos = 0;
  for (int i = 0; i < T; ++i) {
    const Row& r = w.rows[size_t(first + i)];
    max_pos = std::max(max_pos, int(r.pos));
    const bool extends = !tile_first.empty() && tile_rows.back() < kAttnQueryTile &&
                         w.rows[size_t(first + i - 1)].slot == r.slot && w.rows[size_t(first + i - 1)].pos + 1 == r.pos;
    if (i > 0 && extends) {
      ++tile_rows.back();
    } else {
      tile_first.push_back(i);
      tile_rows.push_back(1);
    }
    if (r.want_pick || r.want_logits || r.n_logprobs >= 0) m.out_rows.push_back(i);
  }
  // Padding rows (when pad_slot is a slot): token 0 at positions 0 .. pad_span - 1 of the scratch slot, over
  // and over, in tiles of their own (a tile ends where the positions start again), no output. Rows at the same
  // position write the same K/V values to the same cell. They fill the window up to its row bucket so a bounded set of graphs covers every
  // window; a real row never reads them (other slot) and its arithmetic does not depend on them.
  const int Tb = pad_slot == kNoSlot ? T : bucket_rows(T);
  const int span = std::max(1, std::min(pad_span, kAttnQueryTile));
  for (int i = T; i < Tb; ++i) {
    if ((i - T) % span == 0) {
      tile_first.push_back(i);
      tile_rows.push_back(1);
    } else {
      ++tile_rows.back();
    }
  }
  const int R = int(m.out_rows.size());
  int Rb = pad_slot == kNoSlot || R == 0 ? R : std::min(bucket_rows(R), Tb);
  // A window past kDecodeRowsMax rows carries prompt chunks, and its decode rows are whatever number of
  // requests happen to be decoding: bucketing those outputs finely made a new graph (an eager run, the LM
  // head's GEMM timed for the new row count, a capture: 2-3x the window) each time the count crossed a
  // bucket under load. With more than one output such a window computes kDecodeRowsMax of them (at most
  // out_cap), which costs about what fewer do: the LM head reads its weights once for all rows.
  if (pad_slot != kNoSlot && Tb > kDecodeRowsMax && R > 1)
    Rb = std::max(Rb, std::min({Tb, out_cap, kDecodeRowsMax}));
  m.shape.rows = Tb;
  m.shape.out_rows = Rb;
  auto tiles_cap = [&] { return std::min(Tb, pow2_at_least(int(tile_first.size()))); };
  std::vector<int> flash_first, flash_rows;  // the long tiles, when flash_long_tiles takes them
  if (short_tiles > 0 && Tb >= short_tiles_min_rows && !takes_flash_tiles(Tb, tiles_cap())) {
    std::vector<int> first_cut, rows_cut;
    for (size_t t = 0; t < tile_first.size(); ++t) {
      if (flash_long_tiles && tile_rows[t] > short_tiles) {
        flash_first.push_back(tile_first[t]);
        flash_rows.push_back(tile_rows[t]);
        continue;
      }
      for (int r = 0; r < tile_rows[t]; r += short_tiles) {
        first_cut.push_back(tile_first[t] + r);
        rows_cut.push_back(std::min(short_tiles, tile_rows[t] - r));
      }
    }
    tile_first.swap(first_cut);
    tile_rows.swap(rows_cut);
  }
  // At least one tile in the tensor-core kernel's grid even when every tile went to flash (pow2_at_least(0) is
  // 1; blocks past n_tiles return at once).
  m.shape.tiles_cap = tiles_cap();
  m.shape.flash_tiles_cap = flash_first.empty() ? 0 : std::min(Tb, pow2_at_least(int(flash_first.size())));
  m.shape.splits_cap = std::min(max_splits, pow2_at_least(max_pos / kAttnSplit + 1));
  const MetaLayout L(m.shape);
  m.words.assign(size_t(L.words), 0);
  for (int i = 0; i < T; ++i) {
    const Row& r = w.rows[size_t(first + i)];
    m.words[size_t(L.tokens + i)] = r.token;
    m.words[size_t(L.pos + i)] = r.pos;
    m.words[size_t(L.slot + i)] = r.slot;
  }
  for (int i = T; i < Tb; ++i) {
    m.words[size_t(L.pos + i)] = (i - T) % span;
    m.words[size_t(L.slot + i)] = pad_slot;
  }
  // Padded output rows recompute the last real one; the host reads only the first R picks.
  for (int i = 0; i < Rb; ++i) m.words[size_t(L.out_rows + i)] = m.out_rows[size_t(std::min(i, R - 1))];
  m.words[size_t(L.n_tiles)] = int32_t(tile_first.size());
  for (size_t i = 0; i < tile_first.size(); ++i) {
    m.words[size_t(L.tile_first) + i] = tile_first[i];
    m.words[size_t(L.tile_rows) + i] = tile_rows[i];
  }
  m.words[size_t(L.n_flash_tiles)] = int32_t(flash_first.size());
  for (size_t i = 0; i < flash_first.size(); ++i) {
    m.words[size_t(L.flash_tile_first) + i] = flash_first[i];
    m.words[size_t(L.flash_tile_rows) + i] = flash_rows[i];
  }
  return m;
}

}  // namespace cuda
}  // namespace strata
