// Shared helpers of the CUDA backend's tests: fixture discovery, window builders, bit comparisons.
#pragma once
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "engine/core/backend.hpp"
#include "engine/model/weights.hpp"
#include "tests/common/backend_contract.hpp"

namespace strata {
namespace cuda_test {

inline const std::string& models_dir() {
  static const std::string d = std::string(STRATA_SOURCE_DIR) + "/tests/data/models";
  return d;
}

inline std::vector<std::string> golden_dirs() {
  std::vector<std::string> out;
  DIR* d = opendir(models_dir().c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    struct stat st;
    if (name[0] != '.' && stat((models_dir() + "/" + name + "/golden.json").c_str(), &st) == 0)
      out.push_back(models_dir() + "/" + name);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

inline nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

// transformers rounds its rotary inv_freq buffer with model.to(dtype); the goldens were made that way.
inline DType reference_rope_dtype(const nlohmann::json& golden) {
  std::string t = golden.value("rope_inv_freq_dtype", golden.value("storage_dtype", std::string("float32")));
  if (t.rfind("torch.", 0) == 0) t = t.substr(6);
  if (t == "bfloat16") return DType::BF16;
  if (t == "float16") return DType::F16;
  return DType::F32;
}

// The window builders every backend's tests share.
using backend_test::chunk;
using backend_test::prompt_tokens;
using backend_test::row;
using backend_test::same_bits;

inline float max_abs(const std::vector<float>& v) {
  float m = 0.0f;
  for (float x : v) m = std::max(m, std::fabs(x));
  return m;
}

// The largest |a - b| over a row, relative to the row's scale (max |b|, at least 1).
inline float max_rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size() || a.empty()) return INFINITY;
  float d = 0.0f;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
  return d / std::max(1.0f, max_abs(b));
}

}  // namespace cuda_test
}  // namespace strata
