// `strata bench`: measurements that need no HTTP server.
//   bench kernels  the CUDA kernel benchmark of cuda/bench.hpp (decode and prefill against the roofline).
//   bench spec     speculative decoding: the engine run directly with each --spec mode on classes of prompts
//                  (tools/bench/spec_prompts.json) at each batch size, reporting tokens/s, the speedup over
//                  `off`, and the drafters' acceptance; every mode's tokens must equal the `off` run's.
//                  `plain` is decoding on the kernels of a server without speculation (CUDA: the fused
//                  one-row GEMV, not the exact kernels every other mode shares), timed but not compared.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>
#include <prometheus/registry.h>

#include "config/default_model.hpp"
#include "engine/core/metrics.hpp"
#include "engine/logging/logging.hpp"
#include "engine/spec/drafter.hpp"
#include "config/option_table.hpp"
#include "server/cli/build_info.hpp"
#include "server/cli/commands.hpp"
#include "server/cli/model_runtime.hpp"
#ifdef STRATA_HAVE_CUDA
#include "cuda/bench.hpp"
#endif

namespace strata {
namespace {

// ---- bench kernels --------------------------------------------------------------------------------------

int run_bench_kernels(const std::vector<std::string>& passed) {
#ifdef STRATA_HAVE_CUDA
  // run_bench_command parses its own flags; argv[0] is the command's name.
  std::vector<std::string> args{"strata bench kernels"};
  args.insert(args.end(), passed.begin(), passed.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  return run_bench_command(static_cast<int>(args.size()), argv.data());
#else
  (void)passed;
  std::cerr << "strata bench kernels: this build has no CUDA backend (configure with -DSTRATA_CUDA=ON)\n";
  return kExitUsage;
#endif
}

// ---- bench spec -----------------------------------------------------------------------------------------

struct SpecBenchArgs {
  std::string model, draft_model, tokenizer, prompts, json_out, config_file;
  std::string device = "auto";
  std::vector<int> batches{1, 8};
  std::vector<std::string> modes;      // empty: off, ngram, and draft when --draft-model is given
  std::vector<std::string> samplings{"greedy", "seeded"};
  int spec_k = 4;
  int spec_lookup_k = 15;
  int spec_max_batch = 0;
  int spec_draft_critical = 1;
  bool spec_draft_lookup = true;
  int spec_draft_lookup_min = 1;
  int max_tokens = 128;
  int threads = 0;
  int ctx_size = 0;
  long long seed = 1234;    // seeded setting: request i of a round uses seed + i
  double temperature = 0.8;  // seeded setting
  double top_p = 0.95;       // seeded setting
  int warmup_tokens = 32;
};

struct PromptClass {
  std::string name;
  std::vector<std::string> texts;
  std::vector<std::vector<TokenId>> tokens;
};

std::vector<PromptClass> load_prompt_classes(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError("--prompts: cannot open '" + path + "'");
  nlohmann::json doc;
  try {
    in >> doc;
  } catch (const std::exception& e) {
    throw ConfigError("--prompts: '" + path + "' is not JSON: " + e.what());
  }
  auto bad = [&](const std::string& where, const std::string& what) {
    return ConfigError("--prompts: '" + path + "': " + where + " " + what);
  };
  if (!doc.is_object() || !doc.contains("classes") || !doc["classes"].is_array() || doc["classes"].empty())
    throw bad("classes", "must be a non-empty array of {\"name\", \"prompts\"}");
  std::vector<PromptClass> classes;
  for (size_t i = 0; i < doc["classes"].size(); ++i) {
    const nlohmann::json& c = doc["classes"][i];
    const std::string where = "classes[" + std::to_string(i) + "]";
    if (!c.is_object()) throw bad(where, "must be an object");
    if (!c.contains("name") || !c["name"].is_string() || c["name"].get<std::string>().empty())
      throw bad(where + ".name", "must be a non-empty string");
    PromptClass pc;
    pc.name = c["name"].get<std::string>();
    for (const PromptClass& other : classes)
      if (other.name == pc.name) throw bad(where + ".name", "'" + pc.name + "' appears twice");
    if (!c.contains("prompts") || !c["prompts"].is_array() || c["prompts"].empty())
      throw bad(where + ".prompts", "must be a non-empty array of strings");
    for (size_t j = 0; j < c["prompts"].size(); ++j) {
      const nlohmann::json& p = c["prompts"][j];
      if (!p.is_string() || p.get<std::string>().empty())
        throw bad(where + ".prompts[" + std::to_string(j) + "]", "must be a non-empty string");
      pc.texts.push_back(p.get<std::string>());
    }
    classes.push_back(std::move(pc));
  }
  return classes;
}

// The committed prompt file, found next to the build tree like the embedded model (<exe dir>/..).
std::string default_prompts_path() {
  const std::filesystem::path exe(current_executable_path());
  for (const std::filesystem::path& root : {exe.parent_path().parent_path(), exe.parent_path()}) {
    const std::filesystem::path p = root / "tools" / "bench" / "spec_prompts.json";
    if (std::filesystem::exists(p)) return p.string();
  }
  throw ConfigError("--prompts: not given, and tools/bench/spec_prompts.json is not next to " + exe.string());
}

SpeculationMode speculation_mode(const std::string& name) {
  if (name == "ngram") return SpeculationMode::Ngram;
  if (name == "draft") return SpeculationMode::Draft;
  return SpeculationMode::Off;
}

// The drafters' counters, read from the engine's Prometheus registry; a row reports the difference over its
// timed rounds.
struct SpecCounters {
  double windows = 0, drafted = 0, accepted = 0;
  double ahead = 0;                       // verify windows whose drafts were made ahead
  double draft_s = 0;                     // the engine thread's time in drafters
  double draft_ahead_s = 0;               // of which before windows whose every proposal was made ahead
  double steps = 0, step_s = 0;           // backend windows of the target and their time
  std::vector<double> accepted_at;  // [j]: drafts accepted at position j of their window (0 = first)

  SpecCounters minus(const SpecCounters& before) const {
    SpecCounters d{windows - before.windows, drafted - before.drafted, accepted - before.accepted,
                   ahead - before.ahead,      draft_s - before.draft_s, draft_ahead_s - before.draft_ahead_s,
                   steps - before.steps,      step_s - before.step_s,   accepted_at};
    for (size_t j = 0; j < d.accepted_at.size() && j < before.accepted_at.size(); ++j)
      d.accepted_at[j] -= before.accepted_at[j];
    return d;
  }
};

SpecCounters read_counters(prometheus::Registry& registry) {
  SpecCounters c;
  for (const prometheus::MetricFamily& f : registry.Collect()) {
    double sum = 0;
    for (const prometheus::ClientMetric& m : f.metric) sum += m.counter.value;
    if (f.name == "strata_spec_drafts_total") c.windows = sum;
    if (f.name == "strata_spec_draft_tokens_total") c.drafted = sum;
    if (f.name == "strata_spec_accepted_tokens_total") c.accepted = sum;
    if (f.name == "strata_spec_draft_seconds_total") {
      c.draft_s = sum;
      for (const prometheus::ClientMetric& m : f.metric)
        for (const prometheus::ClientMetric::Label& l : m.label)
          if (l.name == "round" && l.value == "ahead") c.draft_ahead_s += m.counter.value;
    }
    if (f.name == "strata_spec_drafts_ahead_total") c.ahead = sum;
    if (f.name == "strata_window_duration_seconds")
      for (const prometheus::ClientMetric& m : f.metric) {
        c.steps += double(m.histogram.sample_count);
        c.step_s += m.histogram.sample_sum;
      }
    if (f.name != "strata_spec_accepted_per_position_total") continue;
    for (const prometheus::ClientMetric& m : f.metric)
      for (const prometheus::ClientMetric::Label& l : m.label) {
        if (l.name != "position") continue;
        const size_t j = std::stoul(l.value);
        if (c.accepted_at.size() <= j) c.accepted_at.resize(j + 1, 0.0);
        c.accepted_at[j] = m.counter.value;
      }
  }
  return c;
}

struct RoundResult {
  std::vector<std::vector<TokenId>> tokens;  // per request, in submission order
  long generated = 0;
  double wall_s = 0;  // first arrival to last finish, as the engine timed them
};

// Submits one request per prompt at once and waits for all of them.
RoundResult run_round(Engine& engine, const std::vector<const std::vector<TokenId>*>& prompts, int max_tokens,
                      const std::string& sampling, const SpecBenchArgs& args, const std::string& id_prefix) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::shared_ptr<RequestChannel>> channels;
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto req = std::make_shared<GenerationRequest>();
    req->id = id_prefix + "-" + std::to_string(i);
    req->prompt = *prompts[i];
    req->max_tokens = max_tokens;
    req->ignore_eos = true;  // every mode generates exactly max_tokens: equal work, comparable output
    req->arrival = t0;
    if (sampling == "seeded") {
      req->sampling.temperature = static_cast<float>(args.temperature);
      req->sampling.top_p = static_cast<float>(args.top_p);
      req->sampling.seed = static_cast<uint64_t>(args.seed) + i;
    } else {
      req->sampling.temperature = 0.0f;
    }
    auto channel = std::make_shared<RequestChannel>();
    const SubmitResult r = engine.submit(req, channel);
    if (r != SubmitResult::Accepted) throw Error("the engine refused request " + req->id);
    channels.push_back(std::move(channel));
  }
  RoundResult out;
  out.tokens.resize(prompts.size());
  for (size_t i = 0; i < channels.size(); ++i) {
    for (;;) {
      std::optional<Event> ev = channels[i]->pop(std::chrono::milliseconds(1000));
      if (!ev) continue;  // the engine guarantees a FinishEvent; its watchdog bounds the wait
      if (ev->token) {
        out.tokens[i].push_back(ev->token->token);
        continue;
      }
      if (!ev->finish) continue;
      const FinishEvent& f = *ev->finish;
      if (f.reason == FinishReason::Error)
        throw Error("request " + id_prefix + "-" + std::to_string(i) + " failed: " + f.error_message + " (" +
                    f.error_code + ")");
      out.generated += f.completion_tokens;
      out.wall_s = std::max(out.wall_s, f.total_seconds);
      break;
    }
  }
  return out;
}

// Rounds of `batch` concurrent requests, request i of round r on prompt (r * batch + i) mod n, until every
// prompt of the class has run at least once.
std::vector<std::vector<const std::vector<TokenId>*>> rounds_of(const PromptClass& pc, int batch) {
  const size_t n = pc.tokens.size(), b = static_cast<size_t>(batch);
  std::vector<std::vector<const std::vector<TokenId>*>> rounds((n + b - 1) / b);
  for (size_t r = 0; r < rounds.size(); ++r)
    for (size_t i = 0; i < b; ++i) rounds[r].push_back(&pc.tokens[(r * b + i) % n]);
  return rounds;
}

struct RowKey {
  std::string sampling, cls;
  int batch;
  bool operator<(const RowKey& o) const {
    return std::tie(sampling, cls, batch) < std::tie(o.sampling, o.cls, o.batch);
  }
};

struct BenchRow {
  std::string mode;
  long tokens = 0;
  int requests = 0;
  double wall_s = 0;
  SpecCounters spec;
  std::vector<std::vector<TokenId>> outputs;  // every request of every round, in order
  int mismatched = -1;  // requests whose tokens differ from `off`; -1 for off itself, -2 for plain (not compared)
};

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// `given(flag)`: whether the flag was on the command line (a flag left out keeps the --config file's value).
int run_bench_spec(const SpecBenchArgs& a, const std::function<bool(const std::string&)>& given) {
  SpecBenchArgs args = a;
  // Backend and engine options beyond this command's flags (e.g. gpu-memory-fraction, prefill-chunk) come
  // from a serve-style YAML file; the flags given here override it.
  Config config;
  SourceMap sources;
  if (!args.config_file.empty()) apply_yaml_file(config, sources, args.config_file, kScopeModel);
  auto flag = [&](const std::string& name) {
    if (!given("--" + name)) return false;
    sources[name] = "flag --" + name;
    return true;
  };
  config.model.model_dir = args.model;
  sources["model"] = "flag --model";
  if (flag("tokenizer")) config.model.tokenizer = args.tokenizer;
  if (flag("device"))
    config.backend.device = args.device == "cuda" ? Device::Cuda : args.device == "cpu" ? Device::Cpu : Device::Auto;
  if (flag("threads")) config.backend.threads = args.threads;
  if (flag("ctx-size")) config.backend.ctx_size = args.ctx_size;
  if (flag("spec-k")) config.spec.k = args.spec_k;
  if (flag("spec-lookup-k")) config.spec.lookup_k = args.spec_lookup_k;
  if (flag("spec-max-batch")) config.spec.max_batch = args.spec_max_batch;
  if (flag("spec-draft-critical")) config.spec.draft_critical = args.spec_draft_critical;
  if (flag("spec-draft-lookup")) config.spec.draft_lookup = args.spec_draft_lookup;
  if (flag("spec-draft-lookup-min")) config.spec.draft_lookup_min = args.spec_draft_lookup_min;
  if (flag("draft-model")) config.spec.draft_model = args.draft_model;
  args.draft_model = config.spec.draft_model;
  args.spec_k = config.spec.k;
  args.spec_lookup_k = config.spec.lookup_k;
  args.spec_max_batch = config.spec.max_batch;
  args.spec_draft_critical = config.spec.draft_critical;
  args.spec_draft_lookup = config.spec.draft_lookup;
  args.spec_draft_lookup_min = config.spec.draft_lookup_min;

  if (args.modes.empty()) {
    args.modes = {"off", "ngram"};
    if (!args.draft_model.empty()) args.modes.push_back("draft");
  }
  // `off` is the reference every other mode is compared with: always run, always first.
  args.modes.erase(std::remove(args.modes.begin(), args.modes.end(), "off"), args.modes.end());
  args.modes.insert(args.modes.begin(), "off");
  std::vector<std::string> modes;
  for (const std::string& m : args.modes)
    if (std::find(modes.begin(), modes.end(), m) == modes.end()) modes.push_back(m);
  const bool want_draft = std::find(modes.begin(), modes.end(), "draft") != modes.end();
  if (want_draft && args.draft_model.empty()) throw ConfigError("--spec draft needs --draft-model DIR");
  std::vector<int> batches = args.batches;
  std::sort(batches.begin(), batches.end());
  batches.erase(std::unique(batches.begin(), batches.end()), batches.end());

  std::vector<PromptClass> classes =
      load_prompt_classes(args.prompts.empty() ? default_prompts_path() : args.prompts);

  config.backend.max_slots = batches.back();  // the largest batch runs all at once
  ModelRuntime rt = load_model_runtime(config, sources);

  for (PromptClass& pc : classes)
    for (size_t j = 0; j < pc.texts.size(); ++j) {
      try {
        pc.tokens.push_back(rt.tokenizer->encode(pc.texts[j], true));
      } catch (const std::exception& e) {
        throw Error("--prompts: class '" + pc.name + "' prompt " + std::to_string(j) + " cannot be tokenized: " +
                    e.what());
      }
      const int need = static_cast<int>(pc.tokens.back().size()) + args.max_tokens;
      if (need > rt.ctx_size)
        throw ConfigError("--max-tokens: class '" + pc.name + "' prompt " + std::to_string(j) + " has " +
                          std::to_string(pc.tokens.back().size()) + " tokens, and with " +
                          std::to_string(args.max_tokens) + " more it exceeds the context of " +
                          std::to_string(rt.ctx_size) + " (--ctx-size)");
    }

  std::function<std::unique_ptr<Drafter>()> drafter_factory;
  if (want_draft) {
    Config draft_config = config;
    draft_config.spec.mode = SpecMode::Draft;
    attach_draft_model(draft_config, rt, sources);
    drafter_factory = draft_config.engine.speculation.drafter_factory;
  }

  std::map<RowKey, std::vector<BenchRow>> rows;  // per key, one row per mode in `modes` order
  for (const std::string& mode : modes) {
    EngineOptions eo = config.engine;
    eo.speculation.mode = speculation_mode(mode);
    eo.speculation.max_k = args.spec_k;
    eo.speculation.lookup_k = args.spec_lookup_k;
    eo.speculation.max_batch = args.spec_max_batch;
    eo.speculation.drafter_factory = mode == "draft" ? drafter_factory : nullptr;
    auto registry = std::make_shared<prometheus::Registry>();
    eo.metrics = std::make_shared<Metrics>(registry, strata_version(), built_with_cuda() ? "yes" : "no",
                                           device_name(rt.device));
    // Every mode but plain on the kernels speculation needs, so that their tokens compare bit for bit.
    Engine engine(make_backend_factory(rt, config, mode != "plain"), *rt.tokenizer,
                  rt.model->generation.eos_token_ids, eo);
    const EngineStats st = engine.stats();
    if (st.slots_total > 0 && st.slots_total < batches.back())
      spdlog::warn("the backend has {} slots: batches above that queue", st.slots_total);

    for (int batch : batches) {
      // Warm-up (untimed): every round of every class twice with a few tokens, so graph capture, allocation
      // and the prefix cache (prompts prefilled before) are in the same state for every mode before timing.
      // Twice, because the first pass prefills whole prompts while later ones attach the cached blocks and
      // prefill only each prompt's tail: new window shapes, whose first run (a graph capture, and on the
      // cuBLAS path the GEMMs' timing) took ~3 ms and was counted against plain decoding when only the first
      // pass ran.
      for (int pass = 0; pass < 2; ++pass)
        for (const PromptClass& pc : classes)
          for (const auto& prompts : rounds_of(pc, batch))
            run_round(engine, prompts, std::min(args.warmup_tokens, args.max_tokens), "greedy", args, "warmup");
      for (const std::string& sampling : args.samplings)
        for (const PromptClass& pc : classes) {
          BenchRow row;
          row.mode = mode;
          const SpecCounters before = read_counters(*registry);
          const auto rounds = rounds_of(pc, batch);
          for (size_t r = 0; r < rounds.size(); ++r) {
            const auto& prompts = rounds[r];
            const std::string id = mode + "-" + sampling + "-" + pc.name + "-b" + std::to_string(batch) + "-r" +
                                   std::to_string(r);
            RoundResult rr = run_round(engine, prompts, args.max_tokens, sampling, args, id);
            row.tokens += rr.generated;
            row.wall_s += rr.wall_s;
            row.requests += batch;
            for (auto& t : rr.tokens) row.outputs.push_back(std::move(t));
          }
          const SpecCounters after = read_counters(*registry);
          row.spec = after.minus(before);
          std::vector<BenchRow>& same = rows[{sampling, pc.name, batch}];
          if (mode == "plain") {
            row.mismatched = -2;
          } else if (!same.empty()) {  // same[0] is `off`
            row.mismatched = 0;
            for (size_t i = 0; i < row.outputs.size(); ++i) {
              if (row.outputs[i] == same[0].outputs[i]) continue;
              ++row.mismatched;
              size_t at = 0;
              while (at < row.outputs[i].size() && at < same[0].outputs[i].size() &&
                     row.outputs[i][at] == same[0].outputs[i][at])
                ++at;
              std::cout << "MISMATCH mode=" << mode << " sampling=" << sampling << " class=" << pc.name
                        << " batch=" << batch << " request=" << i << ": first difference at token " << at << "\n";
            }
          }
          spdlog::info("bench spec: {} {} {} batch {}: {} tokens in {:.3f}s", mode, sampling, pc.name, batch,
                       row.tokens, row.wall_s);
          same.push_back(std::move(row));
        }
    }
  }

  // Report: one line per (sampling, class, batch, mode), and the same rows as JSON.
  nlohmann::json jrows = nlohmann::json::array();
  int mismatches = 0;
  std::cout << "sampling  class         batch  mode    tokens   wall_s   tok/s     speedup  vs_plain  mean_acc  accept  "
               "ahead   win_ms  draft_ms  match\n";
  for (const auto& [key, list] : rows) {
    const double off_tps = list[0].wall_s > 0 ? list[0].tokens / list[0].wall_s : 0.0;
    double plain_tps = 0.0;
    for (const BenchRow& r : list)
      if (r.mismatched == -2 && r.wall_s > 0) plain_tps = r.tokens / r.wall_s;
    for (const BenchRow& r : list) {
      const double tps = r.wall_s > 0 ? r.tokens / r.wall_s : 0.0;
      const double speedup = off_tps > 0 ? tps / off_tps : 0.0;
      nlohmann::json j = {{"sampling", key.sampling}, {"class", key.cls},     {"batch", key.batch},
                          {"mode", r.mode},           {"requests", r.requests}, {"tokens", r.tokens},
                          {"wall_s", r.wall_s},       {"tokens_per_s", tps},  {"speedup", speedup},
                          {"verify_windows", static_cast<long>(r.spec.windows)},
                          {"drafted", static_cast<long>(r.spec.drafted)},
                          {"accepted", static_cast<long>(r.spec.accepted)},
                          {"target_windows", static_cast<long>(r.spec.steps)},
                          {"target_window_seconds", r.spec.step_s},
                          {"draft_seconds", r.spec.draft_s},
                          {"draft_seconds_ahead", r.spec.draft_ahead_s},
                          {"drafts_ahead", static_cast<long>(r.spec.ahead)}};
      // Per target window: its own time and the drafting before it (ms).
      const double win_ms = r.spec.steps > 0 ? 1e3 * r.spec.step_s / r.spec.steps : 0.0;
      const double draft_ms = r.spec.steps > 0 ? 1e3 * r.spec.draft_s / r.spec.steps : 0.0;
      std::string mean_acc = "-", accept = "-", vs_plain = "-", ahead = "-";
      std::string match = r.mismatched == -2 ? "n/a" : r.mismatched < 0 ? "ref" : r.mismatched == 0 ? "yes" : "NO";
      if (plain_tps > 0) {
        j["speedup_vs_plain"] = tps / plain_tps;
        vs_plain = fixed(tps / plain_tps, 3);
      } else {
        j["speedup_vs_plain"] = nullptr;
      }
      if (r.spec.windows > 0) {
        j["mean_accepted"] = r.spec.accepted / r.spec.windows;
        mean_acc = fixed(r.spec.accepted / r.spec.windows, 2);
        ahead = fixed(r.spec.ahead / r.spec.windows, 3);  // of the verify windows, those drafted ahead
      } else {
        j["mean_accepted"] = nullptr;
      }
      if (r.spec.drafted > 0) {
        j["acceptance_rate"] = r.spec.accepted / r.spec.drafted;
        accept = fixed(r.spec.accepted / r.spec.drafted, 3);
      } else {
        j["acceptance_rate"] = nullptr;
      }
      // Of the verify windows, the fraction that accepted a draft at each position (a window that accepts
      // at position j accepted every position before it).
      nlohmann::json at = nlohmann::json::array();
      for (double n : r.spec.accepted_at) at.push_back(r.spec.windows > 0 ? n / r.spec.windows : 0.0);
      j["accepted_at_position"] = at;
      j["mismatched_requests"] = std::max(r.mismatched, 0);
      j["matches_off"] = r.mismatched == -2 ? nlohmann::json(nullptr) : nlohmann::json(r.mismatched <= 0);
      if (r.mismatched > 0) mismatches += r.mismatched;
      jrows.push_back(std::move(j));
      char line[256];
      std::snprintf(line, sizeof line,
                    "%-9s %-13s %5d  %-6s %7ld %8.3f %8.1f %8.3f  %8s  %8s  %6s  %6s  %6.3f  %8.3f  %s\n",
                    key.sampling.c_str(), key.cls.c_str(), key.batch, r.mode.c_str(), r.tokens, r.wall_s, tps, speedup,
                    vs_plain.c_str(), mean_acc.c_str(), accept.c_str(), ahead.c_str(), win_ms, draft_ms, match.c_str());
      std::cout << line;
    }
  }
  std::cout << std::flush;

  if (!args.json_out.empty()) {
    nlohmann::json doc = {{"model", rt.model_dir},
                          {"draft_model", args.draft_model.empty() ? nlohmann::json(nullptr) : nlohmann::json(args.draft_model)},
                          {"device", device_name(rt.device)},
                          {"spec_k", args.spec_k},
                          {"spec_lookup_k", args.spec_lookup_k},
                          {"spec_max_batch", args.spec_max_batch},
                          {"spec_draft_critical", args.spec_draft_critical},
                          {"spec_draft_lookup", args.spec_draft_lookup},
                          {"spec_draft_lookup_min", args.spec_draft_lookup_min},
                          {"max_tokens", args.max_tokens},
                          {"batches", batches},
                          {"modes", modes},
                          {"samplings", args.samplings},
                          {"seeded", {{"seed", args.seed}, {"temperature", args.temperature}, {"top_p", args.top_p}}},
                          {"mismatches", mismatches},
                          {"rows", jrows}};
    std::ofstream out(args.json_out);
    if (!out) throw Error("--json: cannot write '" + args.json_out + "'");
    out << doc.dump(2) << "\n";
  }
  if (mismatches > 0) {
    std::cerr << "strata bench spec: MISMATCH: " << mismatches
              << " request(s) with speculation differ from the same request without it\n";
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace

Command add_bench_command(CLI::App& root) {
  CLI::App* app = root.add_subcommand("bench", "Benchmarks: CUDA kernels, speculative decoding");
  app->require_subcommand(1);

  CLI::App* kernels = app->add_subcommand(
      "kernels",
      "CUDA decode and prefill tokens/s against the roofline; flags go to the kernel benchmark: --model DIR "
      "(required) --prompt P --tokens N --prefill L1,L2 --device INDEX");
  kernels->allow_extras();  // every flag is passed through to run_bench_command, which parses and checks them
  kernels->positionals_at_end(false);

  CLI::App* spec = app->add_subcommand("spec", "Speculative decoding: tokens/s and acceptance for each --spec mode");
  auto args = std::make_shared<SpecBenchArgs>();
  spec->add_option("--model", args->model, "Target model directory")->required();
  spec->add_option("--draft-model", args->draft_model, "Draft model directory (for --spec draft)");
  spec->add_option("--tokenizer", args->tokenizer, "tokenizer.json or its directory (default: the model's)");
  spec->add_option("--device", args->device, "Device of target and draft")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))->capture_default_str();
  spec->add_option("--batch", args->batches, "Concurrent requests per round (comma-separated)")
      ->delimiter(',')->check(CLI::Range(1, 4096))->capture_default_str();
  spec->add_option("--spec", args->modes, "Modes to compare, comma-separated; off always runs (default: off,ngram "
                                          "and draft when --draft-model is given); plain: no speculation on the "
                                          "kernels --spec off serves with, timed, not compared")
      ->delimiter(',')->check(CLI::IsMember({"off", "ngram", "draft", "plain"}));
  spec->add_option("--sampling", args->samplings, "greedy and/or seeded (--seed, --temperature, --top-p)")
      ->delimiter(',')->check(CLI::IsMember({"greedy", "seeded"}))->capture_default_str();
  spec->add_option("--spec-k", args->spec_k, "Drafted tokens per verify window at most")
      ->check(CLI::Range(1, 64))->capture_default_str();
  spec->add_option("--spec-lookup-k", args->spec_lookup_k,
                   "Drafted tokens per verify window when prompt lookup copies them (within the exact rows; below --spec-k: --spec-k)")
      ->check(CLI::Range(0, 64))->capture_default_str();
  spec->add_option("--spec-max-batch", args->spec_max_batch,
                   "Draft only while at most this many requests decode; 0 = always")
      ->check(CLI::Range(0, 1 << 20))->capture_default_str();
  spec->add_option("--spec-draft-critical", args->spec_draft_critical,
                   "Drafting ahead: drafts of a round that waits for them, at most; 0 = up to --spec-k")
      ->check(CLI::Range(0, 64))->capture_default_str();
  spec->add_option("--spec-draft-lookup", args->spec_draft_lookup,
                   "Prompt lookup beside the draft model: first in a round that waits for drafts (drafting ahead), else its rival")
      ->capture_default_str();
  spec->add_option("--spec-draft-lookup-min", args->spec_draft_lookup_min,
                   "Shortest match (tokens) for lookup's own proposals beside the draft model")
      ->check(CLI::Range(1, 4))->capture_default_str();
  spec->add_option("--max-tokens", args->max_tokens, "Tokens generated per request (EOS ignored)")
      ->check(CLI::Range(1, 1 << 20))->capture_default_str();
  spec->add_option("--warmup-tokens", args->warmup_tokens, "Tokens per request of the untimed warm-up rounds")
      ->check(CLI::Range(1, 1 << 20))->capture_default_str();
  spec->add_option("--prompts", args->prompts, "Prompt classes JSON (default: tools/bench/spec_prompts.json)");
  spec->add_option("--json", args->json_out, "Write the rows as JSON to this file");
  spec->add_option("--config", args->config_file,
                   "YAML file of model/backend options as for `strata serve` (e.g. gpu-memory-fraction, "
                   "prefill-chunk); the flags here override it");
  spec->add_option("--threads", args->threads, "CPU backend threads; 0 = all")
      ->check(CLI::Range(0, 1024))->capture_default_str();
  spec->add_option("--ctx-size", args->ctx_size, "Positions per slot; 0 = the model's (capped)")
      ->check(CLI::Range(0, 1 << 24))->capture_default_str();
  spec->add_option("--seed", args->seed, "Seed of the seeded setting (request i of a round: seed + i)")
      ->check(CLI::Range(0LL, static_cast<long long>(INT64_MAX)))->capture_default_str();
  spec->add_option("--temperature", args->temperature, "Temperature of the seeded setting")
      ->check(CLI::Range(0.01, 100.0))->capture_default_str();
  spec->add_option("--top-p", args->top_p, "top_p of the seeded setting")
      ->check(CLI::Range(0.0, 1.0))->capture_default_str();

  return {app, [kernels, spec, args]() -> int {
            if (kernels->parsed()) return run_bench_kernels(kernels->remaining());
            if (spec->parsed())
              return run_bench_spec(*args, [spec](const std::string& f) { return spec->count(f) > 0; });
            return kExitUsage;
          }};
}

}  // namespace strata
