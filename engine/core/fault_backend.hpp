// A Backend decorator that carries out a FaultPlan. The injector outlives the backends it wraps so the
// window count (and the random stream) continues across engine restarts.
#pragma once
#include <memory>
#include <mutex>
#include <random>
#include <vector>

#include "engine/core/backend.hpp"
#include "engine/core/faults.hpp"

namespace strata {

class FaultInjector : public std::enable_shared_from_this<FaultInjector> {
 public:
  struct Action {
    FaultKind kind;  // never Random: a random fault resolves to one of the others
    double seconds = 0, ms = 0;
    int64_t window = 0;
  };

  explicit FaultInjector(FaultPlan plan);
  std::unique_ptr<Backend> wrap(std::unique_ptr<Backend> inner);
  // Counts one window and says which faults fire in it.
  std::vector<Action> next_window();
  int64_t windows() const;
  int64_t fired() const;

 private:
  FaultPlan plan_;
  mutable std::mutex mu_;
  int64_t windows_ = 0, fired_ = 0;
  std::vector<std::mt19937_64> streams_;  // one per fault, used by random faults only
};

}  // namespace strata
