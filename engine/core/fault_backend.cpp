#include "engine/core/fault_backend.hpp"

#include <chrono>
#include <condition_variable>
#include <stdexcept>
#include <string>
#include <thread>

namespace strata {
namespace {

class FaultyBackend : public Backend {
 public:
  FaultyBackend(std::unique_ptr<Backend> inner, std::shared_ptr<FaultInjector> faults)
      : inner_(std::move(inner)), faults_(std::move(faults)) {}

  BackendInfo info() const override { return inner_->info(); }
  SlotId open_slot() override { return inner_->open_slot(); }
  void reset_slot(SlotId slot) override { inner_->reset_slot(slot); }
  void close_slot(SlotId slot) override { inner_->close_slot(slot); }
  void set_sampling(SlotId slot, const SamplingParams& p) override { inner_->set_sampling(slot, p); }
  int attach_prefix(SlotId slot, const std::vector<TokenId>& prompt) override {
    return inner_->attach_prefix(slot, prompt);
  }
  void commit(SlotId slot, int n_keep) override { inner_->commit(slot, n_keep); }
  int truncate(SlotId slot, int n_keep) override { return inner_->truncate(slot, n_keep); }

  std::vector<RowResult> run_window(const Window& window) override {
    for (const auto& a : faults_->next_window()) {
      std::string where = " at window " + std::to_string(a.window);
      switch (a.kind) {
        case FaultKind::Slow:
          std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(a.ms));
          break;
        case FaultKind::Stall: {
          // A device wait that release() can break, as a CUDA backend's bounded synchronize would.
          std::unique_lock<std::mutex> lock(mu_);
          cv_.wait_for(lock, std::chrono::duration<double>(a.seconds), [&] { return released_; });
          break;
        }
        case FaultKind::Wedge:
          std::this_thread::sleep_for(std::chrono::duration<double>(a.seconds));
          break;
        case FaultKind::Throw:
          throw std::runtime_error("injected fault: throw" + where);
        case FaultKind::BackendError:
          throw Error("injected fault: backend_error" + where);
        case FaultKind::Random:
          break;
      }
    }
    return inner_->run_window(window);
  }

  void release() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      released_ = true;
    }
    cv_.notify_all();
    inner_->release();
  }

 private:
  std::unique_ptr<Backend> inner_;
  std::shared_ptr<FaultInjector> faults_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool released_ = false;
};

}  // namespace

FaultInjector::FaultInjector(FaultPlan plan) : plan_(std::move(plan)) {
  for (const auto& f : plan_.faults) streams_.emplace_back(f.seed);
}

std::unique_ptr<Backend> FaultInjector::wrap(std::unique_ptr<Backend> inner) {
  return std::make_unique<FaultyBackend>(std::move(inner), shared_from_this());
}

std::vector<FaultInjector::Action> FaultInjector::next_window() {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t w = ++windows_;
  std::vector<Action> out;
  for (size_t i = 0; i < plan_.faults.size(); ++i) {
    const Fault& f = plan_.faults[i];
    if (f.kind == FaultKind::Random) {
      std::uniform_real_distribution<double> u(0.0, 1.0);
      if (u(streams_[i]) >= f.p) continue;
      std::vector<FaultKind> menu = {FaultKind::Throw, FaultKind::BackendError, FaultKind::Slow};
      if (f.seconds > 0) menu.push_back(FaultKind::Stall);
      std::uniform_int_distribution<size_t> pick(0, menu.size() - 1);
      out.push_back({menu[pick(streams_[i])], f.seconds, f.ms, w});
      continue;
    }
    bool fires = f.window > 0 ? w == f.window : (w % f.every) == 0;
    if (fires) out.push_back({f.kind, f.seconds, f.ms, w});
  }
  fired_ += static_cast<int64_t>(out.size());
  return out;
}

int64_t FaultInjector::windows() const {
  std::lock_guard<std::mutex> lock(mu_);
  return windows_;
}

int64_t FaultInjector::fired() const {
  std::lock_guard<std::mutex> lock(mu_);
  return fired_;
}

}  // namespace strata
