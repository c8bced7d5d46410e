// Random verify windows against single-row decoding, on any backend (DESIGN.md invariant 1, row for row): one
// slot decodes a prompt greedily a row at a time, keeping every row's logits; another runs the same
// continuation as random verify windows (the last kept token, then the continuation to a random depth, then
// wrong tokens), each committed to that depth as the engine commits one. Every kept row must carry the
// single-row logits bit for bit, which shows a rounding difference even where it flips no greedy pick.
#pragma once
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/core/backend.hpp"

namespace strata {
namespace test {

struct ReplayResult {
  std::vector<TokenId> continuation;  // the single-row slot's greedy picks, n of them
  int windows = 0;
  int bad_rows = 0;       // kept rows of a verify window whose logits differ from the single row's
  std::string first_bad;  // where the first of them is
};

// Opens two slots (and closes them), greedy; n tokens after `prompt`, in windows of 1 .. max_rows rows.
inline ReplayResult replay_verify_windows(Backend& be, const std::vector<TokenId>& prompt, int n, int max_rows,
                                          std::mt19937& rng) {
  const int vocab = be.info().vocab_size, P = int(prompt.size());
  const SlotId ref = be.open_slot(), s = be.open_slot();
  be.set_sampling(ref, SamplingParams{0.0f});
  be.set_sampling(s, SamplingParams{0.0f});
  auto with_logits = [](SlotId slot, TokenId t, int pos) {
    Row r{slot, t, pos, true};
    r.want_logits = true;
    return r;
  };
  auto prefill = [&](SlotId slot) {  // the prompt as one window, its last row picking
    Window w;
    for (int j = 0; j < P; ++j) w.rows.push_back(Row{slot, prompt[size_t(j)], j, false});
    w.rows.back() = with_logits(slot, prompt.back(), P - 1);
    return be.run_window(w).back();
  };
  auto same = [](const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && !a.empty() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
  };
  ReplayResult out;
  // logits[j]: the row at position P - 1 + j, which picks continuation[j].
  std::vector<std::vector<float>> logits;
  RowResult r0 = prefill(ref);
  out.continuation.push_back(r0.pick);
  logits.push_back(std::move(r0.logits));
  for (int j = 1; j < n; ++j) {
    RowResult r = be.run_window(Window{{with_logits(ref, out.continuation.back(), P - 1 + j)}})[0];
    out.continuation.push_back(r.pick);
    logits.push_back(std::move(r.logits));
  }
  const std::vector<TokenId>& cont = out.continuation;
  if (!same(prefill(s).logits, logits[0])) {
    ++out.bad_rows;
    out.first_bad = "the prompt's last row";
  }
  for (int j = 1; j < n;) {
    const int T = std::min(std::uniform_int_distribution<int>(1, max_rows)(rng), n - j);  // rows j .. n - 1 at most
    const int depth = std::uniform_int_distribution<int>(0, T - 1)(rng);  // rows 1 .. depth: right drafts
    Window w;
    for (int t = 0; t < T; ++t) {
      const TokenId right = cont[size_t(j - 1 + t)];
      const TokenId wrong = TokenId((right + 1 + std::uniform_int_distribution<int>(0, vocab - 2)(rng)) % vocab);
      w.rows.push_back(with_logits(s, t <= depth ? right : wrong, P - 1 + j + t));
    }
    const std::vector<RowResult> got = be.run_window(w);
    ++out.windows;
    for (int t = 0; t <= depth; ++t)
      if (!same(got[size_t(t)].logits, logits[size_t(j + t)]) && out.bad_rows++ == 0)
        out.first_bad = "position " + std::to_string(P - 1 + j + t) + ", row " + std::to_string(t) +
                        " of a window of " + std::to_string(T) + " rows at " + std::to_string(P - 1 + j) +
                        " (window " + std::to_string(out.windows) + ")";
    be.commit(s, depth + 1);
    j += depth + 1;
  }
  be.close_slot(ref);
  be.close_slot(s);
  return out;
}

}  // namespace test
}  // namespace strata
