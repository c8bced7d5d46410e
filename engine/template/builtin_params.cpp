#include "engine/template/builtins.hpp"

#include "engine/template/chat_template.hpp"
#include "engine/template/python_text.hpp"

namespace strata::jinja {

Params::Params(const char* function, const CallArgs& args, std::initializer_list<const char*> names)
    : function_(function), bound_(names.size(), nullptr) {
  if (args.positional.size() > names.size())
    throw TemplateError(std::string(function) + "() takes at most " + std::to_string(names.size()) +
                        " argument(s), " + std::to_string(args.positional.size()) + " given");
  for (size_t i = 0; i < args.positional.size(); ++i) bound_[i] = &args.positional[i];
  for (const auto& [key, value] : args.keyword) {
    size_t i = 0;
    for (const char* n : names) {
      if (key == n) break;
      ++i;
    }
    if (i == names.size()) throw TemplateError(std::string(function) + "() got an unexpected keyword argument '" + key + "'");
    if (bound_[i]) throw TemplateError(std::string(function) + "() got multiple values for argument '" + key + "'");
    bound_[i] = &value;
  }
}

int64_t Params::integer(size_t i, int64_t fallback) const {
  const Value* v = get(i);
  if (!v || v->is_none()) return fallback;
  if (v->is_int() || v->kind() == Kind::Bool) return v->to_int();
  throw TemplateError(std::string(function_) + "(): argument " + std::to_string(i + 1) + " must be an integer, not " +
                      v->type_name());
}

std::string Params::string(size_t i, const std::string& fallback) const {
  const Value* v = get(i);
  if (!v || v->is_none()) return fallback;
  if (v->is_string()) return v->str();
  throw TemplateError(std::string(function_) + "(): argument " + std::to_string(i + 1) + " must be a string, not " +
                      v->type_name());
}

}  // namespace strata::jinja
