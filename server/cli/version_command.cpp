// `strata version`: what this binary is, for bug reports and deployment checks.
#include <iostream>

#include "server/cli/build_info.hpp"
#include "server/cli/commands.hpp"

namespace strata {

Command add_version_command(CLI::App& root) {
  CLI::App* app = root.add_subcommand("version", "Print the version and the compiled-in backends");
  return {app, [] {
            std::cout << "strata " << strata_version() << "\nbackends: cpu" << (built_with_cuda() ? ", cuda" : "")
                      << "\n";
            return kExitOk;
          }};
}

}  // namespace strata
