// Wakes the HTTP threads that wait on request channels, from a thread of its own. Waking a blocked thread
// costs the waker a futex call and the scheduler's wake-up path, several microseconds each: done by the
// engine thread for every token of a 128-stream window it took about 1 ms of host time per window, time the
// accelerator sat idle. The engine thread now pushes its window's events without waking anyone, posts the
// channels here, and flushes once; this thread then wakes each channel's reader.
#pragma once
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace strata {

class RequestChannel;

class Waker {
 public:
  Waker();
  ~Waker();  // wakes whatever is still posted, then stops the thread
  Waker(const Waker&) = delete;
  Waker& operator=(const Waker&) = delete;

  // Remembers to wake `ch`'s reader at the next flush (any thread).
  void post(std::shared_ptr<RequestChannel> ch);
  // Hands everything posted so far to the waker thread (a no-op when nothing is posted).
  void flush();
  // Wakes everything posted so far from the calling thread, for a few readers that should not wait for the
  // waker thread to be scheduled first (a request's first token).
  void wake_now();

 private:
  void run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<RequestChannel>> posted_;
  bool flushed_ = false, stop_ = false;
  std::thread thread_;
};

}  // namespace strata
