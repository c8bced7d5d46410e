// The `strata` binary: parses the command line, runs the chosen subcommand (server/cli/), and turns every
// failure into an exit code with a message: 2 for a bad command line or configuration, 1 for anything that
// fails at run time. Nothing escapes as an uncaught exception.
#include <iostream>
#include <vector>

#include "config/config.hpp"
#include "engine/logging/logging.hpp"
#include "server/cli/commands.hpp"

int main(int argc, char** argv) {
  using namespace strata;
  // Until a command configures logging, lines go to stderr as text (spdlog's own default writes to stdout,
  // which belongs to command output).
  setup_logging(LogFormat::Text, spdlog::level::info);

  CLI::App root{"Strata: an OpenAI-compatible LLM inference server", "strata"};
  root.require_subcommand(1);
  std::vector<Command> commands = {add_serve_command(root),      add_generate_command(root),
                                   add_tokenize_command(root),   add_detokenize_command(root),
                                   add_chat_template_command(root), add_version_command(root),
                                   add_bench_command(root)};
  try {
    root.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return root.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return root.exit(e);
  } catch (const CLI::ParseError& e) {
    root.exit(e);  // prints the message and a pointer to --help
    return kExitUsage;
  }

  for (const Command& c : commands) {
    if (!c.app->parsed()) continue;
    try {
      return c.run();
    } catch (const ConfigError& e) {
      std::cerr << "strata " << c.app->get_name() << ": " << e.what() << "\n";
      return kExitUsage;
    } catch (const std::exception& e) {
      spdlog::error("{}", e.what());
      return kExitFailure;
    }
  }
  return kExitUsage;
}
