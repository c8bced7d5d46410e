// What a checkpoint says about generation beyond the network: EOS/BOS ids and sampling defaults
// (generation_config.json, config.json) and the tokenizer's special strings and chat template
// (tokenizer_config.json). An absent optional file is passed as "".
#pragma once
#include <string>

#include "engine/model/model_config.hpp"

namespace strata {

// eos ids are the union, in first-seen order, of generation_config.json's and config.json's eos_token_id (an
// integer or a list of integers). Throws strata::Error naming the file and field.
GenerationDefaults parse_generation_defaults(const std::string& config_json_text,
                                             const std::string& generation_config_json_text);

// bos/eos tokens may be strings or {"content": ...}; chat_template a string or a list of {name, template}, of
// which "default" is taken.
TokenizerMeta parse_tokenizer_meta(const std::string& tokenizer_config_json_text);

}  // namespace strata
