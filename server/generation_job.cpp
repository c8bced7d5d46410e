#include "server/generation_job.hpp"

#include <algorithm>
#include <cstdio>

#include <spdlog/spdlog.h>

#include "server/engine_port.hpp"

namespace strata {

GenerationJob::GenerationJob(std::vector<std::shared_ptr<GenerationRequest>> requests)
    : requests_(std::move(requests)), done_(requests_.size(), false), unfinished_(requests_.size()) {
  for (size_t i = 0; i < requests_.size(); ++i) channels_.push_back(std::make_shared<RequestChannel>());
}

GenerationJob::~GenerationJob() {
  if (submitted_ && !finished()) cancel();
}

std::optional<ApiError> GenerationJob::submit(EnginePort& engine, std::chrono::steady_clock::time_point arrival) {
  for (const auto& r : requests_) r->arrival = arrival;
  for (size_t i = 0; i < requests_.size(); ++i) {
    SubmitResult r = engine.submit(requests_[i], channels_[i]);
    if (r == SubmitResult::Accepted) continue;
    for (size_t j = 0; j < i; ++j) channels_[j]->cancel();
    unfinished_ = 0;
    switch (r) {
      case SubmitResult::QueueFull: return queue_full_error();
      case SubmitResult::Draining: return unavailable_error("the server is shutting down", "server_draining");
      default: return unavailable_error("the model is loading or the engine is recovering; retry shortly", "model_loading");
    }
  }
  submitted_ = true;
  return std::nullopt;
}

void GenerationJob::cancel() {
  for (size_t i = 0; i < channels_.size(); ++i)
    if (!done_[i]) channels_[i]->cancel();
}

std::optional<std::pair<size_t, Event>> GenerationJob::next(std::chrono::milliseconds wait) {
  size_t n = channels_.size();
  if (unfinished_ == 0) return std::nullopt;
  auto take = [&](size_t i, Event e) {
    if (i == 0 && !took_first_) {
      took_first_ = true;
      if (spdlog::should_log(spdlog::level::debug)) first_take_run_queue_ns_ = thread_run_queue_ns();
    }
    if (e.finish) {
      done_[i] = true;
      --unfinished_;
    }
    rr_ = (i + 1) % n;
    return std::make_pair(i, std::move(e));
  };
  if (unfinished_ > 1) {
    for (size_t k = 0; k < n; ++k) {
      size_t i = (rr_ + k) % n;
      if (done_[i]) continue;
      if (auto e = channels_[i]->pop(std::chrono::milliseconds(0))) return take(i, std::move(*e));
    }
    // Several channels and no single condition variable to wait on: nap briefly on the next one.
    wait = std::min(wait, std::chrono::milliseconds(2));
  }
  for (size_t k = 0; k < n; ++k) {
    size_t i = (rr_ + k) % n;
    if (done_[i]) continue;
    if (auto e = channels_[i]->pop(wait)) return take(i, std::move(*e));
    break;
  }
  return std::nullopt;
}

int64_t thread_run_queue_ns() {
  std::FILE* f = std::fopen("/proc/thread-self/schedstat", "r");
  if (!f) return -1;
  long long on_cpu = 0, waiting = -1;
  if (std::fscanf(f, "%lld %lld", &on_cpu, &waiting) != 2) waiting = -1;
  std::fclose(f);
  return waiting;
}

std::optional<std::pair<size_t, Event>> GenerationJob::wait(const std::function<bool()>& stop,
                                                            std::chrono::milliseconds poll) {
  while (!finished()) {
    // Checked on a clock, not only when idle, so a client that leaves mid-flood is still noticed.
    auto now = std::chrono::steady_clock::now();
    if (stop && now - last_check_ >= poll) {
      last_check_ = now;
      if (stop()) {
        cancel();
        return std::nullopt;
      }
    }
    if (auto e = next(poll)) return e;
  }
  return std::nullopt;
}

}  // namespace strata
