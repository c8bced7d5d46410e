// A Backend for engine tests: deterministic picks, strict window checks, and knobs for delays, throws and
// slow rebuilds. Every backend a test's factory builds shares one FakeWorld, so counters survive restarts.
#pragma once
#include <atomic>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "engine/core/backend.hpp"

namespace strata::test {

struct WindowRecord {
  std::vector<Row> rows;
};

struct FakeWorld {
  // Shape of every backend built.
  int max_slots = 4;
  int max_context = 256;
  int vocab_size = 512;
  int max_window_rows = 512;
  int exact_rows = std::numeric_limits<int>::max();
  int cheap_rows = 1;

  // Continuations: after a history that starts with `prompt`, the picks follow `continuation`; past its end,
  // or for an unknown prompt, the pick is a fixed function of the history (the fallback below).
  std::vector<std::pair<std::vector<TokenId>, std::vector<TokenId>>> scripts;

  std::atomic<int> window_delay_ms{0};
  std::atomic<int> build_delay_ms{0};       // rebuilds only (the first backend builds at once)
  std::atomic<bool> fail_builds{false};     // rebuilds throw
  std::atomic<int> throw_at_window{-1};     // run_window number (1-based, over all backends) that throws
  std::atomic<int> throw_at_close{-1};      // close_slot call number (1-based, over all backends) that throws
  // Called by start_window() with the window's number (1-based, over all backends), on the engine thread.
  std::function<void(int)> on_start;

  // Observations.
  std::atomic<int> built{0}, released{0}, open_slots{0}, windows{0}, bad_windows{0}, closes{0}, commits{0};
  std::mutex mu;
  std::vector<WindowRecord> log;
  std::vector<SamplingParams> sampling_log;  // every set_sampling, in order

  std::vector<WindowRecord> windows_seen() {
    std::lock_guard<std::mutex> lock(mu);
    return log;
  }
  // The pick the fake makes after `history` when nothing is suppressed.
  TokenId natural_pick(const std::vector<TokenId>& history) const;
};

class FakeBackend : public Backend {
 public:
  explicit FakeBackend(std::shared_ptr<FakeWorld> world);
  ~FakeBackend() override;

  BackendInfo info() const override;
  SlotId open_slot() override;
  void reset_slot(SlotId slot) override;
  void close_slot(SlotId slot) override;
  void set_sampling(SlotId slot, const SamplingParams& params) override;
  std::vector<RowResult> run_window(const Window& window) override;
  // A started window runs at finish_window(); any other call between the two counts as a bad window.
  void start_window(const Window& window) override;
  std::vector<RowResult> finish_window() override;
  // Trims the slot's part of the last window to its first n_keep rows, as a real backend drops rejected
  // drafts; a commit the engine gets wrong (no rows last window, n_keep out of range) counts as a bad window.
  void commit(SlotId slot, int n_keep) override;
  void release() override { world_->released.fetch_add(1); }

 private:
  struct Slot {
    bool open = false;
    std::vector<TokenId> history;
    SamplingParams sampling;
    int last_window = -1, last_first = 0, last_count = 0;
  };
  void idle_or_bad(const char* call);  // a call while a window is started breaks the contract
  std::shared_ptr<FakeWorld> world_;
  std::vector<Slot> slots_;
  std::optional<Window> started_;
};

// A factory for Engine: the first call builds at once, later calls (rebuilds) honour the world's knobs.
std::function<std::unique_ptr<Backend>()> fake_factory(std::shared_ptr<FakeWorld> world);

}  // namespace strata::test
