// The pieces `serve` and `generate` both stand up from a Config: the loaded model, its tokenizer, the
// device choice, and the factory the engine calls to build (and, after a watchdog recovery, rebuild) the
// backend. Kept in one place so both commands size the backend the same way.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "config/config.hpp"
#include "config/config_sources.hpp"
#include "engine/core/engine.hpp"
#include "engine/model/weights.hpp"
#include "engine/tokenizer/tokenizer.hpp"

namespace strata {

struct ModelRuntime {
  std::shared_ptr<const Model> model;  // shared with the backend factory, which outlives nothing but it
  std::unique_ptr<Tokenizer> tokenizer;
  Device device = Device::Cpu;         // resolved: never Auto
  int ctx_size = 0;                    // resolved positions per slot
  std::string model_dir;
};

// Auto -> cuda when this build has CUDA and a GPU is visible, else cpu. Cuda in a CPU-only build is a
// ConfigError naming --device; cuda with no visible GPU is a runtime Error (exit 1).
Device resolve_device(Device requested, const SourceMap& sources);

// 0 -> the model's max_position_embeddings clipped to kDefaultCtxCap (kDefaultCtxCap when the model does
// not say); an explicit value is kept.
int resolve_ctx_size(int requested, const ModelConfig& model);

// Loads model and tokenizer (model dir defaulting to the embedded model). Throws strata::Error with a
// message naming what failed to load, or ConfigError for a bad --device.
ModelRuntime load_model_runtime(const Config& config, const SourceMap& sources);

// Builds the backend for `runtime` on its resolved device.
// exact_verify: the CUDA kernels that speculative verification needs (windows of up to 16 rows give a row the
// bits of a single-row window). By default, whether config.engine's speculation is on; `strata bench spec`
// asks for them in every mode so that `off` is comparable bit for bit.
Engine::BackendFactory make_backend_factory(const ModelRuntime& runtime, const Config& config,
                                            std::optional<bool> exact_verify = std::nullopt);

// The engine-facing checks config/ cannot make because it does not link the engine: --debug-faults parsed
// into EngineOptions::faults (the grammar lives in engine/core/faults.hpp), and --spec/--spec-k copied into
// EngineOptions::speculation. Throws ConfigError naming the option and its source.
void finalize_engine_options(Config& config, const SourceMap& sources);

// With --spec draft: loads --draft-model, checks it shares the target's vocabulary (ConfigError otherwise),
// builds its backend and sets EngineOptions::speculation.drafter_factory. Nothing otherwise.
void attach_draft_model(Config& config, const ModelRuntime& runtime, const SourceMap& sources);

}  // namespace strata
