#include "engine/core/watchdog.hpp"

#include <sstream>

#include "engine/core/thread_name.hpp"

namespace strata {

int64_t CallGuard::now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

uint64_t CallGuard::begin(CallInfo info) {
  {
    std::lock_guard<std::mutex> lock(info_mu_);
    info_ = std::move(info);
  }
  ++seq_;
  started_ns_.store(now_ns());
  uint64_t ticket = (seq_ << 2) | kInCall;
  state_.store(ticket);
  return ticket;
}

bool CallGuard::end(uint64_t ticket) {
  uint64_t expected = ticket;
  if (!state_.compare_exchange_strong(expected, (ticket & ~uint64_t{3}) | kIdle)) return false;
  completed_.fetch_add(1);
  return true;
}

std::optional<StalledCall> CallGuard::claim_if_stalled(double timeout_s) {
  uint64_t s = state_.load();
  if ((s & 3u) != kInCall) return std::nullopt;
  // started_ns_ is written before the state word, so it is this call's start or a later call's (which only
  // makes the call look younger: never a false stall).
  double elapsed = static_cast<double>(now_ns() - started_ns_.load()) * 1e-9;
  if (elapsed <= timeout_s) return std::nullopt;
  uint64_t expected = s;
  if (!state_.compare_exchange_strong(expected, (s & ~uint64_t{3}) | kClaimed)) return std::nullopt;
  StalledCall out;
  {
    std::lock_guard<std::mutex> lock(info_mu_);
    out.info = info_;
  }
  out.elapsed_s = elapsed;
  return out;
}

Watchdog::Watchdog(std::chrono::milliseconds poll, std::function<void()> check) {
  thread_ = std::thread([this, poll, check = std::move(check)] {
    name_this_thread("strata-watchdog");
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      cv_.wait_for(lock, poll, [&] { return stop_; });
      if (stop_) break;
      lock.unlock();
      check();
      lock.lock();
    }
  });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::string describe_stall(const StalledCall& s, double timeout_s, const std::string& backend_name) {
  std::ostringstream os;
  os << "engine stalled: " << s.info.what;
  if (s.info.window_index > 0) os << " #" << s.info.window_index;
  os << " has run " << s.elapsed_s << " s (watchdog timeout " << timeout_s << " s) on backend '" << backend_name
     << "'";
  if (!s.info.shape.empty()) os << "; window " << s.info.shape;
  if (!s.info.slots.empty()) os << "; slots " << s.info.slots;
  return os.str();
}

}  // namespace strata
