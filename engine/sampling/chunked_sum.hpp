// Sums over a vocabulary-sized set in id order, in the order a GPU warp adds them, so a device reproduces
// them bit for bit with a warp per chunk (cuda/kernels/sample.cu, logprobs.cu, rank_select.cuh): the set is
// cut into chunks of kSamplerSumChunk values; value i of a chunk goes to lane i % 32, each lane adds its
// values in order, then the 32 lane sums are combined by a butterfly (step o = 16, 8, 4, 2, 1: lane l gets
// lane l + lane l ^ o); the chunk sums are then added in order.
#pragma once
#include "engine/sampling/sampler.hpp"

// LaneSum also runs in device code (cuda/kernels/sample.cu), one thread emulating the warp.
#if defined(__CUDACC__)
#define STRATA_HOST_DEVICE __host__ __device__
#else
#define STRATA_HOST_DEVICE
#endif

namespace strata {

// One chunk's sum: add(i, w) for its values (i: the value's index in the chunk, or its id), then value().
class LaneSum {
 public:
  STRATA_HOST_DEVICE void add(int i, double w) { lane_[i & 31] += w; }
  STRATA_HOST_DEVICE double value() const {
    double v[32];
    for (int l = 0; l < 32; ++l) v[l] = lane_[l];
    for (int o = 16; o >= 1; o /= 2) {
      double next[32];
      for (int l = 0; l < 32; ++l) next[l] = v[l] + v[l ^ o];
      for (int l = 0; l < 32; ++l) v[l] = next[l];
    }
    return v[0];
  }

 private:
  double lane_[32] = {};
};

// A whole set's sum, values added in id order.
class ChunkedSum {
 public:
  void add(double w) {
    chunk_.add(n_, w);
    if (++n_ == kSamplerSumChunk) {
      total_ += chunk_.value();
      chunk_ = LaneSum();
      n_ = 0;
    }
  }
  double value() const { return n_ ? total_ + chunk_.value() : total_; }

 private:
  LaneSum chunk_;
  double total_ = 0.0;
  int n_ = 0;
};

}  // namespace strata
