// Drafters for speculation tests: ones that only cost speed (random tokens, a throw mid-request) and one that
// knows the answer. The engine must give identical output with each.
#pragma once
#include <atomic>
#include <memory>
#include <random>
#include <vector>

#include "engine/spec/drafter.hpp"

namespace strata::test {

// Proposes max_k uniformly random ids from [0, id_limit): garbage, sometimes outside the vocabulary.
class RandomDrafter : public Drafter {
 public:
  RandomDrafter(uint32_t seed, int id_limit) : rng_(seed), ids_(0, id_limit - 1) {}
  const char* name() const override { return "random"; }
  std::vector<TokenId> propose(const std::vector<TokenId>&, int max_k, const DraftRoom&) override {
    std::vector<TokenId> d;
    for (int i = 0; i < max_k; ++i) d.push_back(ids_(rng_));
    return d;
  }

 private:
  std::mt19937 rng_;
  std::uniform_int_distribution<TokenId> ids_;
};

// Proposes like the n-gram drafter, then throws on its n-th call.
class ThrowingDrafter : public Drafter {
 public:
  ThrowingDrafter(int throw_at, std::shared_ptr<std::atomic<int>> calls) : throw_at_(throw_at), calls_(std::move(calls)) {}
  const char* name() const override { return "throwing"; }
  std::vector<TokenId> propose(const std::vector<TokenId>& h, int max_k, const DraftRoom& room) override {
    if (++n_ == throw_at_) throw std::runtime_error("drafter exploded");
    calls_->fetch_add(1);
    return inner_.propose(h, max_k, room);
  }

 private:
  int throw_at_, n_ = 0;
  std::shared_ptr<std::atomic<int>> calls_;  // successful proposals, over all instances
  NgramDrafter inner_;
};

// Proposes like the n-gram drafter; its n-th while_verifying() throws (after the proposal that window verifies).
class VerifyThrowingDrafter : public NgramDrafter {
 public:
  VerifyThrowingDrafter(int throw_at, std::shared_ptr<std::atomic<int>> proposals)
      : throw_at_(throw_at), proposals_(std::move(proposals)) {}
  const char* name() const override { return "verify-throwing"; }
  std::vector<TokenId> propose(const std::vector<TokenId>& h, int max_k, const DraftRoom& room) override {
    proposals_->fetch_add(1);
    return NgramDrafter::propose(h, max_k, room);
  }
  void while_verifying() override {
    if (++n_ == throw_at_) throw std::runtime_error("drafter exploded while the target verified");
  }

 private:
  int throw_at_, n_ = 0;
  std::shared_ptr<std::atomic<int>> proposals_;  // over all instances
};

// Proposes like the n-gram drafter and reads the target's features: every take_feature() call is recorded,
// in order, for a test to hold against the target's own features of the final sequence.
class FeatureRecorder : public NgramDrafter {
 public:
  struct Delivery {
    int32_t pos;
    std::vector<float> feature;
  };
  FeatureRecorder(int dim, std::shared_ptr<std::vector<Delivery>> log) : dim_(dim), log_(std::move(log)) {}
  const char* name() const override { return "feature-recorder"; }
  int feature_dim() const override { return dim_; }
  void take_feature(int32_t pos, std::vector<float>&& f) override { log_->push_back(Delivery{pos, std::move(f)}); }

 private:
  int dim_;
  std::shared_ptr<std::vector<Delivery>> log_;
};

}  // namespace strata::test
