// The `strata` binary as a user meets it: help that documents every option, exit code 2 with the option
// named for bad flags, environment and YAML, `generate` printing a completion, and `serve` listening,
// answering and draining on SIGTERM.
#include <catch2/catch.hpp>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "config/option_table.hpp"
#include "tests/cli/child_process.hpp"

using namespace strata;
using namespace strata::test;
using Catch::Matchers::Contains;

namespace {

const std::string kStrata = std::string(STRATA_BINARY_DIR) + "/strata";
const std::string kFixture = std::string(STRATA_SOURCE_DIR) + "/tests/data/models/qwen3";

RunResult run_strata(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {}) {
  return run_process(kStrata, args, env);
}

// Waits for a `strata serve --port 0` child's "listening on" line and returns the port it names.
int wait_for_port(ChildProcess& server) {
  REQUIRE(server.wait_for_stderr("listening on http://", std::chrono::seconds(120)));
  // The line may still be arriving: wait for its end.
  REQUIRE(server.wait_for_stderr("\n", std::chrono::seconds(5)));
  std::smatch m;
  const std::string err = server.err();
  REQUIRE(std::regex_search(err, m, std::regex("listening on http://127\\.0\\.0\\.1:([0-9]+)\n")));
  return std::stoi(m[1]);
}

std::string temp_file(const std::string& name, const std::string& contents) {
  const auto dir = std::filesystem::temp_directory_path() / ("strata-cli-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / name).string();
  std::ofstream(path) << contents;
  return path;
}

}  // namespace

TEST_CASE("strata serve --help lists every option with its default and environment variable") {
  const RunResult r = run_strata({"serve", "--help"});
  REQUIRE(r.exit_code == 0);
  for (const auto& o : option_table()) {
    INFO("--" << o.name);
    CHECK_THAT(r.out, Contains("--" + o.name));
    CHECK_THAT(r.out, Contains(o.env_name()));
  }
  CHECK_THAT(r.out, Contains("--config"));
  CHECK_THAT(r.out, Contains("Default: 127.0.0.1"));
  CHECK_THAT(r.out, Contains("Default: 8080"));
}

TEST_CASE("strata generate --help lists the model options and the generation flags, not the server's") {
  const RunResult r = run_strata({"generate", "--help"});
  REQUIRE(r.exit_code == 0);
  for (const char* flag : {"--model", "--prompt", "--max-tokens", "--temperature", "--seed", "--top-k", "--top-p",
                           "--device", "--threads"})
    CHECK_THAT(r.out, Contains(flag));
  CHECK_THAT(r.out, !Contains("--api-key"));
}

TEST_CASE("a bad flag value exits 2 naming the option and the flag") {
  const RunResult r = run_strata({"serve", "--port", "eighty"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("--port") && Contains("'eighty' is not an integer") && Contains("flag --port"));
  const RunResult range = run_strata({"serve", "--max-slots", "0"});
  CHECK(range.exit_code == 2);
  CHECK_THAT(range.err, Contains("--max-slots"));
}

TEST_CASE("an unknown flag or subcommand exits 2") {
  CHECK(run_strata({"serve", "--no-such-flag"}).exit_code == 2);
  CHECK(run_strata({"no-such-command"}).exit_code == 2);
  CHECK(run_strata({}).exit_code == 2);
}

TEST_CASE("a bad environment value exits 2 naming the variable") {
  const RunResult r = run_strata({"serve"}, {{"STRATA_PORT", "abc"}});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("--port") && Contains("env STRATA_PORT"));
}

TEST_CASE("a bad YAML file exits 2 naming file and line") {
  const std::string path = temp_file("bad.yaml", "host: 127.0.0.1\nmax_slot: 3\n");
  const RunResult r = run_strata({"serve", "--config", path});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains(path + ":2") && Contains("unknown option 'max_slot'"));
  const std::string typed = temp_file("typed.yaml", "port: many\n");
  const RunResult t = run_strata({"serve", "--config", typed});
  CHECK(t.exit_code == 2);
  CHECK_THAT(t.err, Contains("--port") && Contains(typed + ":1"));
}

TEST_CASE("engine-facing rules exit 2: faults need enabling, a bad fault spec, --spec draft without a draft model, cuda without CUDA") {
  const RunResult faults = run_strata({"serve", "--debug-faults", "throw@window=1"});
  CHECK(faults.exit_code == 2);
  CHECK_THAT(faults.err, Contains("--enable-debug-faults"));
  const RunResult spec = run_strata({"serve", "--model", kFixture, "--enable-debug-faults", "--debug-faults", "explode@now"});
  CHECK(spec.exit_code == 2);
  CHECK_THAT(spec.err, Contains("--debug-faults"));
  const RunResult spec_mode = run_strata({"generate", "--model", kFixture, "--prompt", "x", "--spec", "draft"});
  CHECK(spec_mode.exit_code == 2);
  CHECK_THAT(spec_mode.err, Contains("--spec") && Contains("--draft-model"));
#ifndef STRATA_TEST_CUDA_BUILD
  const RunResult cuda = run_strata({"generate", "--model", kFixture, "--prompt", "x", "--device", "cuda"});
  CHECK(cuda.exit_code == 2);
  CHECK_THAT(cuda.err, Contains("--device") && Contains("CUDA"));
#endif
}

TEST_CASE("a model directory that cannot be loaded exits 1 with the path in the message") {
  const RunResult r = run_strata({"serve", "--model", "/nonexistent/model-dir", "--port", "0"});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("/nonexistent/model-dir"));
}

TEST_CASE("strata version names the version and the backends") {
  const RunResult r = run_strata({"version"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("strata ") && Contains("backends: cpu"));
}

TEST_CASE("strata generate prints a completion on stdout, the same one twice when greedy") {
  const std::vector<std::string> args = {"generate", "--model", kFixture, "--prompt", "Hello, world", "--max-tokens",
                                         "12", "--ignore-eos", "--threads", "1"};
  const RunResult a = run_strata(args);
  INFO(a.err);
  REQUIRE(a.exit_code == 0);
  CHECK(a.out.size() > 1);  // 12 tokens of text and the final newline
  const RunResult b = run_strata(args);
  CHECK(b.out == a.out);
  // Logs stay on stderr: the completion line is not mixed with them.
  CHECK_THAT(a.err, Contains("completion_tokens=12"));
  CHECK_THAT(a.out, !Contains("completion_tokens"));
}

TEST_CASE("strata generate prints the same completion with --spec ngram and --spec draft as with --spec off") {
  const std::vector<std::string> base = {"generate", "--model", kFixture, "--prompt", "a b a b a b", "--max-tokens",
                                         "16", "--ignore-eos", "--threads", "1"};
  const RunResult off = run_strata(base);
  REQUIRE(off.exit_code == 0);
  std::vector<std::string> ngram = base;
  ngram.insert(ngram.end(), {"--spec", "ngram", "--spec-k", "3"});
  const RunResult n = run_strata(ngram);
  INFO(n.err);
  REQUIRE(n.exit_code == 0);
  CHECK(n.out == off.out);
  std::vector<std::string> draft = base;
  draft.insert(draft.end(), {"--spec", "draft", "--draft-model", std::string(STRATA_SOURCE_DIR) + "/tests/data/models/llama"});
  const RunResult d = run_strata(draft);
  INFO(d.err);
  REQUIRE(d.exit_code == 0);
  CHECK(d.out == off.out);
  CHECK_THAT(d.err, Contains("spec_windows="));
  // A draft model drafts only while at most 2 requests decode unless --spec-max-batch says otherwise.
  CHECK_THAT(d.err, Contains("while at most 2 requests decode"));
  std::vector<std::string> always = draft;
  always.insert(always.end(), {"--spec-max-batch", "0"});
  const RunResult a = run_strata(always);
  REQUIRE(a.exit_code == 0);
  CHECK(a.out == off.out);
  CHECK_THAT(a.err, Contains("at every batch size"));
  // The drafting-ahead cap takes 0 (no cap) and up; a negative count is refused, naming the flag.
  std::vector<std::string> capped = draft;
  capped.insert(capped.end(), {"--spec-draft-critical", "0"});
  const RunResult c = run_strata(capped);
  REQUIRE(c.exit_code == 0);
  CHECK(c.out == off.out);
  std::vector<std::string> negative = draft;
  negative.insert(negative.end(), {"--spec-draft-critical", "-1"});
  const RunResult bad = run_strata(negative);
  CHECK(bad.exit_code != 0);
  CHECK_THAT(bad.err, Contains("spec-draft-critical"));
  // Prompt lookup in waiting rounds is on by default and can be turned off; a value that is not a boolean is
  // refused, naming the flag.
  std::vector<std::string> no_lookup = draft;
  no_lookup.insert(no_lookup.end(), {"--spec-draft-lookup=false"});
  const RunResult nl = run_strata(no_lookup);
  REQUIRE(nl.exit_code == 0);
  CHECK(nl.out == off.out);
  std::vector<std::string> bad_lookup = draft;
  bad_lookup.insert(bad_lookup.end(), {"--spec-draft-lookup=maybe"});
  const RunResult bl = run_strata(bad_lookup);
  CHECK(bl.exit_code != 0);
  CHECK_THAT(bl.err, Contains("spec-draft-lookup"));
  // The draft command with `flag value` added.
  auto with = [&](const char* flag, const char* value) {
    std::vector<std::string> args = draft;
    args.insert(args.end(), {flag, value});
    return run_strata(args);
  };
  // Lookup's copies past k: any count from 0 (no more than k) to 64; outside that refused, naming the flag.
  for (const char* n : {"0", "4", "64"}) {
    const RunResult r = with("--spec-lookup-k", n);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out == off.out);
  }
  for (const char* n : {"-1", "65", "many"}) {
    const RunResult r = with("--spec-lookup-k", n);
    CHECK(r.exit_code != 0);
    CHECK_THAT(r.err, Contains("spec-lookup-k"));
  }
  // The shortest match for lookup's own proposals: 1 (any) unless set, 1 to 4; outside that refused, naming
  // the flag.
  CHECK_THAT(d.err, Contains("lookup proposes on matches of 1+ tokens"));
  for (const char* n : {"2", "4"}) {
    const RunResult r = with("--spec-draft-lookup-min", n);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out == off.out);
    CHECK_THAT(r.err, Contains(std::string("lookup proposes on matches of ") + n + "+ tokens"));
  }
  for (const char* n : {"0", "5", "many"}) {
    const RunResult r = with("--spec-draft-lookup-min", n);
    CHECK(r.exit_code != 0);
    CHECK_THAT(r.err, Contains("spec-draft-lookup-min"));
  }
}

TEST_CASE("strata generate with a feature draft prints the completion of --spec off; its target must match it") {
  const std::string models = std::string(STRATA_SOURCE_DIR) + "/tests/data/models";
  const std::vector<std::string> base = {"generate", "--model", models + "/qwen3", "--prompt", "a b a b a b",
                                         "--max-tokens", "16", "--ignore-eos", "--threads", "1"};
  const RunResult off = run_strata(base);
  REQUIRE(off.exit_code == 0);
  std::vector<std::string> draft = base;
  draft.insert(draft.end(), {"--spec", "draft", "--draft-model", models + "/qwen3_feature_draft"});
  const RunResult d = run_strata(draft);
  INFO(d.err);
  REQUIRE(d.exit_code == 0);
  CHECK(d.out == off.out);
  CHECK_THAT(d.err, Contains("speculation: feature draft"));
  CHECK_THAT(d.err, Contains("spec_windows="));
  // Beside a target of another hidden size it cannot read that target's features: refused, naming both.
  std::vector<std::string> wrong = draft;
  wrong[2] = models + "/qwen2";
  const RunResult w = run_strata(wrong);
  CHECK(w.exit_code != 0);
  CHECK_THAT(w.err, Contains("--draft-model") && Contains("cannot read a target of hidden_size 48"));
}

TEST_CASE("strata generate with seeded sampling repeats for the same seed") {
  const std::vector<std::string> args = {"generate", "--model", kFixture, "--prompt", "Once", "--max-tokens", "10",
                                         "--temperature", "1.0", "--seed", "42", "--ignore-eos", "--threads", "1"};
  const RunResult a = run_strata(args);
  REQUIRE(a.exit_code == 0);
  CHECK(run_strata(args).out == a.out);
}

TEST_CASE("strata generate refuses out-of-range generation flags with exit 2") {
  const RunResult r = run_strata({"generate", "--model", kFixture, "--prompt", "x", "--temperature", "500"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("--temperature"));
  CHECK(run_strata({"generate", "--model", kFixture}).exit_code == 2);  // --prompt is required
}

TEST_CASE("--log-format json makes every stderr line a JSON object with ts, level, msg, request_id") {
  const RunResult r = run_strata({"generate", "--model", kFixture, "--prompt", "Hi", "--max-tokens", "4", "--log-format",
                              "json", "--threads", "1"});
  REQUIRE(r.exit_code == 0);
  std::istringstream lines(r.err);
  int n = 0;
  bool saw_request_line = false;
  for (std::string line; std::getline(lines, line);) {
    INFO(line);
    const auto j = nlohmann::json::parse(line);  // throws (fails the test) on a non-JSON line
    CHECK(j.contains("ts"));
    CHECK(j.contains("level"));
    CHECK(j.contains("msg"));
    CHECK(j.contains("request_id"));
    if (j["request_id"] == "generate-1") saw_request_line = true;
    ++n;
  }
  CHECK(n >= 2);
  CHECK(saw_request_line);
}

TEST_CASE("strata serve on port 0 logs its real address, answers /health and exits 0 on SIGTERM") {
  ChildProcess server(kStrata, {"serve", "--model", kFixture, "--port", "0", "--threads", "1", "--max-slots", "2"});
  const int port = wait_for_port(server);
  CHECK(port > 0);

  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(60, 0);
  auto health = client.Get("/health");
  REQUIRE(health);
  CHECK(health->status == 200);
  auto models = client.Get("/v1/models");
  REQUIRE(models);
  CHECK(models->status == 200);
  CHECK_THAT(models->body, Contains("qwen3"));

  server.signal(SIGTERM);
  const RunResult r = server.finish(std::chrono::seconds(60));
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, Contains("SIGTERM received"));
}

TEST_CASE("strata serve with no --model serves the embedded default model") {
  ChildProcess server(kStrata, {"serve", "--port", "0", "--threads", "1", "--max-slots", "1"});
  REQUIRE(server.wait_for_stderr("listening on http://", std::chrono::seconds(120)));
  CHECK_THAT(server.err(), Contains("loading model from") && Contains("models/"));
  server.signal(SIGINT);
  CHECK(server.finish(std::chrono::seconds(60)).exit_code == 0);
}

TEST_CASE("strata serve --print-config shows each effective value with its source and starts nothing") {
  const std::string path = temp_file("print.yaml", "max-slots: 3\nport: 7000\n");
  const RunResult r = run_strata({"serve", "--print-config", "--config", path, "--port", "9000"},
                                 {{"STRATA_HOST", "0.0.0.0"}, {"STRATA_API_KEY", "secret-key"}});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("port = 9000  (flag --port)"));
  CHECK_THAT(r.out, Contains("max-slots = 3  (" + path + ":1)"));
  CHECK_THAT(r.out, Contains("host = 0.0.0.0  (env STRATA_HOST)"));
  CHECK_THAT(r.out, Contains("threads = 0  (default)"));
  CHECK_THAT(r.out, !Contains("secret-key"));  // keys are never printed
  CHECK_THAT(r.err, !Contains("listening on"));
  // With no --model the embedded strata-tiny and its draft are what serving uses, and the listing says so;
  // an explicit --spec wins.
  const RunResult embedded = run_strata({"serve", "--print-config"});
  REQUIRE(embedded.exit_code == 0);
  CHECK_THAT(embedded.out, Contains("spec = draft"));
  CHECK_THAT(embedded.out, Contains("strata-tiny-draft"));
  const RunResult off = run_strata({"serve", "--print-config", "--spec", "off"});
  CHECK_THAT(off.out, Contains("spec = off  (flag --spec)"));
}

TEST_CASE("strata tokenize and detokenize round-trip text through the fixture's tokenizer") {
  const RunResult ids = run_process(kStrata, {"tokenize", "--tokenizer", kFixture}, {}, "Hello world");
  REQUIRE(ids.exit_code == 0);
  const auto parsed = nlohmann::json::parse(ids.out);
  REQUIRE(parsed.is_array());
  CHECK(parsed.size() >= 2);
  const RunResult text = run_process(kStrata, {"detokenize", "--tokenizer", kFixture}, {}, ids.out);
  REQUIRE(text.exit_code == 0);
  CHECK(text.out == "Hello world");
  CHECK(run_strata({"tokenize"}).exit_code == 2);  // --tokenizer is required
}

TEST_CASE("strata chat-template renders the request's messages through the model's template") {
  const std::string req = temp_file("req.json", R"({"messages":[{"role":"user","content":"ping-1234"}]})");
  const RunResult r = run_strata({"chat-template", "--tokenizer", kFixture, "--request", req});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("ping-1234"));
  const RunResult missing = run_strata({"chat-template", "--tokenizer", kFixture, "--request", "/nonexistent.json"});
  CHECK(missing.exit_code == 1);
}

TEST_CASE("--ctx-size 0 takes the model's max_position_embeddings; an explicit size is used as given") {
  // The qwen3 fixture declares max_position_embeddings 512, below the 4096 cap.
  const RunResult derived = run_strata({"generate", "--model", kFixture, "--prompt", "a", "--max-tokens", "1"});
  REQUIRE(derived.exit_code == 0);
  CHECK_THAT(derived.err, Contains("x 512 positions"));
  const RunResult given = run_strata({"generate", "--model", kFixture, "--prompt", "a", "--max-tokens", "1",
                                      "--ctx-size", "128", "--max-slots", "2"});
  REQUIRE(given.exit_code == 0);
  CHECK_THAT(given.err, Contains("2 slots x 128 positions"));
}

TEST_CASE("strata serve serves more concurrent streams than 32 at once: the HTTP pool is sized for the slots") {
  // httplib keeps a pool thread per open connection, so with a fixed 32-thread pool streams 33 and up would
  // wait in the accept queue until another stream ended. Every stream must get its first chunk before any ends.
  const int kStreams = 40;
  ChildProcess server(kStrata, {"serve", "--model", kFixture, "--port", "0", "--threads", "1", "--max-slots",
                                std::to_string(kStreams), "--max-queued", "64", "--spec", "off"});
  const int port = wait_for_port(server);
  CHECK_THAT(server.err(), Contains("http: " + std::to_string(kStreams + 64 + 16) + " worker threads"));

  using Clock = std::chrono::steady_clock;
  std::vector<Clock::time_point> first(kStreams), last(kStreams);
  std::vector<int> status(kStreams, 0);
  std::vector<std::thread> clients;
  for (int i = 0; i < kStreams; ++i)
    clients.emplace_back([&, i] {
      httplib::Client client("127.0.0.1", port);
      client.set_read_timeout(120, 0);
      httplib::Request req;
      req.method = "POST";
      req.path = "/v1/completions";
      req.set_header("Content-Type", "application/json");
      req.body = nlohmann::json{{"model", "qwen3"}, {"prompt", "stream " + std::to_string(i)}, {"max_tokens", 200},
                                {"ignore_eos", true}, {"stream", true}, {"temperature", 0}}
                     .dump();
      bool seen = false;
      req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) {
        if (!seen) first[size_t(i)] = Clock::now();
        seen = true;
        return true;
      };
      auto res = client.send(req);
      last[size_t(i)] = Clock::now();
      status[size_t(i)] = res ? res->status : -1;
    });
  for (auto& t : clients) t.join();
  for (int i = 0; i < kStreams; ++i) REQUIRE(status[size_t(i)] == 200);
  const auto latest_first = *std::max_element(first.begin(), first.end());
  const auto earliest_end = *std::min_element(last.begin(), last.end());
  CHECK(latest_first < earliest_end);

  server.signal(SIGTERM);
  CHECK(server.finish(std::chrono::seconds(60)).exit_code == 0);
}

namespace {

double metric_value(const std::string& scrape, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(scrape, m, std::regex("\n" + name + "(\\{[^}]*\\})? ([0-9.e+-]+)"))) return -1.0;
  return std::stod(m[2]);
}

}  // namespace

TEST_CASE("a long shared system prompt is prefilled once: the second request reuses its cached KV blocks") {
  // The embedded strata-tiny (2048 positions) and a system prompt of about 1900 tokens.
  ChildProcess server(kStrata, {"serve", "--port", "0", "--threads", "2", "--max-slots", "2", "--spec", "off"});
  httplib::Client client("127.0.0.1", wait_for_port(server));
  client.set_read_timeout(300, 0);

  std::string system = "You review Python code. The module under review:\n";
  for (int i = 0; system.size() < 3800; ++i)
    system += "def step_" + std::to_string(i) + "(x):\n    return x * " + std::to_string(i % 7 + 2) + " + " +
              std::to_string(i) + "\n";
  auto ask = [&](const std::string& question) {
    const nlohmann::json body = {{"model", "strata-tiny"},
                                 {"messages", {{{"role", "system"}, {"content", system}},
                                               {{"role", "user"}, {"content", question}}}},
                                 {"max_tokens", 4},
                                 {"temperature", 0}};
    auto res = client.Post("/v1/chat/completions", body.dump(), "application/json");
    REQUIRE(res);
    INFO(res->body);
    REQUIRE(res->status == 200);
    return nlohmann::json::parse(res->body)["usage"]["prompt_tokens"].get<int>();
  };
  auto scrape = [&] {
    auto res = client.Get("/metrics");
    REQUIRE(res);
    return "\n" + res->body;
  };
  const int prompt_a = ask("What does step_3 return?");
  REQUIRE(prompt_a >= 1800);
  REQUIRE(prompt_a < 2040);
  const std::string before = scrape();
  const int prompt_b = ask("Which function multiplies by 5?");
  const std::string after = scrape();
  const double hits = metric_value(after, "strata_prefix_cache_hits_total") -
                      std::max(0.0, metric_value(before, "strata_prefix_cache_hits_total"));
  // The system prompt and the template's start are shared: all but the last partial 16-token block of the
  // shared part (and the blocks that hold the different questions) come from the cache.
  INFO("prompt tokens " << prompt_a << " / " << prompt_b << ", blocks reused " << hits);
  CHECK(hits >= double(prompt_a - 40) / 16.0 - 2.0);

  server.signal(SIGTERM);
  CHECK(server.finish(std::chrono::seconds(60)).exit_code == 0);
}
