#include "tests/core/fake_backend.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>
#include <thread>

namespace strata::test {

TokenId FakeWorld::natural_pick(const std::vector<TokenId>& history) const {
  for (const auto& [prompt, continuation] : scripts) {
    if (history.size() < prompt.size() || !std::equal(prompt.begin(), prompt.end(), history.begin())) continue;
    size_t k = history.size() - prompt.size();
    if (k < continuation.size()) return continuation[k];
  }
  // Ids 3.. are ordinary byte tokens in the fixture tokenizer; 0..2 are its special tokens.
  uint64_t h = history.size() * 2654435761u;
  for (TokenId t : history) h = h * 31 + static_cast<uint64_t>(t);
  return 3 + static_cast<TokenId>(h % static_cast<uint64_t>(vocab_size - 3));
}

FakeBackend::FakeBackend(std::shared_ptr<FakeWorld> world)
    : world_(std::move(world)), slots_(static_cast<size_t>(world_->max_slots)) {
  world_->built.fetch_add(1);
}

FakeBackend::~FakeBackend() {
  for (const Slot& s : slots_)
    if (s.open) world_->open_slots.fetch_sub(1);
}

BackendInfo FakeBackend::info() const {
  BackendInfo i{"fake", world_->max_slots, world_->max_context, world_->vocab_size, world_->max_window_rows};
  i.exact_rows = world_->exact_rows;
  i.cheap_rows = world_->cheap_rows;
  return i;
}

void FakeBackend::idle_or_bad(const char* call) {
  if (started_) throw Error(std::string("fake: ") + call + " while a window is started (" +
                            std::to_string(world_->bad_windows.fetch_add(1) + 1) + " bad)");
}

void FakeBackend::start_window(const Window& window) {
  idle_or_bad("start_window");
  started_ = window;
  if (world_->on_start) world_->on_start(world_->windows.load() + 1);
}

std::vector<RowResult> FakeBackend::finish_window() {
  if (!started_) {
    world_->bad_windows.fetch_add(1);
    throw Error("fake: finish_window without start_window");
  }
  Window w = std::move(*started_);
  started_.reset();
  return run_window(w);
}

SlotId FakeBackend::open_slot() {
  idle_or_bad("open_slot");
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (!slots_[i].open) {
      slots_[i] = Slot{};
      slots_[i].open = true;
      world_->open_slots.fetch_add(1);
      return static_cast<SlotId>(i);
    }
  }
  return kNoSlot;
}

void FakeBackend::reset_slot(SlotId slot) {
  idle_or_bad("reset_slot");
  slots_.at(static_cast<size_t>(slot)).history.clear();
}

void FakeBackend::close_slot(SlotId slot) {
  idle_or_bad("close_slot");
  Slot& s = slots_.at(static_cast<size_t>(slot));
  if (!s.open) throw Error("fake: close_slot of a closed slot " + std::to_string(slot));
  if (world_->closes.fetch_add(1) + 1 == world_->throw_at_close.load()) throw Error("fake: device fault in close_slot");
  s.open = false;
  world_->open_slots.fetch_sub(1);
}

void FakeBackend::set_sampling(SlotId slot, const SamplingParams& params) {
  idle_or_bad("set_sampling");
  Slot& s = slots_.at(static_cast<size_t>(slot));
  if (!s.open) throw Error("fake: set_sampling on a closed slot");
  s.sampling = params;
  std::lock_guard<std::mutex> lock(world_->mu);
  world_->sampling_log.push_back(params);
}

std::vector<RowResult> FakeBackend::run_window(const Window& window) {
  idle_or_bad("run_window");
  int n = world_->windows.fetch_add(1) + 1;
  {
    std::lock_guard<std::mutex> lock(world_->mu);
    world_->log.push_back({window.rows});
  }
  if (int ms = world_->window_delay_ms.load(); ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  if (n == world_->throw_at_window.load()) throw Error("fake: device fault at window " + std::to_string(n));

  // Strict contract checks: a window the engine built wrong is a test failure, counted in bad_windows.
  auto bad = [&](const std::string& why) -> Error {
    world_->bad_windows.fetch_add(1);
    return Error("fake: bad window: " + why);
  };
  if (window.rows.empty()) throw bad("no rows");
  if (static_cast<int>(window.rows.size()) > world_->max_window_rows) throw bad("too many rows");
  std::map<SlotId, int32_t> next_pos;
  std::map<SlotId, bool> seen_done;
  SlotId prev = kNoSlot;
  for (const Row& r : window.rows) {
    if (r.slot < 0 || r.slot >= world_->max_slots || !slots_[static_cast<size_t>(r.slot)].open)
      throw bad("row for a slot that is not open");
    if (r.slot != prev && next_pos.count(r.slot)) throw bad("rows of one slot are not contiguous");
    int32_t expect = next_pos.count(r.slot) ? next_pos[r.slot]
                                            : static_cast<int32_t>(slots_[static_cast<size_t>(r.slot)].history.size());
    if (r.pos != expect) throw bad("position gap");
    if (r.pos >= world_->max_context) throw bad("past max_context");
    if (r.token < 0 || r.token >= world_->vocab_size) throw bad("token outside the vocabulary");
    next_pos[r.slot] = r.pos + 1;
    prev = r.slot;
  }

  std::vector<RowResult> out(window.rows.size());
  for (size_t i = 0; i < window.rows.size(); ++i) {
    const Row& r = window.rows[i];
    Slot& s = slots_[static_cast<size_t>(r.slot)];
    if (s.last_window != n) {
      s.last_window = n;
      s.last_first = r.pos;
      s.last_count = 0;
    }
    ++s.last_count;
    s.history.push_back(r.token);
    TokenId pick = world_->natural_pick(s.history);
    const auto& masked = s.sampling.suppressed;
    while (std::find(masked.begin(), masked.end(), pick) != masked.end()) pick = (pick + 1) % world_->vocab_size;
    // The fake's distribution: every token has logit 0 except the pick, at log(3).
    float v = static_cast<float>(world_->vocab_size);
    float lp_pick = std::log(3.0f / (v + 2.0f)), lp_other = std::log(1.0f / (v + 2.0f));
    if (r.want_pick) {
      out[i].pick = pick;
      out[i].pick_logprob = lp_pick;
      if (r.n_logprobs >= 0) {
        for (int k = 0; k < r.n_logprobs; ++k) {
          TokenId alt = k == 0 ? pick : static_cast<TokenId>((k - 1) < pick ? k - 1 : k);
          out[i].top.push_back({alt, k == 0 ? lp_pick : lp_other});
        }
      }
    }
    if (r.want_logits) {
      out[i].logits.assign(static_cast<size_t>(world_->vocab_size), 0.0f);
      out[i].logits[static_cast<size_t>(pick)] = std::log(3.0f);
    }
  }
  return out;
}

void FakeBackend::commit(SlotId slot, int n_keep) {
  idle_or_bad("commit");
  world_->commits.fetch_add(1);
  if (slot < 0 || slot >= world_->max_slots || !slots_[static_cast<size_t>(slot)].open) {
    world_->bad_windows.fetch_add(1);
    throw Error("fake: commit on a slot that is not open");
  }
  Slot& s = slots_[static_cast<size_t>(slot)];
  if (s.last_window != world_->windows.load() || n_keep < 0 || n_keep > s.last_count) {
    world_->bad_windows.fetch_add(1);
    throw Error("fake: bad commit of " + std::to_string(n_keep) + " rows");
  }
  s.history.resize(static_cast<size_t>(s.last_first + n_keep));
  s.last_count = n_keep;
}

std::function<std::unique_ptr<Backend>()> fake_factory(std::shared_ptr<FakeWorld> world) {
  return [world]() -> std::unique_ptr<Backend> {
    if (world->built.load() > 0) {
      if (int ms = world->build_delay_ms.load(); ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      if (world->fail_builds.load()) throw Error("fake: cannot rebuild the backend");
    }
    return std::make_unique<FakeBackend>(world);
  };
}

}  // namespace strata::test
