#include "cuda/bench.hpp"

#include <cublas_v2.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "cuda/cuda_backend.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/kernels/kernel_trace.hpp"
#include "cuda/kernels/kernels.hpp"

namespace strata {
namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

// Bytes read plus written per second by device-to-device copies of a buffer far larger than L2.
double copy_bandwidth(size_t bytes) {
  cuda::DeviceBuffer a(bytes, "bench copy source"), b(bytes, "bench copy destination");
  STRATA_CUDA_CHECK(cudaMemset(a.get(), 1, bytes));
  cudaEvent_t e0, e1;
  STRATA_CUDA_CHECK(cudaEventCreate(&e0));
  STRATA_CUDA_CHECK(cudaEventCreate(&e1));
  STRATA_CUDA_CHECK(cudaMemcpy(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice));
  const int reps = 10;
  STRATA_CUDA_CHECK(cudaEventRecord(e0));
  for (int i = 0; i < reps; ++i) STRATA_CUDA_CHECK(cudaMemcpy(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice));
  STRATA_CUDA_CHECK(cudaEventRecord(e1));
  STRATA_CUDA_CHECK(cudaEventSynchronize(e1));
  float ms = 0;
  STRATA_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return 2.0 * double(bytes) * reps / (double(ms) / 1e3);
}

// FLOP/s of a square bf16 GEMM with fp32 accumulation (random-ish data: the rate depends on it).
double gemm_rate(int n) {
  const size_t elems = size_t(n) * n;
  cuda::DeviceBuffer a(elems * 2, "bench gemm A"), b(elems * 2, "bench gemm B"), c(elems * 4, "bench gemm C");
  STRATA_CUDA_CHECK(cudaMemset(a.get(), 0x3c, elems * 2));
  STRATA_CUDA_CHECK(cudaMemset(b.get(), 0x3b, elems * 2));
  cublasHandle_t h;
  STRATA_CUBLAS_CHECK(cublasCreate(&h));
  const float one = 1.0f, zero = 0.0f;
  auto run = [&] {
    STRATA_CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &one, a.get(), CUDA_R_16BF, n, b.get(),
                                     CUDA_R_16BF, n, &zero, c.get(), CUDA_R_32F, n, CUBLAS_COMPUTE_32F,
                                     CUBLAS_GEMM_DEFAULT));
  };
  run();
  STRATA_CUDA_CHECK(cudaDeviceSynchronize());
  const int reps = 10;
  const auto t = clock_type::now();
  for (int i = 0; i < reps; ++i) run();
  STRATA_CUDA_CHECK(cudaDeviceSynchronize());
  const double s = seconds_since(t);
  cublasDestroy(h);
  return 2.0 * double(n) * n * n * reps / s;
}

// The skinny matmul alone on the model's matrix shapes and window sizes of 1 to 64 rows: bandwidth of the weight
// bytes it streams (the activations stay in L1/L2), against the copy bandwidth. Random-ish bf16 weights.
void matvec_bench(const ModelConfig& c, double copy_bw) {
  struct Shape {
    const char* name;
    int n, k;
    bool swiglu;
  };
  const int q = c.num_heads * c.head_dim, kv = c.num_kv_heads * c.head_dim;
  const Shape shapes[] = {{"qkv", q + 2 * kv, c.hidden_size, false},
                          {"o", c.hidden_size, q, false},
                          {"gate_up+swiglu", c.intermediate_size, c.hidden_size, true},
                          {"down", c.hidden_size, c.intermediate_size, false},
                          {"lm_head", c.vocab_size, c.hidden_size, false}};
  // Each launch reads another copy of the matrix, cycling over at least 256 MB, so the weights come from HBM
  // and not from the 60 MB L2 as a repeated launch on one copy would.
  const size_t kSpan = size_t(256) << 20;
  const size_t kMaxRows = 64;
  auto copies_of = [&](size_t bytes) { return std::max<size_t>(1, (kSpan + bytes - 1) / bytes); };
  size_t max_w = 0, max_k = 0, max_n = 0;
  for (const Shape& sh : shapes) {
    const size_t bytes = size_t(sh.swiglu ? 2 : 1) * sh.n * sh.k * 2;
    max_w = std::max(max_w, bytes * copies_of(bytes));
    max_k = std::max(max_k, size_t(sh.k));
    max_n = std::max(max_n, size_t(sh.n));
  }
  cuda::DeviceBuffer w(max_w, "matvec bench weights"), x(kMaxRows * max_k * 4, "matvec bench x"),
      y(kMaxRows * max_n * 4, "matvec bench y");
  STRATA_CUDA_CHECK(cudaMemset(w.get(), 0x3c, max_w));
  STRATA_CUDA_CHECK(cudaMemset(x.get(), 0x3c, kMaxRows * max_k * 4));
  cudaStream_t st;
  STRATA_CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  STRATA_CUDA_CHECK(cudaEventCreate(&e0));
  STRATA_CUDA_CHECK(cudaEventCreate(&e1));
  cuda::configure_gemv();
  // rows 0: the fused GEMV of one-row windows (the norm in front where the layer has one, the residual add or
  // SwiGLU behind), then the skinny kernel at 1-64 rows.
  for (const Shape& sh : shapes)
    for (int rows : {-1, 0, 1, 2, 4, 8, 16, 32, 64}) {
      // rows -1 (gemv_l2): the fused GEMV on one copy, so a matrix that fits stays in the 60 MB L2 (the most
      // prefetching weights into the L2 could give it).
      const size_t bytes = size_t(sh.swiglu ? 2 : 1) * sh.n * sh.k * 2, copies = rows < 0 ? 1 : copies_of(bytes);
      size_t next = 0;
      auto once = [&] {
        const char* wc = w.get<char>() + (next++ % copies) * bytes;
        if (rows <= 0) {
          cuda::GemvParams g;
          g.w = wc;
          g.n = sh.n;
          g.k = sh.k;
          g.x = x.get<float>();
          const bool residual = !std::strcmp(sh.name, "o") || !std::strcmp(sh.name, "down");  // end in the add
          g.norm = residual ? nullptr : x.get<float>();
          g.eps = 1e-5f;
          g.ep = sh.swiglu ? cuda::GemvEpilogue::Swiglu : residual ? cuda::GemvEpilogue::Residual
                                                                   : cuda::GemvEpilogue::Store;
          g.y = y.get<float>();
          cuda::launch_gemv(g, st);
        } else if (sh.swiglu)
          cuda::launch_matvec_swiglu(wc, cuda::WType::BF16, sh.n, sh.k, x.get<float>(), rows, y.get<float>(), st);
        else
          cuda::launch_matvec(wc, cuda::WType::BF16, sh.n, sh.k, x.get<float>(), rows, y.get<float>(), st);
      };
      for (int i = 0; i < 3; ++i) once();
      const int reps = 30;
      STRATA_CUDA_CHECK(cudaEventRecord(e0, st));
      for (int i = 0; i < reps; ++i) once();
      STRATA_CUDA_CHECK(cudaEventRecord(e1, st));
      STRATA_CUDA_CHECK(cudaEventSynchronize(e1));
      float ms = 0;
      STRATA_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
      const double us = 1e3 * double(ms) / reps;
      std::printf("matvec %-15s n=%-6d k=%-6d %-7s us=%8.2f weight_tb_s=%.3f copy_fraction=%.3f\n",
                  sh.name, sh.n, sh.k, rows > 0 ? ("rows=" + std::to_string(rows)).c_str() : rows ? "gemv_l2" : "gemv", us, double(bytes) / us / 1e6, double(bytes) / us * 1e6 / copy_bw);
    }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaStreamDestroy(st);
}

TokenId bench_token(int i, int vocab) { return TokenId((uint64_t(i + 1) * 2654435761u) % uint64_t(vocab)); }

Window prompt_window(SlotId slot, int len, int vocab) {
  Window w;
  for (int p = 0; p < len; ++p) {
    Row r;
    r.slot = slot;
    r.token = bench_token(p, vocab);
    r.pos = p;
    r.want_pick = p + 1 == len;
    w.rows.push_back(r);
  }
  return w;
}

bool parse_int(const char* s, int min, int* out) {
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  if (!end || *end || v < min || v > 10000000) return false;
  *out = int(v);
  return true;
}

bool parse_on_off(const char* arg, bool* out) {
  if (!std::strcmp(arg, "on")) *out = true;
  else if (!std::strcmp(arg, "off")) *out = false;
  else return false;
  return true;
}

int usage(const char* name) {
  std::fprintf(stderr,
               "usage: %s --model DIR [--prompt P] [--tokens N] [--batch B1,B2,...] [--prefill L1,L2,...] [--device D] "
               "[--mixed B:P,...] [--matvec] [--gemm-min-rows N] [--split-gemm-max-rows N] [--kv-cache-dtype bf16|f32] [--fused-gemv on|off] [--fused-gemv-rows N] [--fused-row-attention on|off] [--attention-tc on|off] [--attention-tc-lean auto|on|off] [--attention-short-tiles on|off] [--attention-prompt-flash on|off] [--gemm-autotune on|off] [--profile] [--trace FILE] [--trace-windows N]\n",
               name);
  return 2;
}

}  // namespace

int run_bench_command(int argc, char** argv) {
  const char* name = argc > 0 ? argv[0] : "bench";
  std::string model_dir, trace_path;
  int trace_windows = 1;
  int prompt = 256, tokens = 256, device = 0;
  bool matvec = false, profile = false;
  bool fused_gemv = CudaBackendOptions{}.fused_gemv, fused_row_attention = CudaBackendOptions{}.fused_row_attention;
  int attention_tc_lean = CudaBackendOptions{}.attention_tc_lean;
  bool attention_tc = CudaBackendOptions{}.attention_tc;
  bool attention_short_tiles = CudaBackendOptions{}.attention_short_tiles;
  bool attention_prompt_flash = CudaBackendOptions{}.attention_prompt_flash;
  bool gemm_autotune = CudaBackendOptions{}.gemm_autotune;
  int gemm_min_rows = 0, split_gemm_max_rows = -1, fused_gemv_rows = CudaBackendOptions{}.fused_gemv_rows;
  DType kv_dtype = DType::BF16;
  std::vector<int> prefill = {512, 4096}, batches = {1};
  std::vector<std::pair<int, int>> mixed;  // (decode rows, prompt rows) of mixed windows
  auto parse_list = [](const char* arg, std::vector<int>* out) {
    out->clear();
    std::stringstream ss(arg);
    std::string item;
    while (std::getline(ss, item, ',')) {
      int v;
      if (!parse_int(item.c_str(), 1, &v)) return false;
      out->push_back(v);
    }
    return !out->empty();
  };
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (!std::strcmp(argv[i], "--model") && has_value) {
      model_dir = argv[++i];
    } else if (!std::strcmp(argv[i], "--prompt") && has_value) {
      if (!parse_int(argv[++i], 1, &prompt)) return usage(name);
    } else if (!std::strcmp(argv[i], "--tokens") && has_value) {
      if (!parse_int(argv[++i], 1, &tokens)) return usage(name);
    } else if (!std::strcmp(argv[i], "--matvec")) {
      matvec = true;
    } else if (!std::strcmp(argv[i], "--trace") && has_value) {
      trace_path = argv[++i];  // one more decode window per batch size, its kernel timeline to this CSV
    } else if (!std::strcmp(argv[i], "--trace-windows") && has_value) {
      trace_windows = std::max(1, std::atoi(argv[++i]));  // consecutive windows in the trace (the host's gap between)
    } else if (!std::strcmp(argv[i], "--profile")) {
      profile = true;  // only the last two decode windows of each batch size run inside cudaProfilerStart/Stop
    } else if (!std::strcmp(argv[i], "--gemm-min-rows") && has_value) {
      if (!parse_int(argv[++i], 1, &gemm_min_rows)) return usage(name);
    } else if (!std::strcmp(argv[i], "--split-gemm-max-rows") && has_value) {
      if (!parse_int(argv[++i], 0, &split_gemm_max_rows)) return usage(name);
    } else if (!std::strcmp(argv[i], "--fused-row-attention") && has_value) {
      if (!parse_on_off(argv[++i], &fused_row_attention)) return usage(name);  // with the fused GEMV: a one-row
                                                                               // window's attention as one kernel
    } else if (!std::strcmp(argv[i], "--attention-tc-lean") && has_value) {
      const std::string v = argv[++i];  // the lean tensor-core attention
      if (v == "auto") attention_tc_lean = -1;
      else if (bool on; parse_on_off(v.c_str(), &on)) attention_tc_lean = on ? 1 : 0;
      else return usage(name);
    } else if (!std::strcmp(argv[i], "--attention-tc") && has_value) {
      if (!parse_on_off(argv[++i], &attention_tc)) return usage(name);  // off: the fixed-order kernel everywhere
    } else if (!std::strcmp(argv[i], "--attention-short-tiles") && has_value) {
      if (!parse_on_off(argv[++i], &attention_short_tiles)) return usage(name);  // tensor-core attention tiles
    } else if (!std::strcmp(argv[i], "--attention-prompt-flash") && has_value) {
      if (!parse_on_off(argv[++i], &attention_prompt_flash)) return usage(name);  // mixed windows' prompt tiles
    } else if (!std::strcmp(argv[i], "--gemm-autotune") && has_value) {
      if (!parse_on_off(argv[++i], &gemm_autotune)) return usage(name);  // cuBLASLt algorithms timed per shape
    } else if (!std::strcmp(argv[i], "--fused-gemv") && has_value) {
      if (!parse_on_off(argv[++i], &fused_gemv)) return usage(name);  // one-row GEMM windows on the fused GEMV
                                                                      // instead of cuBLAS and the small kernels
    } else if (!std::strcmp(argv[i], "--fused-gemv-rows") && has_value) {
      if (!parse_int(argv[++i], 0, &fused_gemv_rows)) return usage(name);  // windows of up to N rows on it (the
                                                                           // server with speculation: 16)
    } else if (!std::strcmp(argv[i], "--kv-cache-dtype") && has_value) {
      const std::string v = argv[++i];
      if (v == "bf16") kv_dtype = DType::BF16;
      else if (v == "f32") kv_dtype = DType::F32;
      else return usage(name);
    } else if (!std::strcmp(argv[i], "--device") && has_value) {
      if (!parse_int(argv[++i], 0, &device)) return usage(name);
    } else if (!std::strcmp(argv[i], "--prefill") && has_value) {
      if (!parse_list(argv[++i], &prefill)) return usage(name);
    } else if (!std::strcmp(argv[i], "--batch") && has_value) {
      if (!parse_list(argv[++i], &batches)) return usage(name);
    } else if (!std::strcmp(argv[i], "--mixed") && has_value) {
      // B:P pairs: windows of B decode rows (B slots) and a P-row prompt chunk of one more slot, as the server's
      // scheduler mixes them, timed against the same B decode rows alone.
      std::stringstream ss(argv[++i]);
      std::string item;
      while (std::getline(ss, item, ',')) {
        const size_t colon = item.find(':');
        int b, pr;
        if (colon == std::string::npos || !parse_int(item.substr(0, colon).c_str(), 1, &b) ||
            !parse_int(item.substr(colon + 1).c_str(), 1, &pr))
          return usage(name);
        mixed.emplace_back(b, pr);
      }
      if (mixed.empty()) return usage(name);
    } else {
      return usage(name);
    }
  }
  if (model_dir.empty()) return usage(name);
  try {
    STRATA_CUDA_CHECK(cudaSetDevice(device));
    const double bw = copy_bandwidth(size_t(2) << 30);
    const double gemm = gemm_rate(8192);
    std::printf("copy_bandwidth_tb_s=%.3f gemm_bf16_tflop_s=%.1f\n", bw / 1e12, gemm / 1e12);

    auto model = load_model(model_dir);
    const ModelConfig& c = model->config;
    if (matvec) matvec_bench(c, bw);
    const int longest = std::max(prompt, prefill.empty() ? 1 : *std::max_element(prefill.begin(), prefill.end()));
    int max_batch = *std::max_element(batches.begin(), batches.end()), max_mixed_rows = 0, mixed_prompt = 0;
    for (const auto& [b, pr] : mixed) {
      max_batch = std::max(max_batch, b + 1);
      max_mixed_rows = std::max(max_mixed_rows, b + pr);
      mixed_prompt = std::max(mixed_prompt, pr);
    }
    // A mixed configuration decodes 2 x (1 + mixed_steps) windows past the prompt (timed below).
    const int mixed_steps = std::max(4, std::min(tokens, 64) / 2);
    const int slot_context = std::max(prompt + tokens + trace_windows, mixed.empty() ? 0 : prompt + 2 * (1 + mixed_steps) + 1);
    CudaBackendOptions o;
    o.max_slots = max_batch;
    o.max_context = std::max(slot_context, longest);
    o.max_window_rows = std::max({longest, max_batch, max_mixed_rows});
    o.max_output_rows = std::max(o.max_output_rows, max_batch);
    // KV for what runs at once: every batch slot's context (prompt + tokens, or the mixed windows' steps), or
    // the longest prefill alone.
    const int per_slot = (slot_context + o.kv_block_size - 1) / o.kv_block_size;
    o.kv_blocks = std::max(max_batch * per_slot, (o.max_context + o.kv_block_size - 1) / o.kv_block_size) +
                  (mixed_prompt + o.kv_block_size - 1) / o.kv_block_size + 8;
    o.device = device;
    o.round_weights_to_bf16 = true;
    // The server's path without speculation unless asked (--gemm-min-rows 17: the speculation path, single rows
    // and verify windows of up to 16 rows on the skinny kernel).
    o.gemm_min_rows = gemm_min_rows > 0 ? gemm_min_rows : 1;
    if (split_gemm_max_rows >= 0) o.split_gemm_max_rows = split_gemm_max_rows;
    o.kv_cache_dtype = kv_dtype;
    o.fused_gemv = fused_gemv;
    o.fused_gemv_rows = fused_gemv_rows;
    o.fused_row_attention = fused_row_attention;
    o.attention_tc = attention_tc;
    o.attention_tc_lean = attention_tc_lean;
    o.attention_short_tiles = attention_short_tiles;
    o.attention_prompt_flash = attention_prompt_flash;
    o.gemm_autotune = gemm_autotune;
    CudaBackend be(*model, o);
    // What one token must read: every layer's matrices and the LM head (the embedding gathers one row).
    const double hd = c.head_dim, h = c.hidden_size, ff = c.intermediate_size;
    const double per_layer = h * hd * (c.num_heads + 2.0 * c.num_kv_heads) + hd * c.num_heads * h + 3.0 * h * ff;
    const double params = per_layer * c.num_layers + double(c.vocab_size) * h;
    const double bytes_per_token = 2.0 * params;
    std::printf("model=%s layers=%d hidden=%d vocab=%d weight_gb_per_token=%.3f device=\"%s\" gemm_min_rows=%d "
                "fused_gemv_rows=%d\n",
                model_dir.c_str(), c.num_layers, c.hidden_size, c.vocab_size, bytes_per_token / 1e9,
                be.device_name().c_str(), o.gemm_min_rows, o.fused_gemv_rows);

    const SlotId slot = be.open_slot();
    SamplingParams greedy;
    greedy.temperature = 0.0f;
    be.set_sampling(slot, greedy);
    // With --profile, the last two windows of each batch size run between cudaProfilerStart/Stop (ncu
    // --profile-from-start off).
    auto profiled = [&](int i) {
      if (!profile) return;
      if (i == tokens - 2) STRATA_CUDA_CHECK(cudaProfilerStart());
      if (i == tokens) STRATA_CUDA_CHECK(cudaProfilerStop());
    };
    // B slots (the first is `slot`) each reset, greedy and prefilled with the prompt (slot b's tokens offset by
    // 7b), and each one's first pick.
    auto prefill_batch = [&](int B, std::vector<SlotId>* slots, std::vector<TokenId>* lasts) {
      for (int b = 0; b < B; ++b) {
        const SlotId sb = b == 0 ? slot : be.open_slot();
        be.reset_slot(sb);
        be.set_sampling(sb, greedy);
        slots->push_back(sb);
        Window pw = prompt_window(sb, prompt, c.vocab_size);
        for (Row& r : pw.rows) r.token = bench_token(r.pos + 7 * b, c.vocab_size);
        lasts->push_back(be.run_window(pw).back().pick);
      }
    };
    // One picking row per slot at `pos`, each fed its slot's last pick.
    auto decode_window = [](const std::vector<SlotId>& slots, const std::vector<TokenId>& lasts, int pos) {
      Window w;
      for (size_t b = 0; b < slots.size(); ++b) {
        Row r;
        r.slot = slots[b];
        r.token = lasts[b];
        r.pos = pos;
        r.want_pick = true;
        w.rows.push_back(r);
      }
      return w;
    };
    // Decode at batch B (batch 1 always, then the --batch sizes): B slots each prefilled with the prompt, then
    // greedy windows of one row per slot, one graph replay each; at B > 1 what llama-batched-bench's decode
    // figure measures (engine only, no HTTP). The weights are read once per window, so the roofline fraction
    // is per window: weight bytes x windows/s / copy bandwidth (KV reads not counted).
    std::vector<int> runs{1};
    for (int B : batches)
      if (B != 1) runs.push_back(B);
    for (int B : runs) {
      std::vector<SlotId> slots;
      std::vector<TokenId> lasts;
      prefill_batch(B, &slots, &lasts);
      // FNV-1a over every pick, so that two builds or options that should decode alike can be compared.
      uint64_t picks_hash = 1469598103934665603ull;
      auto step = [&](int pos) {
        const auto res = be.run_window(decode_window(slots, lasts, pos));
        for (int b = 0; b < B; ++b) {
          lasts[size_t(b)] = res[size_t(b)].pick;
          picks_hash = (picks_hash ^ uint64_t(uint32_t(res[size_t(b)].pick))) * 1099511628211ull;
        }
      };
      step(prompt);  // captures this batch's graph
      const auto tb = clock_type::now();
      for (int i = 1; i < tokens; ++i) {
        profiled(i);
        step(prompt + i);
      }
      profiled(tokens);
      const double sb = seconds_since(tb);
      const double win_s = double(tokens - 1) / sb;
      std::printf("decode_batch%d prompt=%d tokens=%d tok_s=%.1f %s=%.3f roofline_fraction=%.3f picks_fnv=%016llx\n",
                  B, prompt, tokens, win_s * B, B == 1 ? "ms_per_token" : "ms_per_window", 1e3 * sb / (tokens - 1),
                  bytes_per_token * win_s / bw, static_cast<unsigned long long>(picks_hash));
      if (!trace_path.empty()) {  // after the timed steps: --trace-windows more windows, traced (FILE at batch 1, FILE.bB above)
        const std::string path = B == 1 ? trace_path : trace_path + ".b" + std::to_string(B);
        cuda::KernelTrace trace;
        trace.start();
        for (int i = 0; i < trace_windows; ++i) step(prompt + tokens + i);
        const auto records = trace.stop();
        cuda::write_kernel_trace_csv(records, path);
        std::printf("trace %s: %zu block records of %llu blocks arrived\n", path.c_str(), records.size(),
                    static_cast<unsigned long long>(trace.arrived()));
      }
      for (int b = 1; b < B; ++b) be.close_slot(slots[size_t(b)]);
    }

    // Mixed windows: B slots decoding (prefilled with the prompt) plus one slot's P-row prompt chunk from
    // position 0 (the slot reset after each window), what a serving window holds when a request arrives; the
    // same B decode rows alone are timed first, so mixed - decode is what the chunk adds to a window.
    for (const auto& [B, P] : mixed) {
      std::vector<SlotId> slots;
      std::vector<TokenId> lasts;
      prefill_batch(B, &slots, &lasts);
      const SlotId ps = be.open_slot();
      be.set_sampling(ps, greedy);
      const int steps = mixed_steps;
      int pos = prompt;
      auto step = [&](bool with_prompt) {
        Window w = decode_window(slots, lasts, pos);
        if (with_prompt) {
          be.reset_slot(ps);
          const Window pw = prompt_window(ps, P, c.vocab_size);
          w.rows.insert(w.rows.end(), pw.rows.begin(), pw.rows.end());
        }
        const auto res = be.run_window(w);
        for (int b = 0; b < B; ++b) lasts[size_t(b)] = res[size_t(b)].pick;
        ++pos;
      };
      double ms[2];
      for (int with_prompt = 0; with_prompt < 2; ++with_prompt) {
        step(with_prompt);  // captures the shape's graph
        const auto t = clock_type::now();
        for (int i = 0; i < steps; ++i) {
          if (with_prompt && profile && i == steps - 2) STRATA_CUDA_CHECK(cudaProfilerStart());
          step(with_prompt);
        }
        if (with_prompt && profile) STRATA_CUDA_CHECK(cudaProfilerStop());
        ms[with_prompt] = 1e3 * seconds_since(t) / steps;
      }
      const double flops = 2.0 * params * P;
      std::printf("mixed decode_rows=%d prompt_rows=%d decode_ms=%.3f mixed_ms=%.3f prompt_added_ms=%.3f "
                  "prompt_matmul_tflop_s=%.1f\n", B, P, ms[0], ms[1], ms[1] - ms[0], flops / (ms[1] - ms[0]) / 1e9);
      be.close_slot(ps);
      for (int b = 1; b < B; ++b) be.close_slot(slots[size_t(b)]);
    }

    for (int len : prefill) {
      be.reset_slot(slot);
      be.run_window(prompt_window(slot, len, c.vocab_size));  // captures this shape's graph
      be.reset_slot(slot);
      const auto tp = clock_type::now();
      be.run_window(prompt_window(slot, len, c.vocab_size));
      const double sp = seconds_since(tp);
      const double flops = 2.0 * params * len;
      std::printf("prefill tokens=%d tok_s=%.0f ms=%.2f matmul_tflop_s=%.1f gemm_fraction=%.3f\n", len, len / sp,
                  1e3 * sp, flops / sp / 1e12, flops / sp / gemm);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return 1;
  }
  return 0;
}

}  // namespace strata
