#include "cuda/kernels/kernel_trace.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>

#include "cuda/cuda_check.hpp"

namespace strata {
namespace cuda {
namespace {

std::vector<void (*)(KernelTraceRecord*)>& setters() {
  static std::vector<void (*)(KernelTraceRecord*)> s;
  return s;
}

void set_all(KernelTraceRecord* buffer) {
  for (auto set : setters()) set(buffer);
}

constexpr size_t kRecords = size_t(kTraceRecords) + 1;  // with the counter

}  // namespace

bool kernel_trace_built() {
#ifdef STRATA_KERNEL_TRACE
  return true;
#else
  return false;
#endif
}

void kernel_trace_register(void (*set)(KernelTraceRecord*)) { setters().push_back(set); }

KernelTrace::KernelTrace() {
  if (!kernel_trace_built())
    throw Error("kernel trace: this build records no kernel timelines (configure with -DSTRATA_KERNEL_TRACE=ON)");
  STRATA_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&buffer_), kRecords * sizeof(KernelTraceRecord)));
}

KernelTrace::~KernelTrace() {
  set_all(nullptr);
  if (buffer_) cudaFree(buffer_);
}

void KernelTrace::start() {
  STRATA_CUDA_CHECK(cudaDeviceSynchronize());
  STRATA_CUDA_CHECK(cudaMemset(buffer_, 0, kRecords * sizeof(KernelTraceRecord)));
  set_all(buffer_);
  STRATA_CUDA_CHECK(cudaDeviceSynchronize());
}

std::vector<KernelTraceRecord> KernelTrace::stop() {
  STRATA_CUDA_CHECK(cudaDeviceSynchronize());
  set_all(nullptr);
  std::vector<KernelTraceRecord> all(kRecords);
  STRATA_CUDA_CHECK(cudaMemcpy(all.data(), buffer_, kRecords * sizeof(KernelTraceRecord), cudaMemcpyDeviceToHost));
  arrived_ = all[0].grid_id;
  const size_t n = std::min<uint64_t>(arrived_, kTraceRecords);
  return std::vector<KernelTraceRecord>(all.begin() + 1, all.begin() + 1 + static_cast<long>(n));
}

void write_kernel_trace_csv(const std::vector<KernelTraceRecord>& records, const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) throw Error("kernel trace: cannot write " + path);
  uint64_t t0 = UINT64_MAX;
  for (const KernelTraceRecord& r : records) t0 = std::min(t0, r.start_ns);
  std::fprintf(f, "grid_id,block,blocks,threads,sm,start_ns,release_ns\n");
  for (const KernelTraceRecord& r : records)
    std::fprintf(f, "%llu,%u,%u,%u,%u,%llu,%llu\n", static_cast<unsigned long long>(r.grid_id), r.block, r.blocks,
                 r.threads, r.sm, static_cast<unsigned long long>(r.start_ns - t0),
                 static_cast<unsigned long long>(r.release_ns - t0));
  std::fclose(f);
}

}  // namespace cuda
}  // namespace strata
