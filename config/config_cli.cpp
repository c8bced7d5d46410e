#include "config/config_cli.hpp"

#include <sstream>

namespace strata {

ConfigCli::ConfigCli(CLI::App& app, unsigned scope) : scope_(scope) {
  config_option_ = app.add_option("--config", CLI::callback_t{},
                                  "YAML file of option: value pairs (same names as the flags). Env: STRATA_CONFIG")
                       ->type_name("FILE")
                       ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  const Config defaults;
  for (const auto& spec : option_table()) {
    if (!(spec.scope & scope)) continue;
    const std::string help = spec.help + ". Default: " + spec.show(defaults) + ". Env: " + spec.env_name();
    CLI::Option* opt = nullptr;
    if (spec.kind == OptionKind::Flag) {
      opt = app.add_flag("--" + spec.name, help);
    } else {
      opt = app.add_option("--" + spec.name, CLI::callback_t{}, help)->type_name(spec.type_name);
      opt->multi_option_policy(spec.kind == OptionKind::List ? CLI::MultiOptionPolicy::TakeAll
                                                             : CLI::MultiOptionPolicy::TakeLast);
    }
    opt->group(spec.group);
    bound_.push_back({&spec, opt});
  }
}

Config ConfigCli::build(const EnvLookup& env) {
  Config config;
  sources_.clear();

  std::string file;
  if (config_option_->count() > 0) {
    file = config_option_->results().back();
  } else if (auto from_env = env("STRATA_CONFIG")) {
    file = *from_env;
  }
  if (!file.empty()) {
    apply_yaml_file(config, sources_, file, scope_);
    config.config_file = file;
  }

  apply_environment(config, sources_, env, scope_);

  for (const auto& b : bound_) {
    if (b.option->count() == 0) continue;
    std::vector<std::string> values = b.option->results();
    if (b.spec->kind != OptionKind::List) values = {values.back()};
    apply_option(config, sources_, *b.spec, values, "flag --" + b.spec->name);
  }

  validate_config(config, sources_);
  return config;
}

std::string describe_config(const Config& config, const SourceMap& sources, unsigned scope) {
  std::ostringstream os;
  if (!config.config_file.empty()) os << "# config file: " << config.config_file << "\n";
  for (const auto& spec : option_table()) {
    if (!(spec.scope & scope)) continue;
    auto it = sources.find(spec.name);
    os << spec.name << " = " << spec.show(config) << "  ("
       << (it == sources.end() ? std::string("default") : it->second) << ")\n";
  }
  return os.str();
}

}  // namespace strata
