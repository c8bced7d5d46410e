// Supervision of the engine thread. The engine thread publishes a heartbeat around every backend call
// (CallGuard::begin/end, with the window's shape, slots and positions); a watchdog thread polls it. A call
// running past the timeout is a stall: the watchdog *claims* it, and from that moment it owns the scheduler
// state while the engine thread, if it ever returns, sees end() == false and leaves without touching
// anything. The claim is one compare-and-swap on the heartbeat word, so exactly one of the two threads wins
// a call that ends just as the deadline passes.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace strata {

// What a call was doing, for the diagnostic dump.
struct CallInfo {
  std::string what;             // "window", "open_slot", "load backend", ...
  uint64_t window_index = 0;    // windows run so far, counting this one
  std::string shape;            // e.g. "mixed: 9 rows (7 decode, 2 prefill) over 8 slots"
  std::string slots;            // per slot: request id and positions
};

struct StalledCall {
  CallInfo info;
  double elapsed_s = 0;
};

class CallGuard {
 public:
  // Engine thread: the heartbeat at the start of a backend call. Returns the ticket for end().
  uint64_t begin(CallInfo info);
  // Engine thread: the heartbeat at its end. False when the watchdog claimed the call: the caller no longer
  // owns anything and must unwind.
  bool end(uint64_t ticket);
  // Watchdog: claims the call in flight if it has run longer than timeout_s.
  std::optional<StalledCall> claim_if_stalled(double timeout_s);
  bool in_call() const { return (state_.load() & 3u) == kInCall; }
  uint64_t calls_completed() const { return completed_.load(); }

 private:
  static constexpr uint64_t kIdle = 0, kInCall = 1, kClaimed = 2;
  static int64_t now_ns();

  std::atomic<uint64_t> state_{0};  // (sequence << 2) | phase
  std::atomic<int64_t> started_ns_{0};
  std::atomic<uint64_t> completed_{0};
  uint64_t seq_ = 0;  // engine thread only
  std::mutex info_mu_;
  CallInfo info_;
};

// A thread that runs `check` every poll interval until destroyed.
class Watchdog {
 public:
  Watchdog(std::chrono::milliseconds poll, std::function<void()> check);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

// The log line of a stall: which call, for how long, over which slots and positions.
std::string describe_stall(const StalledCall& s, double timeout_s, const std::string& backend_name);

}  // namespace strata
