// cuBLAS GEMM for windows too wide for the skinny kernel (prompt chunks, decode batches): y[T][n] = x[T][k] *
// W[n][k]^T with fp32 accumulation. bf16 weights take bf16 activations (cuBLAS has no bf16 x fp32 product);
// fp32 weights take the fp32 activations with plain fp32 math (no TF32), so exact-weight models stay exact.
//
// bf16 GEMMs go through cuBLASLt with the algorithm chosen per shape (n, k, T) by timing: the heuristic's
// first choice is often a tile grid of fewer blocks than SMs for decode batches (the 8B o projection at 128
// rows: 128 blocks, half the bandwidth), where a split-K algorithm further down its list streams the weights
// at the bandwidth. A shape is timed the first time it runs outside a graph capture (the backend's eager run
// before each capture), each candidate on cold weights (the L2 flushed by reading a buffer twice its size),
// and the winner kept for the process: every Gemm of the process (each backend: the bench's engine per mode,
// an engine rebuilt after a fault, a draft model's) takes the choice the first one made for that device,
// shape, alignment and workspace, so a shape rounds alike wherever it runs in one process. cuBLAS's default
// (cublasGemmEx, timed alike) stands unless a candidate beats it by 3 %.
// Timing picks the algorithm, so two processes may round differently on this path; it is the tolerance
// path (windows that must match bit for bit never come here), and autotune off keeps cuBLAS's default.
#pragma once
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <tuple>

#include "cuda/device_buffer.hpp"
#include "cuda/device_weights.hpp"

namespace strata {
namespace cuda {

class Gemm {
 public:
  // blas (on `stream`, its workspace set) serves fp32 weights and autotune off; workspace is cuBLASLt's.
  Gemm(cublasHandle_t blas, cudaStream_t stream, void* workspace, size_t workspace_bytes, bool autotune);
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  // x is bf16 [rows][w.cols] for bf16 weights, fp32 for fp32 weights. Not const: a new shape is tuned here.
  void run(const DeviceMatrix& w, const void* x, int rows, float* y);
  int tuned_shapes() const { return int(algos_.size()); }  // the shapes this Gemm has a choice for
  // The flush buffer's bytes (part of the workspace the backend reports), 0 with autotune off.
  size_t flush_bytes() const { return flush_.bytes(); }

 private:
  struct Choice {
    cublasLtMatmulAlgo_t algo;
    bool found;  // false: the shape stays on cublasGemmEx (no candidate beat it)
  };
  Choice tune(int n, int k, int rows, const void* w, const void* x, float* y);
  // The process's choices and their lock (gemm.cpp); found false where none is kept and `time` is false.
  Choice shared_choice(int n, int k, int rows, uint32_t alignments, const void* w, const void* x, float* y,
                       bool time, bool* found);
  void lt_matmul(const cublasLtMatmulAlgo_t* algo, int n, int k, int rows, const void* w, const void* x, float* y);
  void blas_matmul(bool bf16, int n, int k, int rows, const void* w, const void* x, float* y);

  cublasHandle_t blas_;
  cudaStream_t stream_;
  void* workspace_;
  size_t workspace_bytes_;
  bool autotune_;
  int device_ = 0;
  cublasLtHandle_t lt_ = nullptr;
  DeviceBuffer flush_;
  cudaEvent_t ev_[2] = {nullptr, nullptr};
  std::map<std::tuple<int, int, int, uint32_t>, Choice> algos_;  // (n, k, rows, alignments)
};

}  // namespace cuda
}  // namespace strata
