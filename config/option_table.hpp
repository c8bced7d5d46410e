// Every configurable option, described once: its flag name (which also names the YAML key and the STRATA_*
// environment variable), help text, how a text value becomes a typed field (with its range or choices), and
// how the default is shown. Flags, environment and YAML all go through the same `apply`, which is the one
// place a single value is validated; cross-option rules live in validate_config().
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace strata {

// Which subcommands take an option (a bit set): `generate` needs the model and backend options, `serve`
// needs everything.
enum OptionScope : unsigned {
  kScopeModel = 1u << 0,    // model, tokenizer, device, threads, context ...
  kScopeLogging = 1u << 1,  // log format and level
  kScopeServe = 1u << 2,    // HTTP server, engine supervision, limits
  kScopeAll = ~0u,
};

enum class OptionKind {
  Value,  // one value; given twice, the later wins
  List,   // repeatable; each value may also be a comma-separated list
  Flag,   // boolean; a bare flag means true
};

struct OptionSpec {
  std::string name;       // "max-slots": flag --max-slots, YAML key max-slots (or max_slots), env STRATA_MAX_SLOTS
  std::string group;      // help section
  std::string type_name;  // shown in help: INT, FLOAT, TEXT, BYTES, {cpu,cuda,auto} ...
  std::string help;
  OptionKind kind = OptionKind::Value;
  unsigned scope = kScopeAll;
  // Parses `values` (one for Value/Flag, one or more for List) into the config. Throws ValueError.
  std::function<void(Config&, const std::vector<std::string>& values)> apply;
  // The value in a config as text, for help ("[default: ...]") and for `--print-config`.
  std::function<std::string(const Config&)> show;

  std::string env_name() const;  // STRATA_ + upper-case name with '-' -> '_'
};

const std::vector<OptionSpec>& option_table();
// Looks an option up by flag name or YAML key ("max-slots" or "max_slots"); nullptr when unknown.
const OptionSpec* find_option(const std::string& name_or_key);

}  // namespace strata
