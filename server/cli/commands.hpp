// The subcommands of the `strata` binary. Each add_*_command() registers its CLI11 subcommand on the root
// app and returns the function main runs when that subcommand was chosen; the function returns the process
// exit code. Exit codes are shared by every command: 0 success, 1 a runtime failure (model or tokenizer
// that cannot be loaded, generation error), 2 a bad command line or configuration.
#pragma once
#include <functional>

#include <CLI/CLI.hpp>

namespace strata {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

Command add_serve_command(CLI::App& root);
Command add_generate_command(CLI::App& root);
Command add_tokenize_command(CLI::App& root);
Command add_detokenize_command(CLI::App& root);
Command add_chat_template_command(CLI::App& root);
Command add_version_command(CLI::App& root);
Command add_bench_command(CLI::App& root);

}  // namespace strata
