#include "engine/core/waker.hpp"

#include "engine/core/request.hpp"
#include "engine/core/thread_name.hpp"

namespace strata {

Waker::Waker() : thread_([this] { run(); }) {}

Waker::~Waker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void Waker::post(std::shared_ptr<RequestChannel> ch) {
  std::lock_guard<std::mutex> lock(mu_);
  posted_.push_back(std::move(ch));
}

void Waker::flush() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (posted_.empty()) return;
    flushed_ = true;
  }
  cv_.notify_one();
}

void Waker::wake_now() {
  std::vector<std::shared_ptr<RequestChannel>> batch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    batch.swap(posted_);
  }
  for (const auto& ch : batch) ch->wake();
}

void Waker::run() {
  name_this_thread("strata-waker");
  std::vector<std::shared_ptr<RequestChannel>> batch;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || flushed_; });
    batch.swap(posted_);
    flushed_ = false;
    const bool last = stop_;
    lock.unlock();
    for (const auto& ch : batch) ch->wake();
    batch.clear();  // the channel references go outside the lock
    if (last) return;
    lock.lock();
  }
}

}  // namespace strata
