// Helpers for config tests: parse an argument list through a real CLI11 app with a fake environment, and
// write temporary YAML files.
#pragma once
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "config/config_cli.hpp"

namespace strata::test {

using Env = std::map<std::string, std::string>;

inline EnvLookup fake_env(const Env& env) {
  return [env](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
}

struct Built {
  Config config;
  SourceMap sources;
};

// Parses `args` (without the program name) as `serve` would, then builds the config. Throws ConfigError
// (or CLI::ParseError for a command line CLI11 itself refuses).
inline Built build(const std::vector<std::string>& args, const Env& env = {}, unsigned scope = kScopeAll) {
  CLI::App app{"test"};
  ConfigCli cli(app, scope);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them back to front
  app.parse(reversed);
  Built b;
  b.config = cli.build(fake_env(env));
  b.sources = cli.sources();
  return b;
}

// A file in a fresh temporary directory, removed with the object.
class TempFile {
 public:
  TempFile(const std::string& name, const std::string& contents) {
    dir_ = std::filesystem::temp_directory_path() /
           ("strata-config-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / name).string();
    std::ofstream(path_, std::ios::binary) << contents;
  }
  ~TempFile() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  static int& counter() {
    static int n = 0;
    return n;
  }
  std::filesystem::path dir_;
  std::string path_;
};

}  // namespace strata::test
