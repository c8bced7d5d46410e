// Pre-tokenizers: cut a normalized section into the pieces ("words") the model encodes one by one.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace strata {

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces each piece by its sub-pieces, in order; empty pieces are dropped. `at_start` says that
  // pieces[0] begins at offset 0 of the whole input (Metaspace's prepend_scheme "first" needs it).
  virtual void pre_tokenize(std::vector<std::string>& pieces, bool at_start) const = 0;
};

// nullptr for a JSON null. Throws strata::Error naming an unknown or malformed type.
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& j);

}  // namespace strata
