// Small helpers for the interpreter tests: render a template source with a JSON context.
#pragma once
#include <string>

#include "engine/template/chat_template.hpp"

namespace strata::test {

inline std::string render(const std::string& source, const std::string& context_json = "{}",
                          TemplateLimits limits = {}) {
  return JinjaTemplate::compile(source, limits)->render_ordered(nlohmann::ordered_json::parse(context_json));
}

// The message of the TemplateError the template raises at compile or render time ("" when none).
inline std::string error_of(const std::string& source, const std::string& context_json = "{}",
                            TemplateLimits limits = {}) {
  try {
    render(source, context_json, limits);
  } catch (const TemplateError& e) {
    return e.what();
  }
  return "";
}

}  // namespace strata::test
