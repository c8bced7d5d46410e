// Post-processors: what encode(..., add_special_tokens=true) adds around the ids (BOS/EOS, CLS/SEP).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "engine/core/types.hpp"

namespace strata {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // With add_special false every processor leaves the ids as they are.
  virtual void process(std::vector<TokenId>& ids, bool add_special) const = 0;
};

// nullptr for a JSON null. Throws strata::Error naming an unknown or malformed type.
std::unique_ptr<PostProcessor> make_post_processor(const nlohmann::json& j);

}  // namespace strata
