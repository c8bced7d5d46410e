// The tensors each architecture reads, with their shapes: load_model checks them all up front so a backend
// can take any of them without further checks, and backends use the same names.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/model/model_config.hpp"

namespace strata {

struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;
};

std::string layer_tensor(int layer, const char* suffix);  // "model.layers.<layer>.<suffix>"
// Every tensor the forward pass of `c` reads. lm_head.weight is listed only when embeddings are untied.
std::vector<TensorSpec> required_tensors(const ModelConfig& c);

}  // namespace strata
