// `strata serve`: load the model, start the engine and the HTTP server, serve until SIGTERM/SIGINT, then
// drain (readiness false, new requests 503, running ones finish within --shutdown-timeout) and exit 0.
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <prometheus/registry.h>

#include "config/config_cli.hpp"
#include "config/default_model.hpp"
#include "engine/core/metrics.hpp"
#include "engine/logging/logging.hpp"
#include "engine/template/chat_template.hpp"
#include "server/cli/build_info.hpp"
#include "server/cli/commands.hpp"
#include "server/cli/model_runtime.hpp"
#include "server/cli/shutdown_signals.hpp"
#include "server/server.hpp"

namespace strata {
namespace {

std::string model_id_for(const Config& config, const std::string& model_dir) {
  if (!config.server.served_model_names.empty()) return config.server.served_model_names.front();
  std::filesystem::path p(model_dir);
  std::string name = p.filename().string();
  if (name.empty() || name == ".") name = p.parent_path().filename().string();
  return name.empty() ? std::string("strata") : name;
}

// An explicit --chat-template must work; a broken template shipped with the checkpoint only disables chat.
std::unique_ptr<ChatTemplate> load_chat_template(const Config& config, const Model& model) {
  const bool from_flag = !config.server.chat_template_override.empty();
  const std::string& source = from_flag ? config.server.chat_template_override : model.tokenizer_meta.chat_template;
  if (source.empty()) {
    spdlog::warn("the model has no chat template: /v1/chat/completions will answer 400 (use --chat-template FILE)");
    return nullptr;
  }
  try {
    return std::make_unique<ChatTemplate>(source);
  } catch (const std::exception& e) {
    if (from_flag) throw Error("--chat-template '" + config.model.chat_template_file + "': " + e.what());
    spdlog::warn("the model's chat template does not compile ({}); chat completions are disabled", e.what());
    return nullptr;
  }
}

int run_serve(ConfigCli& cli, bool print_config) {
  Config config = cli.build();
  if (print_config) {
    // What serving would use: with no --model, the embedded model's draft turns speculation on.
    Config shown = config;
    if (shown.model.model_dir.empty())
      apply_default_draft(shown, cli.sources(), resolve_default_model_dir(current_executable_path()));
    std::cout << describe_config(shown, cli.sources(), kScopeAll);
    return kExitOk;
  }
  setup_logging(config.logging.format, config.logging.level);
  finalize_engine_options(config, cli.sources());
  // Before any thread exists, so the engine and HTTP threads inherit the blocked mask.
  block_shutdown_signals();

  spdlog::info("strata {} ({})", strata_version(), built_with_cuda() ? "CUDA" : "CPU only");
  if (!config.config_file.empty()) spdlog::info("config file {}", config.config_file);
  spdlog::debug("effective configuration:\n{}", describe_config(config, cli.sources(), kScopeAll));

  ModelRuntime rt = load_model_runtime(config, cli.sources());
  attach_draft_model(config, rt, cli.sources());
  std::unique_ptr<ChatTemplate> chat_template = load_chat_template(config, *rt.model);

  auto registry = std::make_shared<prometheus::Registry>();
  config.engine.metrics = std::make_shared<Metrics>(registry, strata_version(), built_with_cuda() ? "yes" : "no",
                                                    device_name(rt.device));

  const std::vector<TokenId> eos_ids = rt.model->generation.eos_token_ids;
  Engine engine(make_backend_factory(rt, config), *rt.tokenizer, eos_ids, config.engine);

  ServingContext ctx;
  ctx.engine = &engine;
  ctx.tokenizer = rt.tokenizer.get();
  ctx.chat_template = chat_template.get();
  ctx.tokenizer_meta = rt.model->tokenizer_meta;
  ctx.eos_ids = eos_ids;
  ctx.max_context = engine.max_context();
  ctx.model_id = model_id_for(config, rt.model_dir);
  ctx.registry = registry;
  ctx.metrics = config.engine.metrics.get();  // strata_requests_total{endpoint,status} for every answer

  // httplib serves a connection on one pool thread for as long as it stays open, so a pool smaller than the
  // number of streaming clients leaves the rest waiting in the accept queue, invisible to the engine (the
  // H200 sweep saw 64 and 128 streams served 32 at a time). Room for every running and queued request:
  if (config.server.http_threads == 0)
    config.server.http_threads =
        int(std::min<long>(4096, long(config.backend.max_slots) + long(config.engine.max_queued) + 16));
  spdlog::info("http: {} worker threads", config.server.http_threads);
  HttpServer server(config.server, ctx);
  server.start();
  // e2e tests and scripts parse this line for the real port (--port 0 picks one).
  spdlog::info("listening on http://{}:{}", config.server.host, server.port());

  const int sig = wait_for_shutdown_signal();
  exit_on_second_signal();
  spdlog::info("{} received: draining (up to {} s)", sig == SIGINT ? "SIGINT" : "SIGTERM",
               config.server.shutdown_timeout_s);
  server.drain_and_stop();
  spdlog::info("stopped");
  return kExitOk;
}

}  // namespace

Command add_serve_command(CLI::App& root) {
  CLI::App* app = root.add_subcommand("serve", "Serve the OpenAI-compatible HTTP API");
  auto cli = std::make_shared<ConfigCli>(*app, kScopeAll);
  auto print_config = std::make_shared<bool>(false);
  app->add_flag("--print-config", *print_config,
                "Print every option's effective value and where it came from, then exit");
  return {app, [cli, print_config] { return run_serve(*cli, *print_config); }};
}

}  // namespace strata
