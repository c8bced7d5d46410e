// Binds the option table to a CLI11 (sub)command. Every option is registered as raw text so that CLI11
// only splits the command line; conversion and validation go through the same OptionSpec::apply as YAML
// and environment values, with the same messages.
#pragma once
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "config/config.hpp"
#include "config/config_sources.hpp"

namespace strata {

class ConfigCli {
 public:
  // Adds --config FILE and every option whose scope intersects `scope` to `app`.
  ConfigCli(CLI::App& app, unsigned scope);

  // After app.parse(): defaults <- YAML (--config, else STRATA_CONFIG) <- environment <- flags, then
  // validate_config(). Throws ConfigError.
  Config build(const EnvLookup& env = process_environment());
  // Where each non-default value of the last build() came from.
  const SourceMap& sources() const { return sources_; }

 private:
  struct Bound {
    const OptionSpec* spec;
    CLI::Option* option;
  };
  unsigned scope_;
  CLI::Option* config_option_ = nullptr;
  std::vector<Bound> bound_;
  SourceMap sources_;
};

// One line per option in scope: name, effective value and its source (secrets masked), for
// `--print-config` and for the startup log.
std::string describe_config(const Config& config, const SourceMap& sources, unsigned scope);

}  // namespace strata
