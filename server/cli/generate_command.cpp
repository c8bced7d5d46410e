// `strata generate`: one raw completion of --prompt (no chat template) through the same engine the server
// uses, printed to stdout as it is produced. Logs go to stderr, so stdout holds the completion alone.
#include <iostream>
#include <random>

#include "config/config_cli.hpp"
#include "engine/logging/logging.hpp"
#include "server/cli/commands.hpp"
#include "server/cli/model_runtime.hpp"

namespace strata {
namespace {

struct GenerateArgs {
  std::string prompt;
  int max_tokens = 64;
  // Greedy unless asked: the same command prints the same text, which is what a smoke test wants.
  double temperature = 0.0;
  int top_k = 0;
  double top_p = 1.0;
  double min_p = 0.0;
  long long seed = -1;  // -1: a random seed, reported on stderr so a run can be repeated
  std::vector<std::string> stop;
  bool ignore_eos = false;
};

int run_generate(ConfigCli& cli, const GenerateArgs& args) {
  Config config = cli.build();
  setup_logging(config.logging.format, config.logging.level);
  finalize_engine_options(config, cli.sources());
  ModelRuntime rt = load_model_runtime(config, cli.sources());
  attach_draft_model(config, rt, cli.sources());
  Engine engine(make_backend_factory(rt, config), *rt.tokenizer, rt.model->generation.eos_token_ids,
                config.engine);

  auto req = std::make_shared<GenerationRequest>();
  req->id = "generate-1";
  try {
    req->prompt = rt.tokenizer->encode(args.prompt, true);
  } catch (const std::exception& e) {
    throw Error(std::string("--prompt cannot be tokenized: ") + e.what());
  }
  req->max_tokens = args.max_tokens;
  req->ignore_eos = args.ignore_eos;
  req->stop = args.stop;
  SamplingParams& sp = req->sampling;
  sp.temperature = static_cast<float>(args.temperature);
  sp.top_k = args.top_k;
  sp.top_p = static_cast<float>(args.top_p);
  sp.min_p = static_cast<float>(args.min_p);
  if (args.seed >= 0) {
    sp.seed = static_cast<uint64_t>(args.seed);
  } else {
    std::random_device rd;
    sp.seed = (static_cast<uint64_t>(rd()) << 32) | rd();
    if (!sp.greedy()) spdlog::info("seed {}", sp.seed);
  }

  auto channel = std::make_shared<RequestChannel>();
  const SubmitResult submitted = engine.submit(req, channel);
  if (submitted != SubmitResult::Accepted) throw Error("the engine refused the request (not ready)");

  for (;;) {
    std::optional<Event> ev = channel->pop(std::chrono::milliseconds(1000));
    if (!ev) continue;  // the engine guarantees a FinishEvent; its watchdog bounds how long that takes
    if (ev->token) {
      std::cout << ev->token->text << std::flush;
      continue;
    }
    if (ev->finish) {
      const FinishEvent& f = *ev->finish;
      std::cout << f.text << "\n" << std::flush;
      if (f.reason == FinishReason::Error) {
        log_request(spdlog::level::err, req->id, "generation failed: {} ({})", f.error_message, f.error_code);
        return kExitFailure;
      }
      log_request(spdlog::level::info, req->id, "finish_reason={} prompt_tokens={} completion_tokens={} {:.3f}s",
                  finish_reason_name(f.reason), f.prompt_tokens, f.completion_tokens, f.total_seconds);
      return kExitOk;
    }
  }
}

}  // namespace

Command add_generate_command(CLI::App& root) {
  CLI::App* app = root.add_subcommand("generate", "Print one raw completion of a prompt (no server, no chat template)");
  auto cli = std::make_shared<ConfigCli>(*app, kScopeModel | kScopeLogging);
  auto args = std::make_shared<GenerateArgs>();
  const std::string g = "Generation";
  app->add_option("--prompt", args->prompt, "Prompt text, completed as is")->required()->group(g);
  app->add_option("--max-tokens", args->max_tokens, "Most tokens to generate")
      ->check(CLI::Range(1, 1 << 24))->capture_default_str()->group(g);
  app->add_option("--temperature", args->temperature, "Sampling temperature; 0 = greedy")
      ->check(CLI::Range(0.0, 100.0))->capture_default_str()->group(g);
  app->add_option("--top-k", args->top_k, "Keep the k most likely tokens; 0 = off")
      ->check(CLI::Range(0, 1 << 24))->capture_default_str()->group(g);
  app->add_option("--top-p", args->top_p, "Nucleus sampling mass; 1 = off")
      ->check(CLI::Range(0.0, 1.0))->capture_default_str()->group(g);
  app->add_option("--min-p", args->min_p, "Drop tokens below min_p x the top probability; 0 = off")
      ->check(CLI::Range(0.0, 1.0))->capture_default_str()->group(g);
  app->add_option("--seed", args->seed, "Sampling seed; -1 = random")
      ->check(CLI::Range(-1LL, static_cast<long long>(INT64_MAX)))->capture_default_str()->group(g);
  app->add_option("--stop", args->stop, "Stop string (repeatable); never printed")->group(g);
  app->add_flag("--ignore-eos", args->ignore_eos, "Keep generating past end-of-sequence tokens")->group(g);
  return {app, [cli, args] { return run_generate(*cli, *args); }};
}

}  // namespace strata
