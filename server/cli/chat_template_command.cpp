// `strata chat-template`: prints the exact prompt the server would render for a chat request; the
// behaviour lives in engine/template/chat_template_cli.hpp.
#include <iostream>

#include "engine/template/chat_template_cli.hpp"
#include "server/cli/commands.hpp"

namespace strata {

Command add_chat_template_command(CLI::App& root) {
  CLI::App* app = root.add_subcommand("chat-template", "Render a chat request through the model's chat template");
  struct Args {
    std::string tokenizer, template_file, request;
  };
  auto a = std::make_shared<Args>();
  app->add_option("--tokenizer", a->tokenizer, "Directory holding tokenizer_config.json")->required();
  app->add_option("--chat-template", a->template_file, "Jinja template file replacing the model's");
  app->add_option("--request", a->request, "Chat completion request body (JSON file)")->required();
  return {app, [a] {
            return run_chat_template_command(a->tokenizer, a->template_file, a->request, std::cout, std::cerr);
          }};
}

}  // namespace strata
