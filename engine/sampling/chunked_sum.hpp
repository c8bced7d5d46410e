// A sum over a vocabulary-sized set in id order, kSamplerSumChunk values at a time: each chunk's running
// sum, then the chunk sums' running sum. Up to one chunk it is the plain running sum; over a 128k
// vocabulary it is what a device reproduces with a thread per chunk (cuda/kernels/sample.cu, logprobs.cu).
#pragma once
#include "engine/sampling/sampler.hpp"

namespace strata {

class ChunkedSum {
 public:
  void add(double w) {
    chunk_ += w;
    if (++n_ == kSamplerSumChunk) {
      total_ += chunk_;
      chunk_ = 0.0;
      n_ = 0;
    }
  }
  double value() const { return total_ + chunk_; }

 private:
  double total_ = 0.0, chunk_ = 0.0;
  int n_ = 0;
};

}  // namespace strata
