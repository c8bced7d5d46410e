// Normalizers: rewrite a section of input text before pre-tokenization (tokenizer.json "normalizer").
#pragma once
#include <memory>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace strata {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // Input and output are valid UTF-8.
  virtual void normalize(std::string& text) const = 0;
};

// nullptr for a JSON null. Throws strata::Error naming an unknown or malformed type.
std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json& j);

}  // namespace strata
