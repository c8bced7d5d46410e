#include "engine/cpu/thread_pool.hpp"

#include <algorithm>

namespace strata {
namespace cpu {
namespace {

void part_range(int n, int parts, int i, int* b, int* e) {
  *b = int(int64_t(n) * i / parts);
  *e = int(int64_t(n) * (i + 1) / parts);
}

}  // namespace

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0) threads = int(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::worker(int index) {
  long seen = 0;
  for (;;) {
    const std::function<void(int, int)>* job;
    int n, parts;
    {
      std::unique_lock<std::mutex> lk(mu_);
      start_cv_.wait(lk, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
      n = job_n_;
      parts = parts_;
    }
    std::exception_ptr err;
    if (index < parts) {
      int b, e;
      part_range(n, parts, index, &b, &e);
      try {
        if (b < e) (*job)(b, e);
      } catch (...) {
        err = std::current_exception();
      }
    }
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (err && !error_) error_ = err;
      if (--pending_ == 0) done_cv_.notify_one();
    }
  }
}

void ThreadPool::parallel_for(int n, const std::function<void(int, int)>& fn) {
  if (n <= 0) return;
  const int parts = std::min(n, size());
  if (parts == 1) {
    fn(0, n);
    return;
  }
  {
    std::lock_guard<std::mutex> lk(mu_);
    job_ = &fn;
    job_n_ = n;
    parts_ = parts;
    pending_ = int(workers_.size());
    ++generation_;
  }
  start_cv_.notify_all();
  int b, e;
  part_range(n, parts, 0, &b, &e);
  std::exception_ptr err;
  try {
    fn(b, e);
  } catch (...) {
    err = std::current_exception();
  }
  std::unique_lock<std::mutex> lk(mu_);
  done_cv_.wait(lk, [&] { return pending_ == 0; });
  if (!err) err = error_;
  error_ = nullptr;
  if (err) std::rethrow_exception(err);
}

}  // namespace cpu
}  // namespace strata
