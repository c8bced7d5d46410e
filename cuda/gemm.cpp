#include "cuda/gemm.hpp"

#include <algorithm>
#include <limits>
#include <mutex>

#include "cuda/cuda_check.hpp"
#include "cuda/env.hpp"
#include "cuda/kernels/kernels.hpp"

namespace strata {
namespace cuda {
namespace {

constexpr int kMaxCandidates = 64;

// Heuristic results timed per shape: 12, or STRATA_GEMM_CANDIDATES (1-64) for measurements.
int candidates() {
  static const int n = env_int("STRATA_GEMM_CANDIDATES", 1, kMaxCandidates, 12);
  return n;
}
constexpr int kReps = 3;         // timed runs per candidate (each on cold weights)
constexpr float kMargin = 0.03f; // how much faster than cuBLAS's default a candidate must be

// The largest power of two up to 256 dividing the address: cuBLASLt must not assume more alignment.
uint32_t alignment(const void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  uint32_t al = 256;
  while (al > 1 && a % al != 0) al /= 2;
  return al;
}

// One bf16 GEMM's cuBLASLt descriptors. Row-major W [n][k] is column-major k x n, taken transposed; row-major
// x [T][k] is column-major k x T; the column-major n x T product is row-major y [T][n].
struct LtShape {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  LtShape(int n, int k, int rows) {
    STRATA_CUBLAS_CHECK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    STRATA_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
    STRATA_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
    STRATA_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&a, CUDA_R_16BF, k, n, k));
    STRATA_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&b, CUDA_R_16BF, k, rows, k));
    STRATA_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&c, CUDA_R_32F, n, rows, n));
  }
  ~LtShape() {
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
  LtShape(const LtShape&) = delete;
  LtShape& operator=(const LtShape&) = delete;
};

cublasStatus_t lt_call(cublasLtHandle_t lt, const LtShape& s, const cublasLtMatmulAlgo_t* algo, const void* w,
                       const void* x, float* y, void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  const float one = 1.0f, zero = 0.0f;
  return cublasLtMatmul(lt, s.op, &one, w, s.a, x, s.b, &zero, y, s.c, y, s.c, algo, workspace, workspace_bytes,
                        stream);
}

struct LtPreference {
  cublasLtMatmulPreference_t p = nullptr;
  LtPreference(size_t workspace, const void* w, const void* x, const float* y) {
    STRATA_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&p));
    STRATA_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                                             sizeof(workspace)));
    const uint32_t aw = alignment(w), ax = alignment(x), ay = alignment(y);
    STRATA_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &aw, 4));
    STRATA_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &ax, 4));
    STRATA_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &ay, 4));
    STRATA_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &ay, 4));
  }
  ~LtPreference() {
    if (p) cublasLtMatmulPreferenceDestroy(p);
  }
  LtPreference(const LtPreference&) = delete;
  LtPreference& operator=(const LtPreference&) = delete;
};

size_t flush_size(bool autotune) {
  if (!autotune) return 0;
  int dev = 0, l2 = 0;
  STRATA_CUDA_CHECK(cudaGetDevice(&dev));
  STRATA_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  return std::max<size_t>(size_t(2) * size_t(l2), size_t(1) << 20);  // twice the L2: nothing of W survives
}

}  // namespace

Gemm::Gemm(cublasHandle_t blas, cudaStream_t stream, void* workspace, size_t workspace_bytes, bool autotune)
    : blas_(blas), stream_(stream), workspace_(workspace), workspace_bytes_(workspace_bytes), autotune_(autotune),
      flush_(flush_size(autotune), "GEMM autotune L2 flush") {
  if (!autotune_) return;
  STRATA_CUDA_CHECK(cudaGetDevice(&device_));
  STRATA_CUBLAS_CHECK(cublasLtCreate(&lt_));
  STRATA_CUDA_CHECK(cudaEventCreate(&ev_[0]));
  STRATA_CUDA_CHECK(cudaEventCreate(&ev_[1]));
}

Gemm::~Gemm() {
  if (ev_[1]) cudaEventDestroy(ev_[1]);
  if (ev_[0]) cudaEventDestroy(ev_[0]);
  if (lt_) cublasLtDestroy(lt_);
}

void Gemm::lt_matmul(const cublasLtMatmulAlgo_t* algo, int n, int k, int rows, const void* w, const void* x,
                     float* y) {
  STRATA_CUBLAS_CHECK(lt_call(lt_, LtShape(n, k, rows), algo, w, x, y, workspace_, workspace_bytes_, stream_));
}

Gemm::Choice Gemm::tune(int n, int k, int rows, const void* w, const void* x, float* y) {
  const LtShape s(n, k, rows);
  const LtPreference pref(workspace_bytes_, w, x, y);
  cublasLtMatmulHeuristicResult_t res[kMaxCandidates] = {};
  int found = 0;
  Choice none{};
  none.found = false;
  if (cublasLtMatmulAlgoGetHeuristic(lt_, s.op, s.a, s.b, s.c, s.c, pref.p, candidates(), res, &found) !=
          CUBLAS_STATUS_SUCCESS ||
      found <= 0)
    return none;

  // Each run on cold weights; a candidate < 0 is cublasGemmEx's default, the baseline to beat.
  auto time_ms = [&](int i) {
    float total = 0.0f;
    for (int rep = 0; rep < kReps; ++rep) {
      launch_read(flush_.get(), flush_.bytes(), stream_);
      STRATA_CUDA_CHECK(cudaEventRecord(ev_[0], stream_));
      bool ok = true;
      if (i < 0)
        blas_matmul(true, n, k, rows, w, x, y);
      else
        ok = lt_call(lt_, s, &res[i].algo, w, x, y, workspace_, workspace_bytes_, stream_) == CUBLAS_STATUS_SUCCESS;
      STRATA_CUDA_CHECK(cudaEventRecord(ev_[1], stream_));
      STRATA_CUDA_CHECK(cudaEventSynchronize(ev_[1]));
      if (!ok) return std::numeric_limits<float>::infinity();
      float ms = 0.0f;
      STRATA_CUDA_CHECK(cudaEventElapsedTime(&ms, ev_[0], ev_[1]));
      total += ms;
    }
    return total;
  };
  const float base_ms = time_ms(-1);
  int best = -1;
  float best_ms = std::numeric_limits<float>::infinity();
  for (int i = 0; i < found; ++i) {
    if (res[i].state != CUBLAS_STATUS_SUCCESS) continue;
    const float ms = time_ms(i);
    if (ms < best_ms) best_ms = ms, best = i;
  }
  // Timing noise must not pick: cuBLAS's default stands unless a candidate is clearly faster.
  if (best < 0 || best_ms > base_ms * (1.0f - kMargin)) return none;
  return {res[best].algo, true};
}

void Gemm::blas_matmul(bool bf16, int n, int k, int rows, const void* w, const void* x, float* y) {
  const float one = 1.0f, zero = 0.0f;
  const cudaDataType_t t = bf16 ? CUDA_R_16BF : CUDA_R_32F;
  STRATA_CUBLAS_CHECK(cublasGemmEx(blas_, CUBLAS_OP_T, CUBLAS_OP_N, n, rows, k, &one, w, t, k, x, t, k, &zero, y,
                                   CUDA_R_32F, n, bf16 ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_32F_PEDANTIC,
                                   CUBLAS_GEMM_DEFAULT));
}

Gemm::Choice Gemm::shared_choice(int n, int k, int rows, uint32_t alignments, const void* w, const void* x,
                                 float* y, bool time, bool* found) {
  // Choices by (device, n, k, rows, alignments, workspace bytes), for the whole process. A shape is timed
  // under the lock: two backends that meet it at once take one timing.
  using Key = std::tuple<int, int, int, int, uint32_t, size_t>;
  static std::mutex mu;
  static std::map<Key, Choice> choices;
  // STRATA_GEMM_SHARED=0: each Gemm times its own shapes (as before the process kept them), for comparisons.
  static const bool shared = env_int("STRATA_GEMM_SHARED", 0, 1, 1) != 0;
  Choice none{};
  none.found = false;
  *found = time;
  if (!shared) return time ? tune(n, k, rows, w, x, y) : none;
  const Key key{device_, n, k, rows, alignments, workspace_bytes_};
  std::lock_guard<std::mutex> lock(mu);
  auto it = choices.find(key);
  if (it != choices.end()) {
    *found = true;
    return it->second;
  }
  return time ? choices.emplace(key, tune(n, k, rows, w, x, y)).first->second : none;
}

void Gemm::run(const DeviceMatrix& w, const void* x, int rows, float* y) {
  const int n = w.rows, k = w.cols;
  const bool bf16 = w.type == WType::BF16;
  if (bf16 && autotune_) {
    const uint32_t al = alignment(w.ptr) * 1024 * 1024 + alignment(x) * 1024 + alignment(y);
    const auto key = std::make_tuple(n, k, rows, al);
    auto it = algos_.find(key);
    if (it == algos_.end()) {
      cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
      STRATA_CUDA_CHECK(cudaStreamIsCapturing(stream_, &capturing));
      // No timing inside a capture: a shape no Gemm of the process has timed keeps cuBLAS's default there.
      bool kept = false;
      const Choice c = shared_choice(n, k, rows, al, w.ptr, x, y, capturing == cudaStreamCaptureStatusNone, &kept);
      if (kept) it = algos_.emplace(key, c).first;
    }
    if (it != algos_.end() && it->second.found) return lt_matmul(&it->second.algo, n, k, rows, w.ptr, x, y);
  }
  blas_matmul(bf16, n, k, rows, w.ptr, x, y);
}

}  // namespace cuda
}  // namespace strata
