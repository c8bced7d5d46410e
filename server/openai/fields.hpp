// Typed reads of one JSON object's members. Each read names the member by its full path in the request
// ("messages[1].content", "stream_options.include_usage") and the limit it broke, and throws ApiException.
// JSON null counts as absent, the way the OpenAI API treats an explicit null.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace strata {

class Fields {
 public:
  // `obj` must outlive this reader. `path` is the object's own path ("" for the body).
  Fields(const nlohmann::json& obj, std::string path);

  std::string name(const std::string& key) const;        // path of a member
  const nlohmann::json* get(const std::string& key) const;  // nullptr when absent or null

  std::optional<bool> boolean(const std::string& key) const;
  // Inclusive range; integral floats (2.0) are accepted as integers.
  std::optional<int64_t> integer(const std::string& key, int64_t lo, int64_t hi) const;
  std::optional<double> number(const std::string& key, double lo, double hi) const;
  std::optional<std::string> string(const std::string& key, size_t max_bytes) const;

 private:
  const nlohmann::json& obj_;
  std::string path_;
};

// "'temperature' must be a number, got a string"
const char* json_kind(const nlohmann::json& v);
std::string qname(const std::string& path);
// Integer value of `v` (named `path`), range-checked; throws ApiException.
int64_t integer_value(const nlohmann::json& v, const std::string& path, int64_t lo, int64_t hi);
std::string format_number(double v);

}  // namespace strata
