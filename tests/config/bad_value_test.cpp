// Every class of bad value is a ConfigError naming the option and where the value came from.
#include <catch2/catch.hpp>
#include <unistd.h>

#include "tests/config/config_test_support.hpp"

using namespace strata;
using namespace strata::test;
using Catch::Matchers::Contains;

namespace {

std::string error_of(const std::vector<std::string>& args, const Env& env = {}) {
  try {
    build(args, env);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("a flag of the wrong type names the option, the value and the flag") {
  const std::string e = error_of({"--port", "eighty"});
  CHECK_THAT(e, Contains("--port") && Contains("'eighty' is not an integer") && Contains("flag --port"));
  CHECK_THAT(error_of({"--watchdog-timeout", "soon"}), Contains("--watchdog-timeout") && Contains("not a finite number"));
  CHECK_THAT(error_of({"--port", "80x"}), Contains("is not an integer"));
  CHECK_THAT(error_of({"--kv-cache-gb", "nan"}), Contains("--kv-cache-gb"));
}

TEST_CASE("an out-of-range value states the range") {
  CHECK_THAT(error_of({"--port", "70000"}), Contains("--port") && Contains("out of range [0, 65535]"));
  CHECK_THAT(error_of({"--max-slots", "0"}), Contains("--max-slots") && Contains("out of range"));
  CHECK_THAT(error_of({"--gpu-memory-fraction", "0"}), Contains("--gpu-memory-fraction") && Contains("(0"));
  CHECK_THAT(error_of({"--gpu-memory-fraction", "1.5"}), Contains("out of range"));
  CHECK_THAT(error_of({"--watchdog-timeout", "0"}), Contains("--watchdog-timeout"));
  CHECK_THAT(error_of({"--max-body-bytes", "0"}), Contains("--max-body-bytes"));
  CHECK_THAT(error_of({"--max-body-bytes", "12Q"}), Contains("not a byte size"));
}

TEST_CASE("an unknown enum word lists the accepted words") {
  CHECK_THAT(error_of({"--device", "tpu"}), Contains("--device") && Contains("'tpu' is not one of: auto, cpu, cuda"));
  CHECK_THAT(error_of({"--log-format", "xml"}), Contains("text, json"));
  CHECK_THAT(error_of({"--spec", "eagle"}), Contains("off, ngram, draft"));
  CHECK_THAT(error_of({"--reasoning-format", "deepseek"}), Contains("--reasoning-format"));
  CHECK_THAT(error_of({"--log-level", "verbose"}), Contains("--log-level"));
}

TEST_CASE("a bad environment value names the variable") {
  const std::string e = error_of({}, {{"STRATA_PORT", "abc"}});
  CHECK_THAT(e, Contains("--port") && Contains("env STRATA_PORT"));
  CHECK_THAT(error_of({}, {{"STRATA_DEVICE", "gpu"}}), Contains("env STRATA_DEVICE"));
  CHECK_THAT(error_of({}, {{"STRATA_ENABLE_DEBUG_FAULTS", "maybe"}}), Contains("not a boolean"));
}

TEST_CASE("a bad environment value is reported even when a flag overrides it") {
  // Each layer is validated as it is applied, so a broken variable in the environment is reported even if
  // a flag would have replaced it: a deployment must not carry a silently-ignored bad setting.
  CHECK_THAT(error_of({"--port", "1"}, {{"STRATA_PORT", "abc"}}), Contains("env STRATA_PORT"));
}

TEST_CASE("a bad YAML value names the option and file:line") {
  TempFile yaml("s.yaml", "host: 0.0.0.0\nport: lots\n");
  const std::string e = error_of({"--config", yaml.path()});
  CHECK_THAT(e, Contains("--port") && Contains(yaml.path() + ":2"));
}

TEST_CASE("an unknown YAML key is refused with file:line") {
  TempFile yaml("s.yaml", "port: 8080\nmax_slot: 4\n");
  const std::string e = error_of({"--config", yaml.path()});
  CHECK_THAT(e, Contains(yaml.path() + ":2") && Contains("unknown option 'max_slot'"));
}

TEST_CASE("malformed YAML, a non-mapping document, and a missing file are refused") {
  TempFile broken("s.yaml", "port: [1, 2\n");
  CHECK_THAT(error_of({"--config", broken.path()}), Contains("invalid YAML") && Contains(broken.path()));
  TempFile scalar("s.yaml", "just words\n");
  CHECK_THAT(error_of({"--config", scalar.path()}), Contains("expected a mapping"));
  CHECK_THAT(error_of({"--config", "/nonexistent/strata.yaml"}), Contains("--config") && Contains("cannot read"));
}

TEST_CASE("YAML structure must match the option kind") {
  TempFile list_for_scalar("s.yaml", "port: [1, 2]\n");
  CHECK_THAT(error_of({"--config", list_for_scalar.path()}), Contains("--port") && Contains("a single value"));
  TempFile empty_value("s.yaml", "port:\n");
  CHECK_THAT(error_of({"--config", empty_value.path()}), Contains("--port") && Contains("no value"));
  TempFile nested("s.yaml", "served-model-name:\n  - {a: 1}\n");
  CHECK_THAT(error_of({"--config", nested.path()}), Contains("--served-model-name"));
}

TEST_CASE("an empty YAML file configures nothing") {
  TempFile empty("s.yaml", "");
  CHECK(build({"--config", empty.path()}).config.server.port == Config{}.server.port);
}

TEST_CASE("--debug-faults is refused unless fault injection is enabled") {
  CHECK_THAT(error_of({"--debug-faults", "stall:window=3:seconds=5"}),
             Contains("--debug-faults") && Contains("--enable-debug-faults"));
  CHECK_THAT(error_of({}, {{"STRATA_DEBUG_FAULTS", "throw:window=1"}}), Contains("env STRATA_DEBUG_FAULTS"));
  CHECK(build({"--enable-debug-faults", "--debug-faults", "throw:window=1"}).config.faults.spec == "throw:window=1");
}

TEST_CASE("--spec draft needs a draft model") {
  CHECK_THAT(error_of({"--spec", "draft"}), Contains("--spec") && Contains("--draft-model"));
  CHECK(build({"--spec", "draft", "--draft-model", "/d"}).config.spec.draft_model == "/d");
}

TEST_CASE("unreadable or empty key files and template files are refused by name") {
  CHECK_THAT(error_of({"--api-key-file", "/nonexistent/keys"}), Contains("--api-key-file") && Contains("cannot read"));
  TempFile only_comments("keys.txt", "# nothing here\n\n");
  CHECK_THAT(error_of({"--api-key-file", only_comments.path()}), Contains("holds no key"));
  CHECK_THAT(error_of({"--chat-template", "/nonexistent/t.jinja"}), Contains("--chat-template"));
  CHECK_THAT(error_of({"--host", ""}), Contains("--host") && Contains("must not be empty"));
}
