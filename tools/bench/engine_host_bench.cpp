// The engine thread's host cost per window, with a backend that computes nothing: N streaming requests
// decode T tokens each through the real engine (scheduler, stop rules, detokenizer, request channels), one
// reader thread per request as the HTTP handlers have. What the accelerator would wait for between windows.
//
//   engine_host_bench [--streams N] [--tokens T] [--device-us U] [--tokenizer DIR] [--spec off|ngram]
//                     [--spec-k K] [--period P]
//
// The backend's pick at position p is a fixed function of p and the slot; with --period P it repeats every P
// positions, so n-gram drafts (--spec ngram) are accepted once a request has seen one period: the host cost
// of verify windows and commits at full acceptance (tokens_per_window says how many each window kept).
//
// The backend acts as an asynchronous device whose windows take --device-us (default 0): the engine starts a
// window, makes the previous window's text while it "runs", then waits for it. Prints, for windows that carry
// every stream: the engine thread's CPU time and the wall time from a window's results to the next window's
// start (what the device waits for: engine_cpu_us_per_window, gap_us_per_window), and the engine's CPU time
// per window in all, the part hidden behind the device included (engine_total_cpu_us_per_window). CPU times
// are CLOCK_THREAD_CPUTIME_ID, so other threads on the same cores do not count.
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "engine/core/backend.hpp"
#include "engine/core/engine.hpp"
#include "engine/tokenizer/tokenizer.hpp"

using namespace strata;

namespace {

long long thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

long long wall_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Picks a fixed function of (slot, position) among ordinary token ids; nothing else.
class NullBackend : public Backend {
 public:
  NullBackend(int slots, int vocab) : open_(size_t(slots), false), vocab_(vocab) {}
  BackendInfo info() const override {
    BackendInfo i;
    i.name = "null";
    i.max_slots = int(open_.size());
    i.max_context = 1 << 16;
    i.vocab_size = vocab_;
    i.max_window_rows = 1 << 16;
    return i;
  }
  SlotId open_slot() override {
    for (size_t i = 0; i < open_.size(); ++i)
      if (!open_[i]) {
        open_[i] = true;
        return SlotId(i);
      }
    return kNoSlot;
  }
  void reset_slot(SlotId) override {}
  void close_slot(SlotId s) override { open_[size_t(s)] = false; }
  void set_sampling(SlotId, const SamplingParams&) override {}
  void commit(SlotId, int) override {}
  std::vector<RowResult> run_window(const Window& w) override {
    std::vector<RowResult> r(w.rows.size());
    for (size_t i = 0; i < w.rows.size(); ++i) {
      const int pos = period > 0 ? w.rows[i].pos % period : w.rows[i].pos;
      r[i].pick = TokenId(100 + (pos * 7 + w.rows[i].slot) % (vocab_ - 200));
    }
    return r;
  }
  // Whether the window has a row of every open slot (verify windows have several of some).
  bool carries_all(const Window& w) const {
    std::vector<bool> seen(open_.size(), false);
    int n = 0;
    for (const Row& r : w.rows)
      if (!seen[size_t(r.slot)]) seen[size_t(r.slot)] = true, ++n;
    return n == int(open_.size());
  }
  // As an asynchronous device: the window "runs" from start_window() for device_us, while the engine does
  // its work on the previous picks; finish_window() waits out what is left of it.
  void start_window(const Window& w) override {
    const long long cpu0 = thread_cpu_ns(), wall0 = wall_ns();
    if (carries_all(w) && last_wall_ != 0) {
      cpu_ns += cpu0 - last_cpu_;
      gap_ns += wall0 - last_wall_;
      ++full_windows;
    }
    ++windows;
    started_ = w;
    started_at_ = wall0;
  }
  std::vector<RowResult> finish_window() override {
    if (carries_all(started_) && last_wall_ != 0) overlap_cpu_ns += thread_cpu_ns() - last_cpu_;
    while (wall_ns() < started_at_ + device_us * 1000LL) {
    }
    std::vector<RowResult> r = run_window(started_);
    last_cpu_ = thread_cpu_ns();
    last_wall_ = wall_ns();
    return r;
  }
  long long device_us = 0;
  int period = 0;
  long long overlap_cpu_ns = 0;  // engine CPU from one window's finish to the next one's (both parts)
  long long cpu_ns = 0, gap_ns = 0;
  long windows = 0, full_windows = 0;

 private:
  std::vector<bool> open_;
  int vocab_;
  long long last_cpu_ = 0, last_wall_ = 0;
  Window started_;
  long long started_at_ = 0;
};

int usage() {
  std::fprintf(stderr, "usage: engine_host_bench [--streams N] [--tokens T] [--device-us U] [--tokenizer DIR] "
                       "[--spec off|ngram] [--spec-k K] [--period P]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int streams = 128, tokens = 512, spec_k = 4, period = 0;
  long long device_us = 0;
  std::string spec = "off";
  std::string tok_dir = STRATA_SOURCE_DIR "/tests/data/models/llama";
  for (int i = 1; i < argc; ++i) {
    const bool v = i + 1 < argc;
    if (!std::strcmp(argv[i], "--streams") && v) streams = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--tokens") && v) tokens = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--device-us") && v) device_us = std::atoll(argv[++i]);
    else if (!std::strcmp(argv[i], "--tokenizer") && v) tok_dir = argv[++i];
    else if (!std::strcmp(argv[i], "--spec") && v) spec = argv[++i];
    else if (!std::strcmp(argv[i], "--spec-k") && v) spec_k = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--period") && v) period = std::atoi(argv[++i]);
    else return usage();
  }
  if (streams < 1 || tokens < 1 || spec_k < 1 || period < 0 || (spec != "off" && spec != "ngram")) return usage();
  spdlog::set_level(spdlog::level::warn);
  auto tok = Tokenizer::load(tok_dir);
  const int vocab = tok->vocab_size();
  NullBackend* backend = nullptr;
  EngineOptions o;
  o.max_queued = streams;
  if (spec == "ngram") o.speculation.mode = SpeculationMode::Ngram;
  o.speculation.max_k = spec_k;
  Engine engine(
      [&] {
        auto b = std::make_unique<NullBackend>(streams, vocab);
        b->device_us = device_us;
        b->period = period;
        backend = b.get();
        return std::unique_ptr<Backend>(std::move(b));
      },
      *tok, {}, o);
  while (!engine.ready()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::atomic<int> refused{0};
  std::vector<std::thread> readers;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < streams; ++i)
    readers.emplace_back([&, i] {
      auto r = std::make_shared<GenerationRequest>();
      r->id = "bench-" + std::to_string(i);
      for (int p = 0; p < 128; ++p) r->prompt.push_back(TokenId(100 + (p * 13 + i) % (vocab - 200)));
      r->max_tokens = tokens;
      r->ignore_eos = true;
      r->sampling.temperature = 0.0f;
      auto ch = std::make_shared<RequestChannel>();
      if (engine.submit(r, ch) != SubmitResult::Accepted) {
        refused.fetch_add(1);
        return;
      }
      for (;;) {
        auto ev = ch->pop(std::chrono::seconds(5));
        if (ev && ev->finish) break;
      }
    });
  for (auto& t : readers) t.join();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double n = double(std::max(1L, backend->full_windows));
  std::printf("streams=%d tokens=%d spec=%s windows=%ld full_windows=%ld tokens_per_window=%.2f wall_s=%.3f "
              "engine_cpu_us_per_window=%.1f gap_us_per_window=%.1f engine_total_cpu_us_per_window=%.1f "
              "device_us=%lld refused=%d\n",
              streams, tokens, spec.c_str(), backend->windows, backend->full_windows,
              double(streams) * tokens / double(std::max(1L, backend->windows)), wall, 1e-3 * backend->cpu_ns / n,
              1e-3 * backend->gap_ns / n, 1e-3 * backend->overlap_cpu_ns / n, device_us, refused.load());
  return refused.load() ? 1 : 0;
}
