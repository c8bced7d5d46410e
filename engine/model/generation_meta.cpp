#include "engine/model/generation_meta.hpp"

#include <algorithm>

#include "engine/model/json_fields.hpp"

namespace strata {
namespace {

void add_ids(const nlohmann::json& j, const std::string& where, const char* key, std::vector<TokenId>* out) {
  if (!j.contains(key) || j[key].is_null()) return;
  const auto& v = j[key];
  auto add = [&](const nlohmann::json& x) {
    if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() > INT32_MAX)
      throw Error(where + ": " + key + " must be a token id or a list of token ids, found " + v.dump());
    TokenId id = TokenId(x.get<int64_t>());
    if (std::find(out->begin(), out->end(), id) == out->end()) out->push_back(id);
  };
  if (v.is_array()) {
    for (const auto& x : v) add(x);
  } else {
    add(v);
  }
}

int first_id(const nlohmann::json& j, const std::string& where, const char* key) {
  std::vector<TokenId> ids;
  add_ids(j, where, key, &ids);
  return ids.empty() ? -1 : ids.front();
}

std::string special_token(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return "";
  const auto& v = j[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  throw Error(std::string("tokenizer_config.json: ") + key + " must be a string or {\"content\": string}, found " +
              v.dump());
}

}  // namespace

GenerationDefaults parse_generation_defaults(const std::string& config_text, const std::string& gen_text) {
  GenerationDefaults g;
  const nlohmann::json config = parse_json_object(config_text, "config.json");
  nlohmann::json gen = nlohmann::json::object();
  if (!gen_text.empty()) gen = parse_json_object(gen_text, "generation_config.json");

  add_ids(gen, "generation_config.json", "eos_token_id", &g.eos_token_ids);
  add_ids(config, "config.json", "eos_token_id", &g.eos_token_ids);
  g.bos_token_id = first_id(gen, "generation_config.json", "bos_token_id");
  if (g.bos_token_id < 0) g.bos_token_id = first_id(config, "config.json", "bos_token_id");

  JsonFields f(gen, "generation_config.json");
  g.temperature = float(f.number("temperature", -1.0));
  g.top_p = float(f.number("top_p", -1.0));
  g.top_k = int(f.integer("top_k", -1));
  return g;
}

TokenizerMeta parse_tokenizer_meta(const std::string& text) {
  TokenizerMeta m;
  if (text.empty()) return m;
  const nlohmann::json j = parse_json_object(text, "tokenizer_config.json");
  m.bos_token = special_token(j, "bos_token");
  m.eos_token = special_token(j, "eos_token");
  m.add_bos_token = JsonFields(j, "tokenizer_config.json").boolean("add_bos_token", false);
  if (j.contains("chat_template") && !j["chat_template"].is_null()) {
    const auto& t = j["chat_template"];
    if (t.is_string()) {
      m.chat_template = t.get<std::string>();
    } else if (t.is_array()) {
      for (const auto& e : t) {
        if (!e.is_object() || !e.contains("name") || !e.contains("template") || !e["name"].is_string() ||
            !e["template"].is_string())
          throw Error("tokenizer_config.json: chat_template list entries must be {\"name\", \"template\"} strings");
        if (e["name"].get<std::string>() == "default") m.chat_template = e["template"].get<std::string>();
      }
    } else {
      throw Error("tokenizer_config.json: chat_template must be a string or a list of {name, template}, found " +
                  t.dump().substr(0, 80));
    }
  }
  return m;
}

}  // namespace strata
