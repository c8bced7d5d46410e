// JinjaTemplate: compile once (parse errors surface at load, with line and column), render many times.
// A compiled template is immutable, so one instance serves concurrent requests; each render gets its
// own Interpreter.
#include "engine/template/chat_template.hpp"
#include "engine/template/interpreter.hpp"
#include "engine/template/jinja_program.hpp"
#include "engine/template/json_values.hpp"
#include "engine/template/parser.hpp"

namespace strata {

JinjaTemplate::~JinjaTemplate() = default;

std::shared_ptr<const JinjaTemplate> JinjaTemplate::compile(const std::string& source, TemplateLimits limits) {
  std::shared_ptr<JinjaTemplate> t(new JinjaTemplate());
  t->program_ = std::make_unique<Program>();
  t->program_->ast = jinja::parse_template(source, limits.max_recursion_depth);
  t->limits_ = limits;
  return t;
}

std::string JinjaTemplate::Program::render(std::shared_ptr<jinja::Dict> context, const TemplateLimits& limits) const {
  jinja::Interpreter interpreter(*ast, limits);
  return interpreter.render(std::move(context));
}

namespace {

template <class Json>
std::shared_ptr<jinja::Dict> context_dict(const Json& context) {
  if (context.is_null()) return std::make_shared<jinja::Dict>();
  if (!context.is_object()) throw TemplateError("template context must be a JSON object");
  jinja::Value v = jinja::from_json(context);
  return std::static_pointer_cast<jinja::Dict>(v.object());
}

}  // namespace

std::string JinjaTemplate::render(const nlohmann::json& context) const {
  return program_->render(context_dict(context), limits_);
}

std::string JinjaTemplate::render_ordered(const nlohmann::ordered_json& context) const {
  return program_->render(context_dict(context), limits_);
}

}  // namespace strata
