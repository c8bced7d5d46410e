// `strata chat-template`: renders a chat completion request through a model's chat template and prints
// exactly the prompt the server would tokenize. The subcommand wiring lives with the CLI; this is the
// behaviour, so it can be tested without a process.
#pragma once
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

namespace strata {

// What a model directory says about its chat template: the template source (tokenizer_config.json's
// `chat_template`, a string or a list of {name, template} where "default" is used, or chat_template.jinja)
// and the BOS/EOS token strings (a string or an object with `content`; empty when absent).
struct ModelChatTemplate {
  std::string source;
  std::string bos_token, eos_token;
};
// Throws TemplateError naming the file and field on a missing file, bad JSON or missing template.
ModelChatTemplate load_model_chat_template(const std::string& tokenizer_dir);

// Prints the rendered prompt of the request body at request_json_path (messages, tools,
// add_generation_prompt, chat_template_kwargs) to `out`, nothing else. template_file, when not empty,
// replaces the model's template. Returns 0, or 1 with the error message on `err`.
int run_chat_template_command(const std::string& tokenizer_dir, const std::string& template_file,
                              const std::string& request_json_path, std::ostream& out, std::ostream& err);

}  // namespace strata
