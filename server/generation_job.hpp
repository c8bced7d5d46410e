// The n engine requests of one HTTP request (n choices, or several prompts), submitted together and read
// back together. Submission is all-or-nothing: if the engine refuses one, those already accepted are
// cancelled, so a 429 never leaves orphaned work in the engine.
#pragma once
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "engine/core/request.hpp"
#include "server/openai/errors.hpp"

namespace strata {

class EnginePort;

class GenerationJob {
 public:
  explicit GenerationJob(std::vector<std::shared_ptr<GenerationRequest>> requests);
  ~GenerationJob();  // cancels whatever has not finished: a handler that leaves early frees its slots

  // nullopt when every request was accepted; else the error to answer with (429, 503). `arrival` becomes
  // each request's arrival (the engine measures TTFT and queue time from it).
  std::optional<ApiError> submit(EnginePort& engine, std::chrono::steady_clock::time_point arrival);

  // The next event of any unfinished choice, waiting until one comes or `stop()` says to give up (client gone,
  // server aborting); `stop` is polled every `poll` interval. On stop, cancels every choice and returns nullopt.
  std::optional<std::pair<size_t, Event>> wait(const std::function<bool()>& stop,
                                               std::chrono::milliseconds poll = std::chrono::milliseconds(50));

  bool finished() const { return unfinished_ == 0; }
  void cancel();
  size_t size() const { return requests_.size(); }
  const GenerationRequest& request(size_t i) const { return *requests_[i]; }
  const RequestChannel& channel(size_t i) const { return *channels_[i]; }
  // With debug logging: the taking thread's run-queue time (thread_run_queue_ns) when it took choice 0's
  // first event; -1 before that or without debug logging.
  int64_t first_take_run_queue_ns() const { return first_take_run_queue_ns_; }

 private:
  std::optional<std::pair<size_t, Event>> next(std::chrono::milliseconds wait);

  std::vector<std::shared_ptr<GenerationRequest>> requests_;
  std::vector<std::shared_ptr<RequestChannel>> channels_;
  std::vector<bool> done_;
  size_t unfinished_ = 0;
  size_t rr_ = 0;  // round-robin start, so one busy choice cannot starve the others
  bool submitted_ = false;
  std::chrono::steady_clock::time_point last_check_{};
  bool took_first_ = false;
  int64_t first_take_run_queue_ns_ = -1;
};

// The calling thread's time spent waiting on a CPU's run queue so far (ns, from /proc/thread-self/schedstat;
// -1 where the kernel does not say).
int64_t thread_run_queue_ns();

}  // namespace strata
