// What a window graph reads from the host: per row token, position and slot; the rows that produce logits;
// the attention query tiles; the settings of picks sampled on the device. Packed into one int32 block whose layout is a function of the graph's shape
// alone, so a graph captured for a shape reads the right words on every replay (one H2D copy, the graph's
// first node).
#pragma once
#include <cstdint>
#include <vector>

#include "cuda/kernels/kernels.hpp"
#include "engine/core/backend.hpp"

namespace strata {
namespace cuda {

// A graph is captured per shape; windows of the same shape replay it.
struct WindowShape {
  int rows = 0;         // T
  int out_rows = 0;     // R: rows whose logits are computed
  int tiles_cap = 0;    // attention query tiles the grid covers (>= the window's tiles)
  int splits_cap = 0;   // attention splits the grid covers (>= what the window's largest position needs)
  int flash_tiles_cap = 0;  // the long tiles flash attention takes beside the tensor-core kernel (0: none)
  bool features = false;    // every row's feature (the final-normed state) to Workspace::feat (Row::want_feature)
  bool operator<(const WindowShape& o) const;
};

struct MetaLayout {
  int tokens = 0, pos = 0, slot = 0, out_rows = 0, n_tiles = 0, tile_first = 0, tile_rows = 0;
  int n_flash_tiles = 0, flash_tile_first = 0, flash_tile_rows = 0;  // the long tiles (flash_tiles_cap)
  int pick_specs = 0;  // kPickWords per output row (kernels.hpp); zero = no device sample
  int words = 0;
  explicit MetaLayout(const WindowShape& s);
};

// The most words a window of up to T rows (bucketed) and R output rows may take: two tile lists of at most T
// entries each (build_window_meta caps both at the row count).
inline size_t meta_words_max(size_t T, size_t R) { return 7 * T + R + 2 + size_t(kPickWords) * R; }

struct WindowMeta {
  WindowShape shape;
  std::vector<int32_t> words;
  std::vector<int> out_rows;  // indices into the segment's rows, in order
};

// Rows [first, last) of `window` as one graph replay (pick specs left zero for the caller). max_splits bounds splits_cap (the workspace's split
// count); T rows make at most T tiles.
// With pad_slot set (a slot the backend keeps for itself), rows and output rows are padded up to their bucket
// (bucket_rows): 1, 2, 4, 8, 16, then steps of about 1.5x. Padding rows use positions below
// min(pad_span, kAttnQueryTile): the CUDA backend passes its block size, so they stay in the scratch slot's one
// reserved block.
// out_cap: the most output rows a replay may compute (the workspace's); see kDecodeRowsMax.
// short_tiles (rows, 0 = off) cuts the query tiles of a window that does not take flash attention
// (takes_flash_tiles) and has at least short_tiles_min_rows rows (bucketed) into tiles of at most that many
// rows: the tensor-core decode kernel gives a block one tile and walks its query vectors in chunks of 16, so
// a 16-row prompt tile of a mixed window (64 vectors with GQA 4) would take four times as long as the decode
// rows' blocks around it and set the kernel's time.
// flash_long_tiles (with short_tiles): the tiles of more than short_tiles rows (prompt chunks, padding) go to a
// second list, which flash attention serves beside the tensor-core kernel's list of short ones, instead of being
// cut: a prompt chunk's 16-row tile then shares each K/V tile among its rows and heads in one block.
WindowMeta build_window_meta(const Window& window, int first, int last, int max_splits, SlotId pad_slot = kNoSlot,
                             int pad_span = 16, int out_cap = 0, int short_tiles = 0, int short_tiles_min_rows = 0,
                             bool flash_long_tiles = false);
// Whether a window of `rows` rows in `tiles_cap` tiles takes flash attention (when the head size has it):
// query tiles of many rows (prompt chunks), where its one-head-a-warp tiles pay off.
inline bool takes_flash_tiles(int rows, int tiles_cap) { return rows >= 4 * tiles_cap; }
// Whether a graph of this shape gives all its tiles to flash attention: a shape with a long-tile list
// (flash_long_tiles) was cut for the tensor-core kernel, whatever its short list's size.
inline bool takes_flash(const WindowShape& s) { return s.flash_tiles_cap == 0 && takes_flash_tiles(s.rows, s.tiles_cap); }
int bucket_rows(int n);
// Windows above this many rows are taken to carry prompt chunks; their output rows, when more than one, are
// padded to this many (build_window_meta), so the graphs of mixed windows do not multiply with the number of
// decoding requests.
constexpr int kDecodeRowsMax = 128;

// The kPickWords words of a device-sampled row (kernels.hpp, launch_sample): mode, top_k, temperature,
// top_p, min_p (float bits), seed low, seed high, position.
void write_pick_spec(int32_t* words, int mode, const SamplingParams& p, int32_t pos);

}  // namespace cuda
}  // namespace strata
