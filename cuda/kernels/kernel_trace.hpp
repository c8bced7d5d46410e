// Kernel timelines from inside a window's graph (a build with -DSTRATA_KERNEL_TRACE=ON; strata_bench_cuda
// --trace FILE): every kernel's pdl_wait() (launch.cuh) has thread 0 of each block write the block's start
// and the moment its wait returned (%globaltimer, ns), the launch's %gridid, its block index and count and its
// SM into the next free record of a device buffer (one atomic before the wait, whose round trip the wait
// hides; the record itself in plain stores). A kernel's release
// is when its predecessor finished, so the records show how early each kernel's blocks sat resident and how
// long each step of a layer held the chain. Nsight Systems is not available on the GPU machine, and Nsight
// Compute serializes the kernels, which hides exactly that.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace strata {
namespace cuda {

struct KernelTraceRecord {
  uint64_t grid_id = 0;     // %gridid (the buffer's first record: how many blocks arrived)
  uint64_t start_ns = 0;    // the block reached pdl_wait()
  uint64_t release_ns = 0;  // pdl_wait() returned
  uint32_t block = 0, blocks = 0, sm = 0, threads = 0;
  uint64_t pad = 0;
};
constexpr int kTraceRecords = 1 << 20;  // blocks a trace records (the first ones to arrive)

// Whether this build records (STRATA_KERNEL_TRACE).
bool kernel_trace_built();
// Each kernel translation unit registers the setter of its buffer pointer at static initialization.
void kernel_trace_register(void (*set)(KernelTraceRecord* buffer));

// Records every kernel launched between start() and stop() (the device synchronized in both); stop() returns
// the records in the order the blocks arrived, and arrived() how many did (more than returned when the
// buffer filled). Throws strata::Error in a build without tracing.
class KernelTrace {
 public:
  KernelTrace();
  ~KernelTrace();
  KernelTrace(const KernelTrace&) = delete;
  KernelTrace& operator=(const KernelTrace&) = delete;
  void start();
  std::vector<KernelTraceRecord> stop();
  uint64_t arrived() const { return arrived_; }

 private:
  KernelTraceRecord* buffer_ = nullptr;  // the counter record, then kTraceRecords records
  uint64_t arrived_ = 0;
};

// CSV of the records (a header line, then grid_id,block,blocks,threads,sm,start_ns,release_ns with times
// relative to the earliest start) for tools/bench/trace_summary.py.
void write_kernel_trace_csv(const std::vector<KernelTraceRecord>& records, const std::string& path);

}  // namespace cuda
}  // namespace strata
