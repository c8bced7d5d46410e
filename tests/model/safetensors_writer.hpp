// Test helper: writes small safetensors files byte by byte, including deliberately broken ones, so the
// reader's error paths are pinned against files whose every byte the test chose.
#pragma once
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace strata_test {

struct FakeTensor {
  std::string name;
  std::string dtype;  // "F32", "F16", "BF16", or anything else to test rejection
  std::vector<int64_t> shape;
  std::vector<unsigned char> bytes;
};

inline FakeTensor f32_tensor(const std::string& name, std::vector<int64_t> shape, float start = 0.0f) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  FakeTensor t{name, "F32", shape, std::vector<unsigned char>(size_t(n) * 4)};
  for (int64_t i = 0; i < n; ++i) {
    float v = start + float(i);
    std::memcpy(&t.bytes[size_t(i) * 4], &v, 4);
  }
  return t;
}

// The header JSON and data of a well-formed file for these tensors.
inline nlohmann::json header_for(const std::vector<FakeTensor>& ts, std::vector<unsigned char>* data) {
  nlohmann::json h = nlohmann::json::object();
  h["__metadata__"] = {{"format", "pt"}};
  for (const auto& t : ts) {
    const size_t begin = data->size();
    data->insert(data->end(), t.bytes.begin(), t.bytes.end());
    h[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {begin, data->size()}}};
  }
  return h;
}

inline void write_raw(const std::string& path, const std::string& header, const std::vector<unsigned char>& data,
                      uint64_t declared_len) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  unsigned char len[8];
  for (int i = 0; i < 8; ++i) len[i] = (unsigned char)(declared_len >> (8 * i));
  out.write(reinterpret_cast<const char*>(len), 8);
  out.write(header.data(), std::streamsize(header.size()));
  out.write(reinterpret_cast<const char*>(data.data()), std::streamsize(data.size()));
}

inline void write_safetensors(const std::string& path, const std::vector<FakeTensor>& ts) {
  std::vector<unsigned char> data;
  const std::string header = header_for(ts, &data).dump();
  write_raw(path, header, data, header.size());
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// A fresh, empty directory for one test: under the build tree, or under $TMPDIR (/tmp) where the build tree
// is not there (test binaries carried to another machine, as the GPU tests are).
inline std::string scratch_dir(const std::string& name) {
  std::string root = std::string(STRATA_BINARY_DIR) + "/test_scratch";
  struct stat st;
  if (::mkdir(root.c_str(), 0755) != 0 && ::stat(root.c_str(), &st) != 0) {
    const char* tmp = std::getenv("TMPDIR");
    root = std::string(tmp && *tmp ? tmp : "/tmp") + "/strata_test_scratch";
    ::mkdir(root.c_str(), 0755);
  }
  const std::string d = root + "/" + name;
  std::string cmd = "rm -rf '" + d + "'";
  if (std::system(cmd.c_str()) != 0) return d;
  ::mkdir(d.c_str(), 0755);
  return d;
}

}  // namespace strata_test
