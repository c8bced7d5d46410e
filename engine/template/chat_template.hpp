// Chat templates: a Jinja2 interpreter with transformers' settings, and the conversion of an OpenAI chat
// request into the template's variables (issue: chat templates). Public face only.
#pragma once
#include <memory>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace strata {

// A template that failed to parse (message carries line and column), or failed while rendering.
struct TemplateError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// raise_exception(msg) called by the template: the request's fault (HTTP 400 with msg).
struct TemplateRaise : TemplateError {
  using TemplateError::TemplateError;
};

struct TemplateLimits {
  long max_loop_iterations = 1'000'000;
  int max_recursion_depth = 200;
  size_t max_output_bytes = 64u << 20;
};

class JinjaTemplate {
 public:
  static std::shared_ptr<const JinjaTemplate> compile(const std::string& source,
                                                      TemplateLimits limits = {});  // throws TemplateError
  // Renders with `context` as the global variables (JSON values map to Python values).
  std::string render(const nlohmann::json& context) const;  // throws TemplateError / TemplateRaise
  // Same, keeping the document's key order (nlohmann::json sorts object keys; Python keeps them, and
  // `tojson` output shows the difference).
  std::string render_ordered(const nlohmann::ordered_json& context) const;
  struct Program;
  ~JinjaTemplate();

 private:
  JinjaTemplate() = default;
  friend class ChatTemplate;  // renders prebuilt values without a JSON round trip
  std::unique_ptr<Program> program_;
  TemplateLimits limits_;
};

struct ChatTemplateOptions {
  std::string bos_token, eos_token;
  bool add_generation_prompt = true;
  nlohmann::json extra = nlohmann::json::object();  // chat_template_kwargs, e.g. {"enable_thinking": false}
};

// Renders an OpenAI chat request's `messages` (and `tools` when present) the way transformers'
// apply_chat_template does: text content parts joined with "\n", tool-call arguments parsed into objects
// (or kept as strings for templates that cannot render objects), tools passed only when present.
class ChatTemplate {
 public:
  explicit ChatTemplate(const std::string& source);  // throws TemplateError
  std::string render(const nlohmann::json& messages, const nlohmann::json& tools,
                     const ChatTemplateOptions& options) const;
  // Same, for a request parsed as ordered_json: tools and tool-call arguments keep their key order, so
  // `tools | tojson` matches Python byte for byte.
  std::string render_ordered(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                             const ChatTemplateOptions& options) const;
  bool arguments_as_objects() const { return arguments_as_objects_; }

 private:
  std::shared_ptr<const JinjaTemplate> tpl_;
  bool arguments_as_objects_ = true;  // detected once per template
};

}  // namespace strata
