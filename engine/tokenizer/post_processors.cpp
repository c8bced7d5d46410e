#include "engine/tokenizer/post_processors.hpp"

#include <nlohmann/json.hpp>

#include "engine/tokenizer/json_fields.hpp"

namespace strata {

namespace {

using nlohmann::json;

// A single-sequence template: the ids to put before and after the sequence A.
class Template final : public PostProcessor {
 public:
  Template(std::vector<TokenId> before, std::vector<TokenId> after)
      : before_(std::move(before)), after_(std::move(after)) {}
  void process(std::vector<TokenId>& ids, bool add_special) const override {
    if (!add_special) return;
    ids.insert(ids.begin(), before_.begin(), before_.end());
    ids.insert(ids.end(), after_.begin(), after_.end());
  }

 private:
  std::vector<TokenId> before_, after_;
};

class NoOp final : public PostProcessor {
 public:
  void process(std::vector<TokenId>&, bool) const override {}
};

class Sequence final : public PostProcessor {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PostProcessor>> parts) : parts_(std::move(parts)) {}
  void process(std::vector<TokenId>& ids, bool add_special) const override {
    for (const auto& p : parts_) p->process(ids, add_special);
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> parts_;
};

std::unique_ptr<PostProcessor> template_processing(const json& j, const std::string& what) {
  const json& single = field(j, "single", what);
  if (!single.is_array()) throw Error(what + ": \"single\" must be an array");
  const json& specials = j.contains("special_tokens") ? j["special_tokens"] : json::object();
  std::vector<TokenId> before, after;
  bool seen_sequence = false;
  for (const auto& item : single) {
    if (item.contains("Sequence")) {
      const std::string id = string_field(item["Sequence"], "id", what);
      if (id != "A") throw Error(what + ": the single template may only hold sequence A, not " + id);
      seen_sequence = true;
    } else if (item.contains("SpecialToken")) {
      const std::string name = string_field(item["SpecialToken"], "id", what);
      auto it = specials.find(name);
      if (it == specials.end()) throw Error(what + ": special token \"" + name + "\" is not in special_tokens");
      const json& ids = field(*it, "ids", what + " special token " + name);
      if (!ids.is_array()) throw Error(what + ": special token \"" + name + "\" ids must be an array");
      for (const auto& id : ids) {
        if (!id.is_number_integer()) throw Error(what + ": special token \"" + name + "\" ids must be integers");
        (seen_sequence ? after : before).push_back(id.get<TokenId>());
      }
    } else {
      throw Error(what + ": template items must be Sequence or SpecialToken");
    }
  }
  return std::make_unique<Template>(std::move(before), std::move(after));
}

// Bert: [CLS] A [SEP]; Roberta: <s> A </s>. Both name their tokens as [string, id].
std::unique_ptr<PostProcessor> wrap_processing(const json& j, const char* open, const char* close,
                                               const std::string& what) {
  auto id_of = [&](const char* key) {
    const json& v = field(j, key, what);
    if (!v.is_array() || v.size() != 2 || !v[1].is_number_integer())
      throw Error(what + ": \"" + key + "\" must be [token, id]");
    return v[1].get<TokenId>();
  };
  return std::make_unique<Template>(std::vector<TokenId>{id_of(open)}, std::vector<TokenId>{id_of(close)});
}

}  // namespace

std::unique_ptr<PostProcessor> make_post_processor(const json& j) {
  if (j.is_null()) return nullptr;
  const std::string type = component_type(j, "post_processor");
  const std::string what = "post_processor " + type;
  if (type == "TemplateProcessing") return template_processing(j, what);
  if (type == "ByteLevel") return std::make_unique<NoOp>();  // it only adjusts offsets, never ids
  if (type == "BertProcessing") return wrap_processing(j, "cls", "sep", what);
  if (type == "RobertaProcessing") return wrap_processing(j, "cls", "sep", what);
  if (type == "Sequence") {
    std::vector<std::unique_ptr<PostProcessor>> parts;
    const json& list = field(j, "processors", what);
    if (!list.is_array()) throw Error(what + ": \"processors\" must be an array");
    for (const auto& item : list)
      if (auto p = make_post_processor(item)) parts.push_back(std::move(p));
    return std::make_unique<Sequence>(std::move(parts));
  }
  throw Error("tokenizer.json: unsupported post_processor type \"" + type + "\"");
}

}  // namespace strata
