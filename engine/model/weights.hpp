// A loaded checkpoint: memory-mapped safetensors files and a table of named tensors (no copies).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/model/model_config.hpp"

namespace strata {

enum class DType { F32, F16, BF16 };
const char* dtype_name(DType);
size_t dtype_size(DType);

struct TensorView {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const void* data = nullptr;  // points into a mapping owned by the Checkpoint
  size_t nbytes = 0;
  int64_t numel() const;
  // Converts any supported dtype to fp32 (a copy).
  std::vector<float> to_f32() const;
};

class MappedFile;  // RAII mmap, defined in safetensors.cpp

// A set of safetensors files (single or sharded through model.safetensors.index.json).
class Checkpoint {
 public:
  // Opens every shard and validates headers: offsets within the file, sizes = shape x dtype. Throws
  // strata::Error naming the file and the problem (missing, truncated, corrupt header, bad offsets).
  static std::unique_ptr<Checkpoint> open_dir(const std::string& model_dir);
  static std::unique_ptr<Checkpoint> open_file(const std::string& safetensors_path);
  ~Checkpoint();

  bool has(const std::string& name) const;
  const TensorView& get(const std::string& name) const;  // throws Error "tensor X missing"
  // Checks shape and returns the tensor; throws Error "tensor X: expected [a, b], found [c, d]".
  const TensorView& get(const std::string& name, const std::vector<int64_t>& shape) const;
  const std::map<std::string, TensorView>& tensors() const { return tensors_; }
  // Takes over `other`'s mappings and adds its tensors named in `names` (those it has; one already here is an
  // Error): a feature draft's checkpoint reads the target's embedding and LM head this way.
  void adopt(std::unique_ptr<Checkpoint> other, const std::vector<std::string>& names);

 private:
  Checkpoint() = default;
  std::vector<std::unique_ptr<MappedFile>> files_;
  std::map<std::string, TensorView> tensors_;
};

// Everything a backend and the engine need from a model directory.
struct Model {
  std::string dir;
  ModelConfig config;
  GenerationDefaults generation;
  TokenizerMeta tokenizer_meta;
  std::unique_ptr<Checkpoint> checkpoint;
};

// Loads config.json, generation_config.json, tokenizer_config.json and the safetensors; checks every tensor
// the architecture needs exists with the right shape. Throws strata::Error with a clear message.
// A feature-reading draft (ModelConfig::feature_input) takes its embedding and LM head from `target`, the
// model it drafts for (a second mapping of the target's files), and needs it: without one it is an Error, as
// is a target whose hidden size or vocabulary differs.
std::unique_ptr<Model> load_model(const std::string& model_dir, const Model* target = nullptr);

}  // namespace strata
