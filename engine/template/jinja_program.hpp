// The compiled form behind JinjaTemplate's public face (shared by jinja_template.cpp and chat_template.cpp).
#pragma once
#include <memory>

#include "engine/template/ast.hpp"
#include "engine/template/chat_template.hpp"

namespace strata {

struct JinjaTemplate::Program {
  std::unique_ptr<jinja::Program> ast;
  std::string render(std::shared_ptr<jinja::Dict> context, const TemplateLimits& limits) const;
};

}  // namespace strata
