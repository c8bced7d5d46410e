#include "config/config_sources.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "config/value_parse.hpp"

namespace strata {
namespace {

std::string where(const SourceMap& sources, const std::string& name) {
  auto it = sources.find(name);
  return it == sources.end() ? "default" : it->second;
}

[[noreturn]] void fail(const std::string& name, const std::string& what, const SourceMap& sources) {
  throw ConfigError("--" + name + ": " + what + " (from " + where(sources, name) + ")");
}

std::string read_file(const std::string& path, bool& ok) {
  std::ifstream in(path, std::ios::binary);
  ok = static_cast<bool>(in);
  std::ostringstream os;
  if (ok) os << in.rdbuf();
  return os.str();
}

std::string line_of(const std::string& path, const YAML::Node& node) {
  return path + ":" + std::to_string(node.Mark().line + 1);
}

}  // namespace

EnvLookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
}

void apply_option(Config& config, SourceMap& sources, const OptionSpec& option,
                  const std::vector<std::string>& values, const std::string& source) {
  try {
    option.apply(config, values);
  } catch (const ValueError& e) {
    throw ConfigError("--" + option.name + ": " + e.what() + " (from " + source + ")");
  }
  sources[option.name] = source;
}

void apply_yaml_file(Config& config, SourceMap& sources, const std::string& path, unsigned scope) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw ConfigError("--config: cannot read '" + path + "'");
  } catch (const YAML::ParserException& e) {
    throw ConfigError(path + ":" + std::to_string(e.mark.line + 1) + ": invalid YAML: " + e.msg);
  }
  if (root.IsNull()) return;  // an empty file configures nothing
  if (!root.IsMap())
    throw ConfigError(line_of(path, root) + ": expected a mapping of option names to values");
  for (const auto& entry : root) {
    const YAML::Node& key = entry.first;
    const YAML::Node& value = entry.second;
    const std::string at = line_of(path, key);
    if (!key.IsScalar()) throw ConfigError(at + ": option names must be plain words");
    const OptionSpec* option = find_option(key.Scalar());
    if (!option) throw ConfigError(at + ": unknown option '" + key.Scalar() + "' (see strata serve --help)");
    if (!(option->scope & scope)) continue;
    std::vector<std::string> values;
    if (value.IsScalar()) {
      values.push_back(value.Scalar());
    } else if (value.IsSequence() && option->kind == OptionKind::List) {
      for (const auto& item : value) {
        if (!item.IsScalar())
          throw ConfigError("--" + option->name + ": list items must be plain values (from " +
                            line_of(path, item) + ")");
        values.push_back(item.Scalar());
      }
    } else if (value.IsNull()) {
      throw ConfigError("--" + option->name + ": no value given (from " + at + ")");
    } else {
      throw ConfigError("--" + option->name + ": expected " +
                        (option->kind == OptionKind::List ? "a value or a list of values" : "a single value") +
                        " (from " + at + ")");
    }
    apply_option(config, sources, *option, values, at);
  }
}

void apply_environment(Config& config, SourceMap& sources, const EnvLookup& env, unsigned scope) {
  for (const auto& option : option_table()) {
    if (!(option.scope & scope)) continue;
    const std::string name = option.env_name();
    if (auto value = env(name)) apply_option(config, sources, option, {*value}, "env " + name);
  }
}

void validate_config(Config& config, const SourceMap& sources) {
  if (!config.faults.spec.empty() && !config.faults.enable)
    fail("debug-faults", "refused unless --enable-debug-faults is also set", sources);
  if (config.spec.mode == SpecMode::Draft && config.spec.draft_model.empty())
    fail("spec", "'draft' needs --draft-model DIR", sources);

  if (!config.api_key_file.empty()) {
    bool ok = false;
    const std::string text = read_file(config.api_key_file, ok);
    if (!ok) fail("api-key-file", "cannot read '" + config.api_key_file + "'", sources);
    std::istringstream lines(text);
    std::string line;
    int added = 0;
    while (std::getline(lines, line)) {
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
      size_t b = line.find_first_not_of(" \t");
      if (b == std::string::npos || line[b] == '#') continue;
      config.server.api_keys.push_back(line.substr(b));
      ++added;
    }
    // An empty key file would silently turn authentication off, which is never what its author meant.
    if (added == 0) fail("api-key-file", "'" + config.api_key_file + "' holds no key", sources);
  }
  for (const auto& key : config.server.api_keys)
    if (key.empty()) fail("api-key", "keys must not be empty", sources);

  if (!config.model.chat_template_file.empty()) {
    bool ok = false;
    config.server.chat_template_override = read_file(config.model.chat_template_file, ok);
    if (!ok) fail("chat-template", "cannot read '" + config.model.chat_template_file + "'", sources);
  }
}

}  // namespace strata
