// The one typed configuration of a Strata process. Built by ConfigCli::build() from, in increasing precedence,
// defaults <- YAML file (--config) <- environment (STRATA_*) <- command-line flags, and validated in one
// place (config/option_table.cpp + validate_config), so every component reads typed fields and never the environment.
#pragma once
#include <string>
#include <vector>

#include "engine/core/engine.hpp"
#include "engine/logging/logging.hpp"
#include "server/server_options.hpp"

namespace strata {

enum class Device { Auto, Cpu, Cuda };
enum class SpecMode { Off, Ngram, Draft };
enum class KvDType { Auto, F32, BF16 };  // auto: bf16 on CUDA, f32 on the CPU backend

const char* device_name(Device d);        // "auto", "cpu", "cuda"
const char* spec_mode_name(SpecMode m);   // "off", "ngram", "draft"

// Where the weights, tokenizer and template come from.
struct ModelOptions {
  std::string model_dir;           // empty until resolved: resolve_default_model_dir() fills it
  std::string tokenizer;           // empty = model_dir
  std::string chat_template_file;  // empty = tokenizer_config.json's chat_template
};

// How the backend is sized. Zero means "derive it": the resolution happens once the model is known.
struct BackendOptions {
  Device device = Device::Auto;
  int threads = 0;                  // 0 = every hardware thread
  int max_slots = 4;                // concurrent sequences
  int ctx_size = 0;                 // positions per slot; 0 = model max clipped to kDefaultCtxCap
  double kv_cache_gb = 0.0;         // 0 = use gpu_memory_fraction (CUDA only)
  double gpu_memory_fraction = 0.9; // of the free device memory after weights (CUDA only)
  int kv_block_size = 16;           // positions per paged KV block (CPU)
  int kv_cache_blocks = 0;          // paged KV blocks (CPU); 0 = from kv_cache_gb, else max_slots full contexts
  bool batch_invariant = false;     // CUDA: every window through the fixed-order kernels (exact, slower batches)
  bool gemm_autotune = true;        // CUDA: cuBLASLt algorithms timed per GEMM shape (cuda/gemm.hpp)
  bool cuda_graph_warmup = true;    // CUDA: capture every decode window shape at startup
  KvDType kv_cache_dtype = KvDType::Auto;
};
constexpr int kDefaultCtxCap = 4096;

struct SpecOptions {
  SpecMode mode = SpecMode::Off;
  int k = 4;                 // drafted tokens per verify window
  int lookup_k = 15;         // prompt lookup's copies per verify window, within its exact rows (at least k)
  int max_batch = 0;         // draft only while at most this many requests decode; 0 = always
  int draft_critical = 1;    // drafting ahead: drafts of a round that waits for them, at most; 0 = up to k
  bool draft_lookup = true;  // prompt lookup beside the draft model (first in waiting rounds, or its rival)
  int draft_lookup_min = 1;  // shortest match (tokens) for lookup's own proposals beside the draft model
  std::string draft_model;   // model directory, required for SpecMode::Draft
};

struct LoggingOptions {
  LogFormat format = LogFormat::Text;
  spdlog::level::level_enum level = spdlog::level::info;
};

// Fault injection is compiled in but inert: a spec is only accepted when enable is set too, so a stray
// environment variable cannot make a production server stall itself.
struct DebugFaultOptions {
  bool enable = false;
  std::string spec;
};

struct Config {
  std::string config_file;  // the YAML file that was read, "" if none
  ModelOptions model;
  BackendOptions backend;
  SpecOptions spec;
  LoggingOptions logging;
  DebugFaultOptions faults;
  ServerOptions server;
  EngineOptions engine;
  std::string api_key_file;  // its keys are appended to server.api_keys when the config is finalized
};

// A configuration problem: the message names the option and where its value came from. Exit code 2.
struct ConfigError : Error {
  using Error::Error;
};
constexpr int kConfigErrorExitCode = 2;

}  // namespace strata
