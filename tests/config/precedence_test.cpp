// The precedence chain: defaults <- YAML file <- environment <- flags, each layer overriding only the
// options it names, and each value's source recorded.
#include <catch2/catch.hpp>
#include <unistd.h>

#include "tests/config/config_test_support.hpp"

using namespace strata;
using namespace strata::test;

TEST_CASE("with no file, env or flags every option keeps the struct defaults") {
  const Built b = build({});
  const Config defaults;
  CHECK(b.config.server.port == defaults.server.port);
  CHECK(b.config.server.host == "127.0.0.1");
  CHECK(b.config.backend.device == Device::Auto);
  CHECK(b.config.engine.max_queued == defaults.engine.max_queued);
  CHECK(b.config.logging.format == LogFormat::Text);
  CHECK(b.sources.empty());
}

TEST_CASE("a YAML file overrides defaults and records file:line as the source") {
  TempFile yaml("strata.yaml", "# serving settings\nport: 9001\nmax_slots: 7\nlog-format: json\n");
  const Built b = build({"--config", yaml.path()});
  CHECK(b.config.server.port == 9001);
  CHECK(b.config.backend.max_slots == 7);
  CHECK(b.config.logging.format == LogFormat::Json);
  CHECK(b.sources.at("port") == yaml.path() + ":2");
  CHECK(b.sources.at("max-slots") == yaml.path() + ":3");
  CHECK(b.config.config_file == yaml.path());
}

TEST_CASE("the environment overrides the YAML file but not what it does not name") {
  TempFile yaml("strata.yaml", "port: 9001\nmax-slots: 7\n");
  const Built b = build({"--config", yaml.path()}, {{"STRATA_PORT", "9002"}});
  CHECK(b.config.server.port == 9002);
  CHECK(b.config.backend.max_slots == 7);
  CHECK(b.sources.at("port") == "env STRATA_PORT");
}

TEST_CASE("flags override the environment and the YAML file") {
  TempFile yaml("strata.yaml", "port: 9001\nmodel: /from/yaml\n");
  const Built b = build({"--config", yaml.path(), "--port", "9003"},
                        {{"STRATA_PORT", "9002"}, {"STRATA_MODEL", "/from/env"}});
  CHECK(b.config.server.port == 9003);
  CHECK(b.sources.at("port") == "flag --port");
  CHECK(b.config.model.model_dir == "/from/env");
  CHECK(b.sources.at("model") == "env STRATA_MODEL");
}

TEST_CASE("STRATA_CONFIG names the YAML file when --config is not given, and --config wins over it") {
  TempFile a("a.yaml", "port: 1111\n");
  TempFile b("b.yaml", "port: 2222\n");
  CHECK(build({}, {{"STRATA_CONFIG", a.path()}}).config.server.port == 1111);
  CHECK(build({"--config", b.path()}, {{"STRATA_CONFIG", a.path()}}).config.server.port == 2222);
}

TEST_CASE("a value flag given twice takes the later one") {
  CHECK(build({"--port", "1000", "--port", "2000"}).config.server.port == 2000);
}

TEST_CASE("list options are repeatable and comma-separated, and a later layer replaces the whole list") {
  const Built flags = build({"--served-model-name", "a", "--served-model-name", "b, c"});
  CHECK(flags.config.server.served_model_names == std::vector<std::string>{"a", "b", "c"});

  TempFile yaml("strata.yaml", "served-model-name: [x, y]\ncors-origins:\n  - https://a.example\n");
  const Built file = build({"--config", yaml.path()});
  CHECK(file.config.server.served_model_names == std::vector<std::string>{"x", "y"});
  CHECK(file.config.server.cors_origins == std::vector<std::string>{"https://a.example"});

  const Built over = build({"--config", yaml.path()}, {{"STRATA_SERVED_MODEL_NAME", "z"}});
  CHECK(over.config.server.served_model_names == std::vector<std::string>{"z"});
}

TEST_CASE("flags reach the embedded ServerOptions and EngineOptions fields") {
  const Built b = build({"--host", "0.0.0.0", "--max-body-bytes", "64k", "--shutdown-timeout", "2.5",
                         "--reasoning-format", "none", "--max-queued", "3", "--watchdog-timeout", "0.25",
                         "--watchdog-max-restarts", "5", "--prefill-chunk", "64", "--http-threads", "4"});
  CHECK(b.config.server.host == "0.0.0.0");
  CHECK(b.config.server.max_body_bytes == 64u * 1024u);
  CHECK(b.config.server.shutdown_timeout_s == 2.5);
  CHECK(b.config.server.reasoning_format == "none");
  CHECK(b.config.server.http_threads == 4);
  CHECK(b.config.engine.max_queued == 3);
  CHECK(b.config.engine.watchdog_timeout_s == 0.25);
  CHECK(b.config.engine.watchdog_max_restarts == 5);
  CHECK(b.config.engine.prefill_chunk == 64);
}

TEST_CASE("model and backend flags fill their typed fields") {
  const Built b = build({"--model", "/m", "--tokenizer", "/t", "--device", "cpu", "--threads", "3",
                         "--max-slots", "2", "--ctx-size", "512", "--kv-cache-gb", "1.5",
                         "--gpu-memory-fraction", "0.5", "--spec", "ngram", "--spec-k", "6",
                         "--log-level", "debug"});
  CHECK(b.config.model.model_dir == "/m");
  CHECK(b.config.model.tokenizer == "/t");
  CHECK(b.config.backend.device == Device::Cpu);
  CHECK(b.config.backend.threads == 3);
  CHECK(b.config.backend.max_slots == 2);
  CHECK(b.config.backend.ctx_size == 512);
  CHECK(b.config.backend.kv_cache_gb == 1.5);
  CHECK(b.config.backend.gpu_memory_fraction == 0.5);
  CHECK(b.config.spec.mode == SpecMode::Ngram);
  CHECK(b.config.spec.k == 6);
  CHECK(b.config.logging.level == spdlog::level::debug);
}

TEST_CASE("a bare flag means true and --flag=false turns it off again") {
  CHECK(build({"--enable-debug-faults"}).config.faults.enable);
  CHECK_FALSE(build({"--enable-debug-faults=false"}, {{"STRATA_ENABLE_DEBUG_FAULTS", "1"}}).config.faults.enable);
  CHECK(build({}, {{"STRATA_ENABLE_DEBUG_FAULTS", "yes"}}).config.faults.enable);
  // A flag whose default is true: CUDA's GEMM autotune, off for a process that must round as every other.
  CHECK(build({}).config.backend.gemm_autotune);
  CHECK_FALSE(build({"--gemm-autotune=false"}).config.backend.gemm_autotune);
  CHECK_FALSE(build({}, {{"STRATA_GEMM_AUTOTUNE", "0"}}).config.backend.gemm_autotune);
  CHECK(build({}).config.backend.cuda_graph_warmup);
  CHECK_FALSE(build({"--cuda-graph-warmup=false"}).config.backend.cuda_graph_warmup);
  CHECK_FALSE(build({}, {{"STRATA_CUDA_GRAPH_WARMUP", "false"}}).config.backend.cuda_graph_warmup);
}

TEST_CASE("a subcommand's scope leaves other options out of the CLI but tolerates them in a shared YAML file") {
  TempFile yaml("strata.yaml", "port: 9001\nmodel: /m\n");
  const Built b = build({"--config", yaml.path()}, {{"STRATA_PORT", "1"}}, kScopeModel | kScopeLogging);
  CHECK(b.config.model.model_dir == "/m");
  CHECK(b.config.server.port == Config{}.server.port);
  CHECK_THROWS_AS(build({"--port", "1"}, {}, kScopeModel), CLI::ParseError);
}

TEST_CASE("--api-key-file adds one key per line, skipping blanks and comments") {
  TempFile keys("keys.txt", "# operators\nkey-one\n\n  key-two  \r\n");
  const Built b = build({"--api-key", "flag-key", "--api-key-file", keys.path()});
  CHECK(b.config.server.api_keys == std::vector<std::string>{"flag-key", "key-one", "key-two"});
}

TEST_CASE("--chat-template loads the file's contents into the server's override") {
  TempFile tpl("t.jinja", "{{ messages[0].content }}");
  const Built b = build({"--chat-template", tpl.path()});
  CHECK(b.config.server.chat_template_override == "{{ messages[0].content }}");
}
