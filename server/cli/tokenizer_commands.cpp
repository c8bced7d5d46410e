// `strata tokenize` / `strata detokenize`: thin wiring to the tokenizer's command functions, which own the
// behaviour (and are tested without a process).
#include <iostream>

#include "engine/tokenizer/tokenizer_cli.hpp"
#include "server/cli/commands.hpp"

namespace strata {
namespace {

struct TokenizerArgs {
  std::string tokenizer;
  bool special = false;
  bool lines = false;
};

}  // namespace

Command add_tokenize_command(CLI::App& root) {
  CLI::App* app = root.add_subcommand("tokenize", "UTF-8 text on stdin -> JSON array of token ids on stdout");
  auto a = std::make_shared<TokenizerArgs>();
  app->add_option("--tokenizer", a->tokenizer, "tokenizer.json or a directory holding it")->required();
  app->add_flag("--add-special-tokens", a->special, "Apply the post-processor (BOS/EOS) as transformers does");
  app->add_flag("--lines", a->lines, "Each stdin line is one JSON string; one id array per output line");
  return {app, [a] {
            return a->lines ? run_tokenize_lines_command(a->tokenizer, a->special, std::cin, std::cout, std::cerr)
                            : run_tokenize_command(a->tokenizer, a->special, std::cin, std::cout, std::cerr);
          }};
}

Command add_detokenize_command(CLI::App& root) {
  CLI::App* app = root.add_subcommand("detokenize", "JSON array of token ids on stdin -> text on stdout");
  auto a = std::make_shared<TokenizerArgs>();
  app->add_option("--tokenizer", a->tokenizer, "tokenizer.json or a directory holding it")->required();
  app->add_flag("--skip-special-tokens", a->special, "Leave special tokens out of the text");
  app->add_flag("--lines", a->lines, "Each stdin line is one JSON id array; one JSON string per output line");
  return {app, [a] {
            return a->lines ? run_detokenize_lines_command(a->tokenizer, a->special, std::cin, std::cout, std::cerr)
                            : run_detokenize_command(a->tokenizer, a->special, std::cin, std::cout, std::cerr);
          }};
}

}  // namespace strata
