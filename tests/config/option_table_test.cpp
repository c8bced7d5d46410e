// The option table: unique names, derived env names, help for every option, and lookups by YAML key.
#include <catch2/catch.hpp>

#include <set>

#include "config/option_table.hpp"

using namespace strata;

TEST_CASE("every option has a unique name, an env name derived from it, help text and a type") {
  std::set<std::string> names, envs;
  for (const auto& o : option_table()) {
    INFO(o.name);
    CHECK(names.insert(o.name).second);
    CHECK(envs.insert(o.env_name()).second);
    CHECK_FALSE(o.help.empty());
    CHECK_FALSE(o.type_name.empty());
    CHECK(o.apply);
    CHECK(o.show);
  }
  CHECK(find_option("max-slots")->env_name() == "STRATA_MAX_SLOTS");
  CHECK(find_option("port")->env_name() == "STRATA_PORT");
}

TEST_CASE("the options the issues ask for all exist") {
  for (const char* name :
       {"model", "tokenizer", "chat-template", "device", "threads", "max-slots", "ctx-size", "kv-cache-gb",
        "gpu-memory-fraction", "log-format", "log-level", "watchdog-timeout", "watchdog-max-restarts",
        "max-queued", "enable-debug-faults", "debug-faults", "spec", "spec-k", "draft-model", "api-key",
        "api-key-file", "cors-origins", "served-model-name", "max-body-bytes", "shutdown-timeout",
        "reasoning-format", "host", "port"}) {
    INFO(name);
    CHECK(find_option(name) != nullptr);
  }
}

TEST_CASE("YAML keys may use underscores for dashes; unknown names are not found") {
  CHECK(find_option("max_slots") == find_option("max-slots"));
  CHECK(find_option("gpu_memory_fraction") != nullptr);
  CHECK(find_option("max-slot") == nullptr);
  CHECK(find_option("") == nullptr);
}

TEST_CASE("a value shown by the table reads back to the same value through apply") {
  // What help prints as the default must be something the option accepts, or the docs would lie.
  const Config defaults;
  for (const auto& o : option_table()) {
    const std::string shown = o.show(defaults);
    if (shown == "embedded" || shown == "model dir" || shown == "none" || shown == "model dir name" ||
        shown == "from tokenizer_config.json")
      continue;  // placeholders for "unset"
    INFO(o.name << " shows " << shown);
    Config c;
    CHECK_NOTHROW(o.apply(c, {shown}));
    CHECK(o.show(c) == shown);
  }
}

#ifdef STRATA_TEST_HAVE_PARSERS
#include "server/openai/tool_parser.hpp"

TEST_CASE("every --tool-call-parser word but auto is a format the server's parsers know") {
  const OptionSpec* o = find_option("tool-call-parser");
  REQUIRE(o != nullptr);
  const std::string words = o->type_name;  // "{auto,hermes,...}"
  std::vector<std::string> names;
  std::string cur;
  for (char ch : words.substr(1, words.size() - 2)) {
    if (ch == ',') names.push_back(cur), cur.clear();
    else cur += ch;
  }
  names.push_back(cur);
  CHECK(names.size() >= 3);
  for (const auto& n : names) {
    if (n == "auto") continue;
    INFO(n);
    CHECK(tool_format_from_name(n).has_value());
  }
}
#endif
