// The layers a Config is built from, applied in increasing precedence: defaults <- YAML file <- environment
// <- flags. Each layer records where every value it set came from, so an error can say "from env STRATA_PORT"
// or "from strata.yaml:7" and `strata serve --print-config` can show the origin of each setting.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "config/option_table.hpp"

namespace strata {

// option name -> "flag --port", "env STRATA_PORT", "FILE:LINE"; options left at their default are absent.
using SourceMap = std::map<std::string, std::string>;

// Reads one environment variable; injectable so tests do not mutate the process environment.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
EnvLookup process_environment();

// Runs option.apply and turns a ValueError into a ConfigError naming the option and the source.
void apply_option(Config& config, SourceMap& sources, const OptionSpec& option,
                  const std::vector<std::string>& values, const std::string& source);

// A YAML mapping of option names (as flags, without "--"; '_' and '-' alike) to values; lists may be YAML
// sequences. Unknown keys are errors (a typo must not silently leave a default in place); known options
// outside `scope` are skipped so one file can serve several subcommands.
void apply_yaml_file(Config& config, SourceMap& sources, const std::string& path, unsigned scope);
void apply_environment(Config& config, SourceMap& sources, const EnvLookup& env, unsigned scope);

// The rules that involve more than one option or the file system, checked once all layers are applied:
// --debug-faults needs --enable-debug-faults, --spec draft needs --draft-model, --api-key-file and
// --chat-template must be readable (their contents are loaded here). Throws ConfigError.
void validate_config(Config& config, const SourceMap& sources);

}  // namespace strata
