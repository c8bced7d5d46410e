// A model directory -> Model: configs parsed, safetensors mapped, every tensor the architecture reads checked.
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "engine/model/generation_meta.hpp"
#include "engine/model/model_tensors.hpp"
#include "engine/model/weights.hpp"

namespace strata {
namespace {

bool read_if_exists(const std::string& path, std::string* out) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return false;
  if (!S_ISREG(st.st_mode)) throw Error(path + ": not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

}  // namespace

std::unique_ptr<Model> load_model(const std::string& dir, const Model* target) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) throw Error(dir + ": model directory missing");
  auto m = std::make_unique<Model>();
  m->dir = dir;

  std::string config_text, gen_text, tok_text;
  if (!read_if_exists(dir + "/config.json", &config_text)) throw Error(dir + "/config.json: file missing");
  read_if_exists(dir + "/generation_config.json", &gen_text);
  read_if_exists(dir + "/tokenizer_config.json", &tok_text);

  // Errors from the parsers name the file; prefix the directory so a multi-model setup knows which one.
  try {
    m->config = parse_model_config(config_text);
    m->generation = parse_generation_defaults(config_text, gen_text);
    m->tokenizer_meta = parse_tokenizer_meta(tok_text);
  } catch (const Error& e) {
    throw Error(dir + "/" + e.what());
  }
  // transformers >= 4.43 may keep the template in its own file.
  if (m->tokenizer_meta.chat_template.empty()) read_if_exists(dir + "/chat_template.jinja", &m->tokenizer_meta.chat_template);

  m->checkpoint = Checkpoint::open_dir(dir);
  if (m->config.feature_input) {
    const ModelConfig& c = m->config;
    if (!target)
      throw Error(dir + ": a feature draft (" + c.architecture + ") reads its target's embedding and LM head; load it "
                  "as the draft of a target model");
    if (target->config.hidden_size != c.hidden_size || target->config.vocab_size != c.vocab_size)
      throw Error(dir + ": a feature draft of hidden_size " + std::to_string(c.hidden_size) + " and vocab_size " +
                  std::to_string(c.vocab_size) + " cannot read a target of hidden_size " +
                  std::to_string(target->config.hidden_size) + " and vocab_size " +
                  std::to_string(target->config.vocab_size));
    try {
      m->checkpoint->adopt(Checkpoint::open_dir(target->dir), {"model.embed_tokens.weight", "lm_head.weight"});
    } catch (const Error& e) {
      throw Error(dir + ": the target's embedding and LM head (" + target->dir + "): " + e.what());
    }
  }
  // With lm_head.weight absent the output projection is the embedding matrix, whatever the config says.
  if (!m->checkpoint->has("lm_head.weight")) m->config.tie_word_embeddings = true;
  try {
    for (const TensorSpec& t : required_tensors(m->config)) m->checkpoint->get(t.name, t.shape);
  } catch (const Error& e) {
    throw Error(dir + ": " + e.what());
  }
  return m;
}

}  // namespace strata
