#include "engine/model/safetensors.hpp"

#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "engine/core/types.hpp"

namespace strata {
namespace {

// A JSON header larger than this is not a checkpoint header; refusing it bounds the parser's memory.
constexpr uint64_t kMaxHeaderBytes = uint64_t(100) << 20;

bool parse_dtype(const std::string& s, DType* out) {
  if (s == "F32") *out = DType::F32;
  else if (s == "F16") *out = DType::F16;
  else if (s == "BF16") *out = DType::BF16;
  else return false;
  return true;
}

bool as_u64(const nlohmann::json& j, uint64_t* out) {
  if (j.is_number_unsigned()) {
    *out = j.get<uint64_t>();
    return true;
  }
  if (j.is_number_integer() && j.get<int64_t>() >= 0) {
    *out = uint64_t(j.get<int64_t>());
    return true;
  }
  return false;
}

}  // namespace

std::vector<TensorView> parse_safetensors(const MappedFile& file) {
  const std::string& path = file.path();
  auto fail = [&](const std::string& problem) { return Error(path + ": " + problem); };
  if (file.size() < 8) throw fail("truncated: " + std::to_string(file.size()) + " bytes, no header length");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | file.data()[i];
  if (header_len > file.size() - 8)
    throw fail("truncated: header length " + std::to_string(header_len) + " exceeds the file's " +
               std::to_string(file.size() - 8) + " bytes after the length");
  if (header_len > kMaxHeaderBytes) throw fail("corrupt header: length " + std::to_string(header_len));

  nlohmann::json header;
  try {
    header = nlohmann::json::parse(file.data() + 8, file.data() + 8 + header_len);
  } catch (const nlohmann::json::exception& e) {
    throw fail(std::string("corrupt header: not valid JSON (") + e.what() + ")");
  }
  if (!header.is_object()) throw fail("corrupt header: not a JSON object");

  const unsigned char* base = file.data() + 8 + header_len;
  const uint64_t data_size = file.size() - 8 - header_len;
  std::vector<TensorView> views;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    if (name == "__metadata__") continue;
    const nlohmann::json& e = it.value();
    auto bad = [&](const std::string& problem) { return fail("tensor " + name + ": " + problem); };
    if (!e.is_object()) throw bad("header entry is not an object");
    if (!e.contains("dtype") || !e["dtype"].is_string()) throw bad("missing dtype");
    TensorView v;
    v.name = name;
    const std::string dt = e["dtype"].get<std::string>();
    if (!parse_dtype(dt, &v.dtype)) throw bad("unsupported dtype " + dt + " (supported: F32, F16, BF16)");
    if (!e.contains("shape") || !e["shape"].is_array()) throw bad("missing shape");
    uint64_t numel = 1;
    for (const auto& d : e["shape"]) {
      uint64_t dim;
      if (!as_u64(d, &dim)) throw bad("shape has a non-integer or negative dimension");
      if (dim > uint64_t(std::numeric_limits<int64_t>::max()) ||
          (dim != 0 && numel > std::numeric_limits<uint64_t>::max() / 8 / dim))
        throw bad("shape too large");
      numel *= dim;
      v.shape.push_back(int64_t(dim));
    }
    if (!e.contains("data_offsets") || !e["data_offsets"].is_array() || e["data_offsets"].size() != 2)
      throw bad("missing data_offsets [begin, end]");
    uint64_t begin, end;
    if (!as_u64(e["data_offsets"][0], &begin) || !as_u64(e["data_offsets"][1], &end))
      throw bad("data_offsets are not non-negative integers");
    if (begin > end) throw bad("bad offsets: begin " + std::to_string(begin) + " > end " + std::to_string(end));
    if (end > data_size)
      throw bad("bad offsets: end " + std::to_string(end) + " is past the data (" + std::to_string(data_size) +
                " bytes; file truncated?)");
    const uint64_t want = numel * dtype_size(v.dtype);
    if (end - begin != want)
      throw bad("bad offsets: " + std::to_string(end - begin) + " bytes for " + std::to_string(numel) + " " + dt +
                " elements (" + std::to_string(want) + " bytes expected)");
    v.data = base + begin;
    v.nbytes = size_t(want);
    views.push_back(std::move(v));
  }
  return views;
}

}  // namespace strata
