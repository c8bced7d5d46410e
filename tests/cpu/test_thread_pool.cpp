#include <atomic>
#include <catch2/catch.hpp>
#include <stdexcept>

#include "engine/cpu/thread_pool.hpp"

using strata::cpu::ThreadPool;

TEST_CASE("parallel_for visits every index exactly once, for any size and thread count") {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    CHECK(pool.size() == threads);
    for (int n : {0, 1, 2, 7, 100, 1000}) {
      std::vector<std::atomic<int>> hits(size_t(n) + 1);
      for (int rep = 0; rep < 3; ++rep)
        pool.parallel_for(n, [&](int b, int e) {
          for (int i = b; i < e; ++i) hits[size_t(i)]++;
        });
      for (int i = 0; i < n; ++i) CHECK(hits[size_t(i)] == 3);
      CHECK(hits[size_t(n)] == 0);
    }
  }
}

TEST_CASE("parallel_for returns only after every part has finished") {
  ThreadPool pool(4);
  for (int rep = 0; rep < 200; ++rep) {
    std::atomic<int> done{0};
    pool.parallel_for(4, [&](int b, int e) { done += e - b; });
    CHECK(done == 4);
  }
}

TEST_CASE("an exception in any part reaches the caller after every part has stopped, and the pool stays usable") {
  ThreadPool pool(3);
  for (int bad_part : {0, 1, 2}) {
    std::atomic<int> finished{0};
    CHECK_THROWS_WITH(pool.parallel_for(3,
                                        [&](int b, int) {
                                          if (b == bad_part) throw std::runtime_error("part failed");
                                          finished++;
                                        }),
                      "part failed");
    CHECK(finished == 2);
  }
  std::atomic<int> sum{0};
  pool.parallel_for(10, [&](int b, int e) { sum += e - b; });
  CHECK(sum == 10);
}
