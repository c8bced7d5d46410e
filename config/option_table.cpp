#include "config/option_table.hpp"

#include <cctype>
#include <sstream>

#include "config/value_parse.hpp"

namespace strata {
namespace {

constexpr long long kIntMax = 2147483647;

std::string show_real(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ",") + s;
  return out;
}

// The builders below take an accessor returning a reference into a Config, so the table names each
// field once and the shown default is read from a default-constructed Config, never restated.
template <class Get>
OptionSpec integer(std::string name, std::string group, std::string help, unsigned scope, Get get,
                   long long lo, long long hi) {
  OptionSpec o;
  o.name = std::move(name), o.group = std::move(group), o.help = std::move(help), o.scope = scope;
  o.type_name = "INT";
  o.apply = [get, lo, hi](Config& c, const std::vector<std::string>& v) {
    auto& field = get(c);
    field = static_cast<std::decay_t<decltype(field)>>(parse_integer(v.at(0), lo, hi));
  };
  o.show = [get](const Config& c) { Config copy = c; return std::to_string(get(copy)); };
  return o;
}

template <class Get>
OptionSpec bytes(std::string name, std::string group, std::string help, unsigned scope, Get get,
                 long long lo, long long hi) {
  OptionSpec o = integer(std::move(name), std::move(group), std::move(help), scope, get, lo, hi);
  o.type_name = "BYTES";
  o.apply = [get, lo, hi](Config& c, const std::vector<std::string>& v) {
    auto& field = get(c);
    field = static_cast<std::decay_t<decltype(field)>>(parse_byte_size(v.at(0), lo, hi));
  };
  return o;
}

template <class Get>
OptionSpec real(std::string name, std::string group, std::string help, unsigned scope, Get get, double lo,
                double hi, bool lo_open) {
  OptionSpec o;
  o.name = std::move(name), o.group = std::move(group), o.help = std::move(help), o.scope = scope;
  o.type_name = "FLOAT";
  o.apply = [get, lo, hi, lo_open](Config& c, const std::vector<std::string>& v) {
    get(c) = parse_real(v.at(0), lo, hi, lo_open);
  };
  o.show = [get](const Config& c) { Config copy = c; return show_real(get(copy)); };
  return o;
}

template <class Get>
OptionSpec text(std::string name, std::string group, std::string help, unsigned scope, Get get,
                std::string type_name = "TEXT") {
  OptionSpec o;
  o.name = std::move(name), o.group = std::move(group), o.help = std::move(help), o.scope = scope;
  o.type_name = std::move(type_name);
  o.apply = [get](Config& c, const std::vector<std::string>& v) { get(c) = v.at(0); };
  o.show = [get](const Config& c) { Config copy = c; return get(copy); };
  return o;
}

// Like text(), but an empty value is refused: for options where "" could only be a mistake.
template <class Get>
OptionSpec nonempty_text(std::string name, std::string group, std::string help, unsigned scope, Get get,
                         std::string type_name = "TEXT") {
  OptionSpec o = text(std::move(name), std::move(group), std::move(help), scope, get, std::move(type_name));
  o.apply = [get](Config& c, const std::vector<std::string>& v) {
    if (v.at(0).empty()) throw ValueError("must not be empty");
    get(c) = v.at(0);
  };
  return o;
}

template <class Get>
OptionSpec list(std::string name, std::string group, std::string help, unsigned scope, Get get) {
  OptionSpec o;
  o.name = std::move(name), o.group = std::move(group), o.help = std::move(help), o.scope = scope;
  o.type_name = "TEXT";
  o.kind = OptionKind::List;
  // A later source replaces the whole list rather than appending to it, so a flag can override a file.
  o.apply = [get](Config& c, const std::vector<std::string>& v) {
    std::vector<std::string> items;
    for (const auto& s : v)
      for (auto& item : split_list(s)) items.push_back(std::move(item));
    get(c) = std::move(items);
  };
  o.show = [get](const Config& c) { Config copy = c; return join(get(copy)); };
  return o;
}

template <class Get>
OptionSpec flag(std::string name, std::string group, std::string help, unsigned scope, Get get) {
  OptionSpec o;
  o.name = std::move(name), o.group = std::move(group), o.help = std::move(help), o.scope = scope;
  o.type_name = "BOOL";
  o.kind = OptionKind::Flag;
  o.apply = [get](Config& c, const std::vector<std::string>& v) { get(c) = parse_boolean(v.at(0)); };
  o.show = [get](const Config& c) { Config copy = c; return std::string(get(copy) ? "true" : "false"); };
  return o;
}

template <class E, class Get>
OptionSpec choice(std::string name, std::string group, std::string help, unsigned scope, Get get,
                  std::vector<std::pair<std::string, E>> choices) {
  OptionSpec o;
  o.name = std::move(name), o.group = std::move(group), o.help = std::move(help), o.scope = scope;
  std::string words;
  for (const auto& ch : choices) words += (words.empty() ? "" : ",") + ch.first;
  o.type_name = "{" + words + "}";
  o.apply = [get, choices](Config& c, const std::vector<std::string>& v) {
    get(c) = parse_choice(v.at(0), choices);
  };
  o.show = [get, choices](const Config& c) {
    Config copy = c;
    for (const auto& ch : choices)
      if (ch.second == get(copy)) return ch.first;
    return std::string();
  };
  return o;
}

// A string field whose allowed values are fixed words (ServerOptions keeps reasoning_format as text).
template <class Get>
OptionSpec word(std::string name, std::string group, std::string help, unsigned scope, Get get,
                std::vector<std::string> words) {
  std::vector<std::pair<std::string, std::string>> choices;
  for (auto& w : words) choices.emplace_back(w, w);
  return choice<std::string>(std::move(name), std::move(group), std::move(help), scope, get,
                             std::move(choices));
}

std::vector<OptionSpec> make_table() {
  const std::string M = "Model and backend", L = "Logging", S = "HTTP server", E = "Engine supervision",
                    P = "Speculative decoding", D = "Debugging";
  std::vector<OptionSpec> t;

  // --- model and backend (serve and generate) ---
  {
    OptionSpec o = text("model", M,
                        "Hugging Face model directory (config.json, *.safetensors, tokenizer files); 'embedded' "
                        "= models/strata-tiny if present, else the fixture tests/data/models/qwen3, looked up "
                        "beside the source tree and beside the executable",
                        kScopeModel, [](Config& c) -> std::string& { return c.model.model_dir; }, "DIR");
    o.show = [](const Config& c) { return c.model.model_dir.empty() ? std::string("embedded") : c.model.model_dir; };
    t.push_back(o);
  }
  {
    OptionSpec o = text("tokenizer", M, "tokenizer.json or a directory holding it",
                        kScopeModel, [](Config& c) -> std::string& { return c.model.tokenizer; }, "PATH");
    o.show = [](const Config& c) { return c.model.tokenizer.empty() ? std::string("model dir") : c.model.tokenizer; };
    t.push_back(o);
  }
  {
    OptionSpec o = text("chat-template", M,
                        "Jinja chat template file replacing tokenizer_config.json's chat_template",
                        kScopeModel, [](Config& c) -> std::string& { return c.model.chat_template_file; },
                        "FILE");
    o.show = [](const Config& c) {
      return c.model.chat_template_file.empty() ? std::string("from tokenizer_config.json") : c.model.chat_template_file;
    };
    t.push_back(o);
  }
  t.push_back(choice<Device>("device", M,
                             "Backend device; auto = cuda when built with CUDA and a GPU is visible, else cpu",
                             kScopeModel, [](Config& c) -> Device& { return c.backend.device; },
                             {{"auto", Device::Auto}, {"cpu", Device::Cpu}, {"cuda", Device::Cuda}}));
  t.push_back(integer("threads", M, "CPU backend threads; 0 = every hardware thread", kScopeModel,
                      [](Config& c) -> int& { return c.backend.threads; }, 0, 4096));
  t.push_back(integer("max-slots", M, "Sequences decoded concurrently (slots on the backend)", kScopeModel,
                      [](Config& c) -> int& { return c.backend.max_slots; }, 1, 4096));
  t.push_back(integer("ctx-size", M,
                      "Context positions per slot; 0 = the model's max_position_embeddings, clipped to " +
                          std::to_string(kDefaultCtxCap),
                      kScopeModel, [](Config& c) -> int& { return c.backend.ctx_size; }, 0, 1 << 24));
  t.push_back(real("kv-cache-gb", M,
                   "KV cache size in GB; 0 = derive it (CUDA: from --gpu-memory-fraction; CPU: every slot's full "
                   "context, unless --kv-cache-blocks is set)",
                   kScopeModel, [](Config& c) -> double& { return c.backend.kv_cache_gb; }, 0.0, 1e6, false));
  t.push_back(real("gpu-memory-fraction", M, "Fraction of free GPU memory the KV cache may take (CUDA)",
                   kScopeModel, [](Config& c) -> double& { return c.backend.gpu_memory_fraction; }, 0.0, 1.0,
                   true));
  t.push_back(flag("batch-invariant", M,
                   "CUDA: run every window through the fixed-order kernels, so a request's tokens do not depend on "
                   "the other requests in its windows or on its prompt's chunking (batch windows get slower)",
                   kScopeModel, [](Config& c) -> bool& { return c.backend.batch_invariant; }));
  t.push_back(flag("gemm-autotune", M,
                   "CUDA: time cuBLASLt's algorithms for each GEMM shape on its first window and keep the fastest "
                   "(1-3 % on batch windows); --gemm-autotune=false keeps cuBLAS's default, the same in every "
                   "process",
                   kScopeModel, [](Config& c) -> bool& { return c.backend.gemm_autotune; }));
  t.push_back(flag("cuda-graph-warmup", M,
                   "CUDA: capture the graph of every decode window shape (and time its GEMMs) at startup, so the "
                   "first windows of each batch size under load do not pay for it (about 1 s at 8B with 128 slots); "
                   "--cuda-graph-warmup=false captures each shape on first use",
                   kScopeModel, [](Config& c) -> bool& { return c.backend.cuda_graph_warmup; }));
  t.push_back(choice<KvDType>("kv-cache-dtype", M,
                              "What the KV cache stores: bf16 (half the memory, each K/V value rounded once) or f32; "
                              "auto = bf16 on CUDA, f32 on the CPU backend",
                              kScopeModel, [](Config& c) -> KvDType& { return c.backend.kv_cache_dtype; },
                              {{"auto", KvDType::Auto}, {"f32", KvDType::F32}, {"bf16", KvDType::BF16}}));
  t.push_back(integer("kv-block-size", M, "Positions per paged KV block (CPU backend)", kScopeModel,
                      [](Config& c) -> int& { return c.backend.kv_block_size; }, 1, 4096));
  t.push_back(integer("kv-cache-blocks", M,
                      "Paged KV blocks shared by all slots (CPU backend); 0 = from --kv-cache-gb, else enough for "
                      "every slot's full context",
                      kScopeModel, [](Config& c) -> int& { return c.backend.kv_cache_blocks; }, 0, 1 << 30));
  t.push_back(flag("enable-prefix-caching", M,
                   "Reuse the KV blocks of earlier requests' identical prompt prefixes (paged backends); "
                   "--enable-prefix-caching=false turns it off",
                   kScopeModel, [](Config& c) -> bool& { return c.engine.prefix_caching; }));
  t.push_back(integer("prefill-chunk", M, "Prompt rows per window (prefill chunk size)", kScopeModel,
                      [](Config& c) -> int& { return c.engine.prefill_chunk; }, 1, 1 << 20));
  t.push_back(integer("max-window-tokens", M, "Rows per window in all (decode rows first, then prompt chunks)",
                      kScopeModel, [](Config& c) -> int& { return c.engine.max_window_tokens; }, 1, 1 << 20));
  {
    OptionSpec o = nonempty_text("window-trace", M,
                                 "Write one JSON line per engine window to FILE: its start, the engine's host time "
                                 "before it, its duration and its rows by kind (for diagnosing throughput)",
                                 kScopeModel, [](Config& c) -> std::string& { return c.engine.window_trace; }, "FILE");
    o.show = [](const Config& c) { return c.engine.window_trace.empty() ? std::string("none") : c.engine.window_trace; };
    t.push_back(o);
  }

  // --- speculative decoding ---
  t.push_back(choice<SpecMode>("spec", P, "Speculative decoding drafter", kScopeModel,
                               [](Config& c) -> SpecMode& { return c.spec.mode; },
                               {{"off", SpecMode::Off}, {"ngram", SpecMode::Ngram}, {"draft", SpecMode::Draft}}));
  t.push_back(integer("spec-k", P, "Drafted tokens per verify window", kScopeModel,
                      [](Config& c) -> int& { return c.spec.k; }, 1, 64));
  t.push_back(integer("spec-lookup-k", P,
                      "Drafted tokens per verify window when prompt lookup copies them (n-gram drafts, or lookup "
                      "beside a draft model): a copy costs no draft work, so it may run past --spec-k while copies "
                      "are kept whole (each doubles the next), within the rows a window verifies exactly; "
                      "below --spec-k: --spec-k",
                      kScopeModel, [](Config& c) -> int& { return c.spec.lookup_k; }, 0, 64));
  t.push_back(integer("spec-max-batch", P,
                      "Draft only while at most this many requests are decoding (a full batch leaves the verifier "
                      "no spare work to hide drafts in); 0 = always. Not set: 0, or 2 with a draft model",
                      kScopeModel, [](Config& c) -> int& { return c.spec.max_batch; }, 0, 1 << 20));
  t.push_back(integer("spec-draft-critical", P,
                      "While a draft model drafts ahead (CUDA), a round that has to wait for its drafts drafts at "
                      "most this many, and the rest of its proposal ahead during the target's window; 0 = up to "
                      "--spec-k",
                      kScopeModel, [](Config& c) -> int& { return c.spec.draft_critical; }, 0, 64));
  t.push_back(flag("spec-draft-lookup", P,
                   "Prompt lookup (the n-gram drafter) beside the draft model. While the draft drafts ahead "
                   "(CUDA), a round that has to wait for its drafts first tries lookup: what it finds is the "
                   "proposal, and the draft model drafts ahead past it. Otherwise (CPU) lookup is the draft's "
                   "rival: it proposes for a request's rounds while it has recently kept more drafts than the "
                   "draft model. --spec-draft-lookup=false: the draft model alone",
                   kScopeModel, [](Config& c) -> bool& { return c.spec.draft_lookup; }));
  t.push_back(integer("spec-draft-lookup-min", P,
                      "The shortest match (tokens, up to 4) prompt lookup beside the draft model needs for a "
                      "proposal of its own (its copies after the draft's drafts take any). While the draft drafts "
                      "ahead (CUDA), lookup's proposal stands in for the draft's unscored, and a longer match "
                      "leaves more rounds to a draft that predicts the target well",
                      kScopeModel, [](Config& c) -> int& { return c.spec.draft_lookup_min; }, 1, 4));
  {
    OptionSpec o = text("draft-model", P, "Draft model directory (required with --spec draft)", kScopeModel,
                        [](Config& c) -> std::string& { return c.spec.draft_model; }, "DIR");
    o.show = [](const Config& c) { return c.spec.draft_model.empty() ? std::string("none") : c.spec.draft_model; };
    t.push_back(o);
  }

  // --- logging ---
  t.push_back(choice<LogFormat>("log-format", L, "Log line format; json = one JSON object per line",
                                kScopeLogging, [](Config& c) -> LogFormat& { return c.logging.format; },
                                {{"text", LogFormat::Text}, {"json", LogFormat::Json}}));
  using Lvl = spdlog::level::level_enum;
  t.push_back(choice<Lvl>("log-level", L, "Least severe level logged", kScopeLogging,
                          [](Config& c) -> Lvl& { return c.logging.level; },
                          {{"trace", spdlog::level::trace}, {"debug", spdlog::level::debug},
                           {"info", spdlog::level::info}, {"warn", spdlog::level::warn},
                           {"error", spdlog::level::err}, {"critical", spdlog::level::critical},
                           {"off", spdlog::level::off}}));

  // --- HTTP server ---
  t.push_back(nonempty_text("host", S, "Address to bind", kScopeServe,
                            [](Config& c) -> std::string& { return c.server.host; }, "HOST"));
  t.push_back(integer("port", S, "TCP port; 0 = pick a free port (logged as 'listening on http://HOST:PORT')",
                      kScopeServe, [](Config& c) -> int& { return c.server.port; }, 0, 65535));
  {
    OptionSpec o = list("api-key", S, "Accepted API key (repeatable or comma-separated); none = no auth",
                        kScopeServe, [](Config& c) -> std::vector<std::string>& { return c.server.api_keys; });
    // Keys are secrets: help and config dumps show only whether any is set.
    o.show = [](const Config& c) { return c.server.api_keys.empty() ? std::string("none") : std::string("(set)"); };
    t.push_back(o);
  }
  {
    OptionSpec o = text("api-key-file", S, "File with one accepted API key per line (# comments allowed)",
                        kScopeServe, [](Config& c) -> std::string& { return c.api_key_file; }, "FILE");
    o.show = [](const Config& c) { return c.api_key_file.empty() ? std::string("none") : c.api_key_file; };
    t.push_back(o);
  }
  {
    OptionSpec o = list("cors-origins", S, "Origins allowed by CORS (repeatable or comma-separated; * = any)",
                        kScopeServe, [](Config& c) -> std::vector<std::string>& { return c.server.cors_origins; });
    o.show = [](const Config& c) { return c.server.cors_origins.empty() ? std::string("none") : join(c.server.cors_origins); };
    t.push_back(o);
  }
  {
    OptionSpec o = list("served-model-name", S,
                        "Model id(s) in /v1/models and accepted in requests (repeatable; the first is canonical)",
                        kScopeServe,
                        [](Config& c) -> std::vector<std::string>& { return c.server.served_model_names; });
    o.show = [](const Config& c) {
      return c.server.served_model_names.empty() ? std::string("model dir name") : join(c.server.served_model_names);
    };
    t.push_back(o);
  }
  t.push_back(bytes("max-body-bytes", S, "Largest request body; larger ones get 413 (suffixes k, M, G)",
                    kScopeServe, [](Config& c) -> size_t& { return c.server.max_body_bytes; }, 1, 1LL << 34));
  t.push_back(integer("max-n", S, "Largest `n` (choices per request)", kScopeServe,
                      [](Config& c) -> int& { return c.server.max_n; }, 1, 1024));
  t.push_back(integer("max-stop-strings", S, "Most `stop` strings per request", kScopeServe,
                      [](Config& c) -> int& { return c.server.max_stop_strings; }, 0, 1024));
  t.push_back(integer("max-tokens-limit", S, "Largest `max_tokens`; 0 = the context length", kScopeServe,
                      [](Config& c) -> int& { return c.server.max_tokens_limit; }, 0, kIntMax));
  t.push_back(real("shutdown-timeout", S, "Seconds running requests may take to finish after SIGTERM",
                   kScopeServe, [](Config& c) -> double& { return c.server.shutdown_timeout_s; }, 0.0, 86400.0,
                   false));
  t.push_back(word("reasoning-format", S,
                   "auto = <think> text goes to reasoning_content; none = kept inline in content", kScopeServe,
                   [](Config& c) -> std::string& { return c.server.reasoning_format; }, {"auto", "none"}));
  t.push_back(integer("penalty-window", S,
                      "Tokens of history presence/frequency/repetition penalties look at; 0 = all",
                      kScopeServe, [](Config& c) -> int& { return c.server.penalty_window; }, 0, kIntMax));
  // The format names are server/openai/tool_parser.hpp's; tests/config checks the two lists agree.
  t.push_back(word("tool-call-parser", S, "Tool-call output format; auto = detect from the chat template",
                   kScopeServe, [](Config& c) -> std::string& { return c.server.tool_call_parser; },
                   {"auto", "hermes", "llama3_json", "deepseek_v3", "mistral", "none"}));
  t.push_back(integer("http-threads", S,
                      "HTTP worker threads; each open connection (a streaming request for its whole life) holds "
                      "one; 0 = max-slots + max-queued + 16, capped at 4096",
                      kScopeServe, [](Config& c) -> int& { return c.server.http_threads; }, 0, 4096));

  // --- engine supervision ---
  t.push_back(integer("max-queued", E, "Waiting requests beyond this get HTTP 429", kScopeServe,
                      [](Config& c) -> int& { return c.engine.max_queued; }, 0, kIntMax));
  t.push_back(real("watchdog-timeout", E, "Seconds a window may run before it counts as a stall", kScopeServe,
                   [](Config& c) -> double& { return c.engine.watchdog_timeout_s; }, 0.0, 86400.0, true));
  t.push_back(integer("watchdog-max-restarts", E,
                      "Failed recoveries in a row before liveness fails", kScopeServe,
                      [](Config& c) -> int& { return c.engine.watchdog_max_restarts; }, 0, 1000000));

  // --- debugging ---
  t.push_back(flag("enable-debug-faults", D, "Allow --debug-faults (never in production)", kScopeServe,
                   [](Config& c) -> bool& { return c.faults.enable; }));
  {
    OptionSpec o = text("debug-faults", D, "Fault injection spec; refused unless --enable-debug-faults",
                        kScopeServe, [](Config& c) -> std::string& { return c.faults.spec; }, "SPEC");
    o.show = [](const Config& c) { return c.faults.spec.empty() ? std::string("none") : c.faults.spec; };
    t.push_back(o);
  }
  return t;
}

}  // namespace

std::string OptionSpec::env_name() const {
  std::string env = "STRATA_";
  for (char ch : name) env += ch == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return env;
}

const std::vector<OptionSpec>& option_table() {
  static const std::vector<OptionSpec> table = make_table();
  return table;
}

const OptionSpec* find_option(const std::string& name_or_key) {
  std::string name = name_or_key;
  for (char& ch : name)
    if (ch == '_') ch = '-';
  for (const auto& o : option_table())
    if (o.name == name) return &o;
  return nullptr;
}

}  // namespace strata
