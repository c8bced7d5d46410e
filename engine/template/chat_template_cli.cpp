#include "engine/template/chat_template_cli.hpp"

#include <fstream>
#include <sstream>

#include "engine/template/chat_template.hpp"

namespace strata {
namespace {

bool read_file(const std::string& path, std::string& text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  text = ss.str();
  return true;
}

nlohmann::ordered_json read_json(const std::string& path) {
  std::string text;
  if (!read_file(path, text)) throw TemplateError("cannot read " + path);
  auto j = nlohmann::ordered_json::parse(text, nullptr, false);
  if (j.is_discarded()) throw TemplateError(path + " is not valid JSON");
  return j;
}

std::string token_text(const nlohmann::ordered_json& config, const char* field, const std::string& path) {
  auto it = config.find(field);
  if (it == config.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) {
    auto content = it->find("content");
    if (content != it->end() && content->is_string()) return content->get<std::string>();
  }
  throw TemplateError(path + ": " + field + " must be a string or an object with a string 'content'");
}

}  // namespace

ModelChatTemplate load_model_chat_template(const std::string& tokenizer_dir) {
  std::string path = tokenizer_dir + "/tokenizer_config.json";
  nlohmann::ordered_json config = read_json(path);
  if (!config.is_object()) throw TemplateError(path + " must hold a JSON object");
  ModelChatTemplate model;
  model.bos_token = token_text(config, "bos_token", path);
  model.eos_token = token_text(config, "eos_token", path);
  auto tpl = config.find("chat_template");
  if (tpl != config.end() && tpl->is_string()) {
    model.source = tpl->get<std::string>();
  } else if (tpl != config.end() && tpl->is_array()) {
    for (const auto& entry : *tpl) {
      if (entry.is_object() && entry.value("name", "") == "default" && entry.contains("template") &&
          entry["template"].is_string())
        model.source = entry["template"].get<std::string>();
    }
    if (model.source.empty()) throw TemplateError(path + ": chat_template list has no template named 'default'");
  } else if (tpl != config.end() && !tpl->is_null()) {
    throw TemplateError(path + ": chat_template must be a string or a list of {name, template}");
  } else if (!read_file(tokenizer_dir + "/chat_template.jinja", model.source)) {
    throw TemplateError(path + " has no chat_template and " + tokenizer_dir + "/chat_template.jinja does not exist");
  }
  return model;
}

int run_chat_template_command(const std::string& tokenizer_dir, const std::string& template_file,
                              const std::string& request_json_path, std::ostream& out, std::ostream& err) {
  try {
    ModelChatTemplate model = load_model_chat_template(tokenizer_dir);
    if (!template_file.empty() && !read_file(template_file, model.source))
      throw TemplateError("cannot read chat template file " + template_file);
    nlohmann::ordered_json request = read_json(request_json_path);
    if (!request.is_object()) throw TemplateError(request_json_path + " must hold a JSON object (a chat completion request)");
    if (!request.contains("messages")) throw TemplateError(request_json_path + ": 'messages' is required");
    ChatTemplateOptions options;
    options.bos_token = model.bos_token;
    options.eos_token = model.eos_token;
    if (auto agp = request.find("add_generation_prompt"); agp != request.end() && !agp->is_null()) {
      if (!agp->is_boolean()) throw TemplateError(request_json_path + ": 'add_generation_prompt' must be a boolean");
      options.add_generation_prompt = agp->get<bool>();
    }
    if (auto kwargs = request.find("chat_template_kwargs"); kwargs != request.end() && !kwargs->is_null()) {
      if (!kwargs->is_object()) throw TemplateError(request_json_path + ": 'chat_template_kwargs' must be an object");
      options.extra = nlohmann::json::parse(kwargs->dump());
    }
    nlohmann::ordered_json tools = request.contains("tools") ? request["tools"] : nlohmann::ordered_json();
    ChatTemplate tpl(model.source);
    out << tpl.render_ordered(request["messages"], tools, options);
    out.flush();
    return 0;
  } catch (const TemplateError& e) {
    err << "chat-template: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    err << "chat-template: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace strata
