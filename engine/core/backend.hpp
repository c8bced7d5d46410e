// The Backend contract (DESIGN.md): only the engine thread calls a backend; one call runs one window.
#pragma once
#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/types.hpp"

namespace strata {

// One token at one position of one slot, going through the model.
struct Row {
  SlotId slot = kNoSlot;
  TokenId token = 0;
  int32_t pos = 0;          // position of `token` in its slot (0-based)
  bool want_pick = false;   // sample the next token from this row's logits
  int n_logprobs = -1;      // -1: none; >= 0: return the pick's logprob and this many top alternatives
  bool want_logits = false; // return the full logits row (tests, golden parity)
  bool want_feature = false; // return the row's feature: the final-normed hidden state its LM head reads
};

struct TopLogprob {
  TokenId token;
  float logprob;
};

struct RowResult {
  TokenId pick = -1;           // valid when the row asked for a pick
  float pick_logprob = 0.0f;   // log-softmax of the (unmodified, temperature-free) logits at `pick`
  std::vector<TopLogprob> top; // n_logprobs best, descending
  std::vector<float> logits;   // when want_logits
  std::vector<float> feature;  // when want_feature: hidden_size values
};

// The rows one backend call processes. T rows of one slot at consecutive positions (prompt chunk or
// verify window), S rows of S slots (batch window), or a mix. Rows of one slot are in position order.
struct Window {
  std::vector<Row> rows;
  // A feature-reading model's input (ModelConfig::feature_input): hidden_size values per row, row after row,
  // each paired with its row's token (engine/spec/draft_model_drafter.hpp). Empty for every other model; a
  // feature-reading model given none reads zeros.
  std::vector<float> features;
};

// Throws strata::Error unless `window` carries what a model reads: hidden_size features per row for a
// feature-reading model (or none, read as zeros), none for any other.
inline void check_window_features(const Window& window, bool feature_input, int hidden_size) {
  if (window.features.empty()) return;
  if (!feature_input) throw Error("window: features given to a model that reads none");
  const size_t want = window.rows.size() * static_cast<size_t>(hidden_size);
  if (window.features.size() != want)
    throw Error("window: " + std::to_string(window.features.size()) + " feature values for " +
                std::to_string(window.rows.size()) + " rows of hidden_size " + std::to_string(hidden_size) +
                " (expected " + std::to_string(want) + ")");
}

struct BackendInfo {
  std::string name;        // "cpu", "cuda"
  int max_slots = 0;       // how many slots can be open at once
  int max_context = 0;     // positions per slot
  int vocab_size = 0;
  int max_window_rows = 0; // the largest window one call accepts
  // The largest window whose rows each get the bits they would get in a window of one row (the kernels' per-row
  // arithmetic does not depend on the row count). Speculation keeps verify windows within it, so a verified
  // draft is exactly what plain decoding would have picked (DESIGN.md invariant 1).
  int exact_rows = std::numeric_limits<int>::max();
  // Rows a window holds at about the cost of one (the matmuls' row tile on a device backend). Speculation fills
  // them with drafts that cost nothing to make (prompt lookup's copies) whenever it has some (DraftRoom).
  int cheap_rows = 1;
  // Paged KV (0 everywhere: the backend is not paged, each slot owns max_context positions). The pool of
  // kv_blocks blocks of kv_block_size positions is shared by all slots; a window that needs more blocks
  // than are free throws KvExhausted before any state changes.
  int kv_block_size = 0;
  int kv_blocks = 0;
  int kv_free_blocks = 0;          // allocatable now (never used, released, or cached and unreferenced)
  uint64_t kv_prefix_lookups = 0;  // prompt blocks looked up in the prefix cache (attach_prefix)
  uint64_t kv_prefix_hits = 0;     // of those, blocks reused
  uint64_t kv_evictions = 0;       // cached blocks evicted to make room
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual BackendInfo info() const = 0;

  // Slots are opened, reset and closed explicitly. open_slot returns kNoSlot when none is free.
  virtual SlotId open_slot() = 0;
  virtual void reset_slot(SlotId slot) = 0;  // forget all positions, keep the slot
  virtual void close_slot(SlotId slot) = 0;
  // Sampling settings used for this slot's picks from now on (penalty history is the slot's own rows).
  virtual void set_sampling(SlotId slot, const SamplingParams& params) = 0;
  // Prefix caching: a freshly opened slot starts from the longest cached run of `prompt`'s full KV blocks
  // (always leaving at least one token to run) and returns its length; the engine feeds the rest. The
  // default (a backend without a prefix cache) returns 0.
  virtual int attach_prefix(SlotId slot, const std::vector<TokenId>& prompt) {
    (void)slot;
    (void)prompt;
    return 0;
  }

  // Runs the window through all layers. Throws strata::Error on a bad window (unknown slot, position gap,
  // past capacity) or a device fault; the engine turns that into request errors.
  virtual std::vector<RowResult> run_window(const Window& window) = 0;
  // The same window in two calls, so that the engine's host work on the previous window's picks (their text,
  // stop strings, events) runs while the device computes this one. start_window() may throw whatever
  // run_window() throws; finish_window() follows each start_window() that returned, with no other call on
  // this backend between them, and returns the window's results. The default runs the window in
  // finish_window(); a backend whose device runs asynchronously launches it in start_window().
  virtual void start_window(const Window& window) { started_ = window; }
  virtual std::vector<RowResult> finish_window() {
    Window w = std::move(started_);
    started_ = Window{};
    return run_window(w);
  }

  // Greedy continuation without a host round trip per step (the draft model's proposals): runs `window`, then
  // steps - 1 windows of one row for each of its picking rows, each row's token the previous step's pick for
  // that slot at the next position (and, for a feature-reading model, its feature the previous step's
  // feature of that row). Returns every step's picks, in the window's picking-row order. Each slot
  // has at most one picking row, its last, and its sampling must be greedy. All rows stay (commit() may trim
  // only the rows after the first window's). The default runs the steps as windows; a device backend may
  // feed the picks on the device.
  virtual std::vector<std::vector<TokenId>> run_chain(const Window& window, int steps) {
    Window next;
    return chain_windows(window, steps, &next);
  }

  // run_chain with `ahead` more steps after the `steps` whose picks it returns, fed the same way: the draft
  // model's next proposal, drafted on the guess that the target keeps this one whole, while the target
  // verifies it. *ticket names them for take_ahead(), which returns their picks ([ahead][picking rows], in
  // run_chain's order), or nothing once a later run_chain_ahead has replaced them. A backend that
  // overlaps_ahead() leaves the ahead steps running on its device when this returns, and each of its other
  // calls waits for them first; the default runs them before returning. Their rows stay in the slots like
  // any chained step's (truncate() drops them). With steps 0 every step is ahead, the window's included:
  // nothing is returned and nothing need be waited for.
  virtual std::vector<std::vector<TokenId>> run_chain_ahead(const Window& window, int steps, int ahead,
                                                            uint64_t* ticket) {
    std::vector<std::vector<TokenId>> picks = chain_windows(window, steps + (ahead > 0 ? ahead : 0), &ahead_next_);
    ahead_picks_.assign(picks.begin() + std::min<size_t>(picks.size(), size_t(steps)), picks.end());
    picks.resize(std::min<size_t>(picks.size(), size_t(steps)));
    *ticket = default_ticket_ = chain_ticket_ = new_ahead_ticket();
    return picks;
  }
  virtual std::vector<std::vector<TokenId>> take_ahead(uint64_t ticket) {
    if (ticket == 0 || ticket != default_ticket_) return {};
    default_ticket_ = 0;  // taken once
    return std::move(ahead_picks_);
  }
  // Goes on with the chain whose ahead steps `ticket` named (taken or not): `more` steps fed the same way from
  // its last picks, run like ahead steps, *next naming their picks for take_ahead() ([more][picking rows]).
  // The draft model's proposal after one answered from ahead steps. False, with nothing run, when that chain
  // is not the last one this backend ran, or it cannot go on (context or window limits); the caller must not
  // have cut or refilled the chain's slots since.
  virtual bool extend_ahead(uint64_t ticket, int more, uint64_t* next) {
    if (ticket == 0 || ticket != chain_ticket_ || more < 1 || ahead_next_.rows.empty()) return false;
    Window w = std::move(ahead_next_);
    ahead_next_ = Window{};
    ahead_picks_ = chain_windows(w, more, &ahead_next_);
    *next = default_ticket_ = chain_ticket_ = new_ahead_ticket();
    return true;
  }
  virtual bool overlaps_ahead() const { return false; }

  // Makes the first n_keep rows of this slot's part of the last window permanent; state past them is
  // discarded (or overwritten before any read). A plain window commits all its rows implicitly.
  virtual void commit(SlotId slot, int n_keep) = 0;

  // Keeps the slot's first n_keep positions (at most what it holds) and forgets the rest, whatever windows
  // wrote them, and returns how many it kept: n_keep, or fewer (the caller feeds the difference again) when
  // the cut falls inside a block the prefix cache already shares. The default keeps nothing (reset_slot).
  virtual int truncate(SlotId slot, int n_keep) {
    (void)n_keep;
    reset_slot(slot);
    return 0;
  }

  // Watchdog path: abandon in-flight work and return to a state where every slot can be reset.
  virtual void release() {}

 protected:
  // A fresh run_chain_ahead ticket (never 0), unique among this backend's.
  uint64_t new_ahead_ticket() { return ++ahead_ticket_; }
  // A backend whose own chain ran after a default one: the default's chain is no longer the last.
  void end_default_chain() {
    chain_ticket_ = 0;
    ahead_next_ = Window{};
  }
  // The default run_chain: `steps` windows of run_window(), each after the first fed the previous one's
  // picks; *next is the window that would come after the last (its picks at the next positions).
  std::vector<std::vector<TokenId>> chain_windows(Window w, int steps, Window* next) {
    std::vector<std::vector<TokenId>> picks;
    // A feature-reading model's next row reads the feature of the row that picked its token.
    const bool features = !w.features.empty();
    for (int step = 0; step < steps; ++step) {
      if (features)
        for (Row& r : w.rows) r.want_feature = r.want_pick;
      std::vector<RowResult> r = run_window(w);
      Window after;
      picks.emplace_back();
      for (size_t i = 0; i < w.rows.size() && i < r.size(); ++i) {
        if (!w.rows[i].want_pick) continue;
        picks.back().push_back(r[i].pick);
        after.rows.push_back(Row{w.rows[i].slot, r[i].pick, w.rows[i].pos + 1, true});
        if (features) after.features.insert(after.features.end(), r[i].feature.begin(), r[i].feature.end());
      }
      w = std::move(after);
    }
    *next = std::move(w);
    return picks;
  }

 private:
  Window started_;  // the default start_window()'s window, until finish_window()
  uint64_t ahead_ticket_ = 0;    // the last ticket handed out
  uint64_t default_ticket_ = 0;  // the default run_chain_ahead()'s ticket whose picks ahead_picks_ holds
  std::vector<std::vector<TokenId>> ahead_picks_;
  uint64_t chain_ticket_ = 0;  // the default's last chain (run_chain_ahead, extend_ahead), and its next window
  Window ahead_next_;
};

}  // namespace strata
