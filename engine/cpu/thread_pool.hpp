// A fixed set of worker threads that split an index range into contiguous parts. Which thread computes an
// index never changes what is computed for it: every kernel run through the pool writes each output element
// from exactly one task, with that element's fixed order of operations.
#pragma once
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace strata {
namespace cpu {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);  // threads <= 0: hardware concurrency; the caller counts as one
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return int(workers_.size()) + 1; }
  // Runs fn(begin, end) over parts of [0, n) on all threads and returns when every part is done. An exception
  // from any part (e.g. bad_alloc) is rethrown here, after all parts have stopped, instead of ending the
  // process from a worker thread.
  void parallel_for(int n, const std::function<void(int, int)>& fn);

 private:
  void worker(int index);

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  const std::function<void(int, int)>* job_ = nullptr;
  int job_n_ = 0;
  int parts_ = 0;
  long generation_ = 0;
  int pending_ = 0;
  std::exception_ptr error_;
  bool stop_ = false;
};

}  // namespace cpu
}  // namespace strata
