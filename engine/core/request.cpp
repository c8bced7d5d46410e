#include "engine/core/request.hpp"

namespace strata {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::Cancelled: return "cancelled";
    case FinishReason::Error: return "error";
  }
  return "error";
}

void RequestChannel::stamp(std::atomic<int64_t>& ns) {
  if (ns.load(std::memory_order_relaxed) != 0) return;
  const int64_t now =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
  ns.store(now, std::memory_order_relaxed);
}

void RequestChannel::wake() {
  stamp(first_wake_ns_);
  cv_.notify_one();
}

void RequestChannel::push(Event e, bool wake) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::move(e));
  }
  if (wake) this->wake();
}

std::optional<Event> RequestChannel::pop(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return std::nullopt;
  Event e = std::move(events_.front());
  events_.pop_front();
  stamp(first_pop_ns_);
  return e;
}

}  // namespace strata
