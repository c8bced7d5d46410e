// CPU decode throughput: loads a model directory, prefills a prompt of random ids into each of B slots, then
// decodes N greedy tokens per slot with windows of B rows (one per slot), and reports tokens/s.
//   cpu_decode_bench --model DIR [--threads T] [--tokens N] [--prompt P] [--batch B] [--context C]
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "engine/cpu/cpu_backend.hpp"

namespace {

// CPU seconds this process has used: on a shared machine wall time alone mostly measures the neighbours.
double cpu_seconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

double load_average() {
  double l[1] = {0};
  return getloadavg(l, 1) == 1 ? l[0] : -1.0;
}

int usage() {
  std::fprintf(stderr,
               "usage: cpu_decode_bench --model DIR [--threads T] [--tokens N] [--prompt P] [--batch B] "
               "[--context C]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_dir;
  int threads = 0, tokens = 64, prompt = 16, batch = 1, context = 0;
  for (int i = 1; i < argc; ++i) {
    auto next = [&](const char* flag) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", flag);
        std::exit(2);
      }
      return argv[++i];
    };
    auto next_int = [&](const char* flag, int min) {
      const char* v = next(flag);
      char* end = nullptr;
      long x = std::strtol(v, &end, 10);
      if (!end || *end || x < min || x > 1000000) {
        std::fprintf(stderr, "%s: bad value \"%s\" (an integer >= %d)\n", flag, v, min);
        std::exit(2);
      }
      return int(x);
    };
    if (!std::strcmp(argv[i], "--model")) model_dir = next("--model");
    else if (!std::strcmp(argv[i], "--threads")) threads = next_int("--threads", 0);
    else if (!std::strcmp(argv[i], "--tokens")) tokens = next_int("--tokens", 1);
    else if (!std::strcmp(argv[i], "--prompt")) prompt = next_int("--prompt", 1);
    else if (!std::strcmp(argv[i], "--batch")) batch = next_int("--batch", 1);
    else if (!std::strcmp(argv[i], "--context")) context = next_int("--context", 1);
    else return usage();
  }
  if (model_dir.empty()) return usage();
  try {
    using clock = std::chrono::steady_clock;
    auto t0 = clock::now();
    auto model = strata::load_model(model_dir);
    strata::CpuBackendOptions o;
    o.max_slots = batch;
    o.max_context = context > 0 ? context : prompt + tokens + 1;
    o.threads = threads;
    strata::CpuBackend be(*model, o);
    const double load_s = std::chrono::duration<double>(clock::now() - t0).count();
    const int vocab = model->config.vocab_size;

    std::vector<strata::SlotId> slots;
    std::vector<strata::TokenId> last(static_cast<size_t>(batch));
    double prefill_s = 0;
    const double prefill_cpu0 = cpu_seconds();
    for (int b = 0; b < batch; ++b) {
      slots.push_back(be.open_slot());
      strata::Window w;
      for (int p = 0; p < prompt; ++p) {
        strata::Row r;
        r.slot = slots.back();
        r.token = strata::TokenId((uint64_t(p + 1) * 2654435761u + uint64_t(b) * 40503u) % uint64_t(vocab));
        r.pos = p;
        r.want_pick = p == prompt - 1;
        w.rows.push_back(r);
      }
      auto t = clock::now();
      last[size_t(b)] = be.run_window(w).back().pick;
      prefill_s += std::chrono::duration<double>(clock::now() - t).count();
    }
    const double prefill_cpu_s = cpu_seconds() - prefill_cpu0;
    const double load_before = load_average();
    const double cpu0 = cpu_seconds();
    auto t = clock::now();
    for (int step = 0; step < tokens; ++step) {
      strata::Window w;
      for (int b = 0; b < batch; ++b) {
        strata::Row r;
        r.slot = slots[size_t(b)];
        r.token = last[size_t(b)];
        r.pos = prompt + step;
        r.want_pick = true;
        w.rows.push_back(r);
      }
      auto res = be.run_window(w);
      for (int b = 0; b < batch; ++b) last[size_t(b)] = res[size_t(b)].pick;
    }
    const double decode_s = std::chrono::duration<double>(clock::now() - t).count();
    const double decode_cpu_s = cpu_seconds() - cpu0;
    const auto& c = model->config;
    std::printf(
        "model=%s arch=%s layers=%d hidden=%d vocab=%d kernel=%s threads=%d batch=%d prompt=%d tokens=%d\n"
        "load_s=%.2f prefill_tok_s=%.1f prefill_tok_per_cpu_s=%.1f decode_tok_s=%.2f decode_ms_per_step=%.2f decode_tok_per_cpu_s=%.2f "
        "loadavg=%.1f\n",
        model_dir.c_str(), c.architecture.c_str(), c.num_layers, c.hidden_size, c.vocab_size, be.kernel_name(),
        be.threads(), batch, prompt, tokens, load_s, batch * prompt / prefill_s, batch * prompt / prefill_cpu_s,
        batch * tokens / decode_s,
        1000.0 * decode_s / tokens, double(batch) * tokens / decode_cpu_s, load_before);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cpu_decode_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
